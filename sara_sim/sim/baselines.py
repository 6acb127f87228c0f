"""Savings against the strongest baseline, and where they come from (docs/design.md §5).

DS streamed — dynamic sampling without generation batches: every group it samples is used, so
it pays k / P(mixed) rollouts per effective group — is the reference a saving is measured
against; DS by rounds (a generation batch of N prompts, or verl's 3N: ``ds-verl3n``) stands
beside it, and the saving of a SARA strategy over DS by rounds splits along the chain

    DS by rounds -> DS streamed -> sara -> sara-auto -> sara-history
      streaming     the stopping   priors and   per-prompt
                    rule           plans        history

each link's share being its drop in cost over DS by rounds' cost (the shares add up to the
strategy's saving).  A strategy missing from a run merges its two links into one.

>>> CHAIN[2:]
('sara', 'sara-auto', 'sara-history')
>>> costs = {"ds rounds": 20.0, "ds stream": 16.0, "sara": 15.5, "sara-auto": 14.0}
>>> [(x["source"], round(x["share"], 3)) for x in decomposition(costs)]
[('streaming', 0.2), ('the stopping rule', 0.025), ('priors and plans', 0.075)]
"""

from ..core.registry import ROWS

DS_ROUNDS, DS_STREAM, DS_3N = "ds rounds", "ds stream", "ds-verl3n rounds"
# the chain, and the source of each link: the registry's rows that name a saving, in its order
CHAIN = (DS_ROUNDS, DS_STREAM, *(r.name for r in ROWS if r.saving))
SOURCES = ("streaming", *(r.saving for r in ROWS if r.saving))


def decomposition(costs):
    """[{source, from, to, share}] along ``CHAIN`` over the names present in `costs` (a cost
    per effective group each: rollouts, tokens or wall); share = (cost_from - cost_to) / DS by
    rounds' cost.  [] without DS by rounds (no reference) or with fewer than two links' ends;
    a cost that is None or not finite ends the chain there (undefined beyond)."""
    ref = costs.get(DS_ROUNDS)
    if not _defined(ref) or ref <= 0:
        return []
    present = [i for i, name in enumerate(CHAIN) if name in costs]
    out = []
    for a, b in zip(present, present[1:]):
        lo, hi = costs[CHAIN[a]], costs[CHAIN[b]]
        if not (_defined(lo) and _defined(hi)):
            break
        out.append(
            {
                "source": " + ".join(SOURCES[a:b]),
                "from": CHAIN[a],
                "to": CHAIN[b],
                "share": (lo - hi) / ref,
            }
        )
    return out


def ratio(cost, ref):
    """cost / ref, None where either is undefined or ref is not > 0."""
    if not (_defined(cost) and _defined(ref)) or ref <= 0:
        return None
    return cost / ref


def _defined(x):
    return x is not None and x == x and abs(x) != float("inf")


def decomposition_text(parts):
    """Lines of a decomposition (``decomposition``'s rows): each link's share of DS by rounds'
    cost, then the total."""
    lines = [
        f"  {p['source']:<30}{p['from']:>10} -> {p['to']:<13}{p['share']:>7.1%}" for p in parts
    ]
    if parts:
        total = sum(p["share"] for p in parts)
        lines.append(f"  {'total':<30}{parts[0]['from']:>10} -> {parts[-1]['to']:<13}{total:>7.1%}")
    return lines
