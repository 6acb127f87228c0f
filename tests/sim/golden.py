"""Golden numbers: every simulator, theory and collector result the project reports, exactly.

``python -m tests.sim.golden --write`` records them in ``golden_sim.json`` (one JSON line per
case; floats as their ``repr``, which round-trips exactly); ``test_golden.py`` recomputes every
case and compares: exactly, except floats to 1e-12 relative (``same``: numpy's sums round by
the CPU's vector width).  A refactor that should change no number
must leave this file unchanged; a change that does move a number regenerates only the affected
cases (``--write --only KEY ...``) and says why, with a test that proves the new value right.

Grid: every simulator strategy x laws (a fresh-prompt source, a Beta/point mixture, a finite pool
revisited over epochs so sara-history has evidence, a drifting pool, the DeepScaleR history) x
k in {4, 8, 16, 128} x two seeds, fixed-budget runs of the strategies that have one, a few schedule
variants with their decision logs; the exact theory and Bayes-optimal plans; and the Python
collectors (``make_collector``) on seeded finite-pool scenarios, capacity-limited so that prompts
are carried across steps and visits of one prompt overlap.

Regenerated since the first recording (and why):
* the 7 ``sim sara-history`` cases on revisited pools (``beta:1,2 pool=24``, ``drift``) whose
  numbers moved: the kernel now dates a visit's outcomes by the epoch it was pulled in, as the
  collector does, so a visit that ends after a later visit of its prompt is merged at its age
  (``schedule.observe``).  Dated by the epoch it ended in, the refactored kernel reproduced the
  recorded numbers bit for bit; ``test_identity.py`` (revisited pool, out-of-order observations
  included) shows the kernel now decides exactly as the collector.
* the 180 cases with an empirical-Bayes prior fit (sim sara-eb / sara-auto / sara-history,
  collect sara-eb / sara-auto / sara-history / sara-mopps / sara-dps): the fits recorded here
  depended on the CPU — OpenBLAS picks its kernels per CPU, and the collectors' L-BFGS-B and the
  simulator's ``np.linalg.solve`` went through them (an AMD EPYC moved the collectors' priors by
  1e-5 and sara-history's decisions from the first step).  One BLAS-free solver with exact sums
  (``core/eb_fit.py``) now fits both; its result is checked against Nelder-Mead in its doctest,
  and ``fit_prior_counts`` equals ``fit_beta_binomial`` to the bit (doctest).  Recorded with
  OpenBLAS forced to SkylakeX, then checked with Zen, and with Haswell plus numpy's AVX-512
  switched off: the same bits for these cases.
* the 170 cases that gained a key, every number unchanged (checked by comparing them with the
  new keys removed): ``sim sara-auto`` and ``sim sara-history`` (their parameter ``priced_in``,
  "rollouts", in the config) and every ``collect`` case (``StepResult.lengths``, None: the
  lengths a plan priced in tokens was priced at).
"""

import argparse
import dataclasses
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np

from sara_sim.core.difficulty import builtin_history

GOLDEN = Path(__file__).with_name("golden_sim.json")
# by its path (not its built-in name): the keys and recorded laws name the file, as they always did
HISTORY = builtin_history("deepscaler")
KS = (4, 8, 16, 128)
SEEDS = (0, 7)
SIM_LAWS = (
    ("beta:0.5,0.5", 0),
    ("mix:0.5*beta:0.3,0.9+0.3*point:0+0.2*point:1", 0),
    ("beta:1,2", 24),  # a finite pool revisited pass after pass: history strategies learn
    ("drift:1,3,0.05,0.5,24", 0),
    (f"history:{HISTORY}", 0),
)
BUDGETED = ("uniform", "sara", "sara-eb", "sara-auto", "speed")
VARIANTS = (  # schedule knobs of the SARA family, with decision logs
    ("sara", {"probe": 2, "increment": 1, "capacity": 40}),
    ("sara", {"tau_low": 0.4, "tau_high": 0.95, "prior": (2.0, 2.0)}),
    ("sara-history", {"rule": "tau", "kappa": 1.0, "explore": 0.0}),
    ("sara-history", {"capacity": 24, "max_skip": 0}),
    ("sara-auto", {"eb_window": 2}),
)


def enc(x):
    """JSON-able, exact: floats by repr, numpy scalars / arrays unpacked."""
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):  # repr round-trips exactly; nan / inf as strings
        return float(x) if math.isfinite(x) else repr(float(x))
    if isinstance(x, np.ndarray):
        return [enc(v) for v in x.tolist()]
    if isinstance(x, dict):
        return {str(key): enc(v) for key, v in x.items()}
    if isinstance(x, list | tuple):
        return [enc(v) for v in x]
    if x is None or isinstance(x, str):
        return x
    return str(x)


def _law(spec):
    from sara_sim.sim.laws import parse_sim_law

    return parse_sim_law(spec, "0-3" if spec.startswith("history:") else None)


def _sim(strategy, spec, pool, k, seed, **kw):
    from sara_sim.core.errors import ParameterError
    from sara_sim.sim.simulate import simulate

    try:
        res = simulate(
            strategy, _law(spec), k=k, groups=6, steps=5, replicates=2, seed=seed, pool=pool, **kw
        )
    except ParameterError as e:
        return {"error": str(e)}
    f = res.frame
    out = {"frame": {c: enc(f[c].to_numpy()) for c in f.columns if c != "strategy"}}
    # the history file's folder depends on the checkout: record the law by its file name
    law = str(res.config.get("law", "")).replace(f"{HISTORY.parent}/", "")
    out["config"] = enc({**res.config, **({"law": law} if "law" in res.config else {})})
    if res.events is not None:
        out["events"] = enc([e for e in res.events])
    return out


def sim_cases():
    from sara_sim.sim.strategies import STRATEGIES

    spec0, pool0 = SIM_LAWS[0]
    for strategy, (spec, pool), k, seed in itertools.product(STRATEGIES, SIM_LAWS, KS, SEEDS):
        yield (
            f"sim {strategy} {spec.split('/')[-1]} pool={pool} k={k} seed={seed}",
            lambda a=(strategy, spec, pool, k, seed): _sim(*a),
        )
    for strategy, (spec, pool), k in itertools.product(BUDGETED, SIM_LAWS[:3], KS):
        yield (
            f"sim {strategy} {spec} pool={pool} k={k} budget={5 * k}",
            lambda a=(strategy, spec, pool, k): _sim(*a, 1, budget=5 * a[3]),
        )
    for (strategy, kw), (spec, pool), k in itertools.product(VARIANTS, SIM_LAWS[1:3], (8, 16)):
        key = f"sim {strategy} {spec} pool={pool} k={k} {sorted(kw.items())}"
        yield key, lambda a=(strategy, spec, pool, k), kw=kw: _sim(*a, 3, log_events=400, **kw)


def _theory(spec, k):
    from sara_sim.core.beta import p_eff
    from sara_sim.core.errors import ParameterError
    from sara_sim.core.optimal import bayes_optimal
    from sara_sim.core.theory import best_tau, sequential_law, tau_breakpoints

    law = _law(spec)
    out = {"breakpoints": enc(tau_breakpoints(k, (1.0, 1.0)))}
    n, s = np.meshgrid(np.arange(k + 1), np.arange(k + 1))
    ok = s <= n
    out["p_eff"] = enc(p_eff(n[ok], s[ok], k, 0.6, 1.3))
    try:
        out["tau"] = enc(sequential_law(law, k, 0.2))
        out["tau_sched"] = enc(sequential_law(law, k, 0.35, 0.9, (0.5, 1.5), probe=2, increment=1))
        out["optimal"] = enc(bayes_optimal(law, k))
        if k <= 16:
            out["best_tau"] = enc(best_tau(law, k))
    except ParameterError as e:
        out["error"] = str(e)
    return out


def theory_cases():
    specs = [s for s, _ in SIM_LAWS if not s.startswith("drift")]
    for spec, k in itertools.product(specs, KS):
        yield f"theory {spec.split('/')[-1]} k={k}", lambda a=(spec, k): _theory(*a)


def _collect(name, k, seed, pool, steps, **kw):
    """A seeded finite pool revisited epoch after epoch (ids epoch * pool + index)."""
    from sara_sim.collect.collectors import make_collector
    from sara_sim.core import registry

    rng = np.random.default_rng(seed)
    rate = rng.beta(0.4, 0.6, pool)
    hist = name in registry.names("collector", needs_history=True)
    col = make_collector(name, k=k, seed=seed, epoch_size=pool if hist else None, **kw)

    def prompts():
        for epoch in itertools.count():
            for i in rng.permutation(pool):
                yield epoch * pool + int(i)

    def sample(requests):
        return [[int(x) for x in rng.random(r.n) < rate[r.prompt_id % pool]] for r in requests]

    it = prompts()
    out = []
    for _ in range(steps):
        res = dataclasses.asdict(col.collect_step(it, sample))
        out.append(enc(res))
    return out


def collector_cases():
    from sara_sim.collect.collectors import STRATEGIES

    for name, k, seed in itertools.product(STRATEGIES, (4, 8, 16), (0, 1)):
        kw = {"groups": 6}
        if name.startswith("sara"):
            kw["capacity"] = 3 * k  # prompts stay open across steps: visits of a prompt overlap
        yield (
            f"collect {name} k={k} seed={seed}",
            lambda a=(name, k, seed), kw=kw: _collect(*a, 10, 8, **kw),
        )
    for name, k in itertools.product(("sara", "sara-eb", "sara-auto", "sara-history"), (4, 8)):
        kw = (
            {"budget": 6 * k, "probe": 1, "increment": 1}
            if name != "sara-history"
            else {"groups": 5, "capacity": 2 * k, "tau_low": 0.35, "max_rounds": 7}
        )
        yield (
            f"collect {name} k={k} {sorted(kw.items())}",
            lambda a=(name, k), kw=kw: _collect(*a, 3, 12, 10, **kw),
        )


def all_cases():
    yield from sim_cases()
    yield from theory_cases()
    yield from collector_cases()


def compute(keys=None):
    cases = all_cases()
    return {key: json.loads(json.dumps(fn())) for key, fn in cases if keys is None or key in keys}


REL = 1e-12  # floats may differ by this much (relative): see same()


def same(got, want, rel=REL):
    """got equals want, every float within `rel` (relative) and everything else exactly.

    Why not bit for bit: numpy sums in an order that depends on the CPU's vector width (AVX-512
    vs AVX2), which moves the exact theory's last digits (seen: 1e-14).  Nothing that decides is
    left machine-dependent — the prior fits sum exactly and call no BLAS (core/eb_fit.py) — so
    counts, decisions and plans still compare exactly, and 1e-12 is far below any real change.

    >>> same({"x": [1.0, 2]}, {"x": [1.0 + 1e-15, 2]}), same([1.0], [1.0 + 1e-9]), same(2, 2.5)
    (True, False, False)
    """
    if isinstance(got, float) and isinstance(want, float):
        return got == want or abs(got - want) <= rel * max(abs(got), abs(want))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k], rel) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same(a, b, rel) for a, b in zip(got, want))
    return type(got) is type(want) and got == want


def load():
    with open(GOLDEN) as fh:
        return dict(json.loads(line) for line in fh)


def write(cases, path=GOLDEN):
    with open(path, "w") as fh:
        for key, value in cases.items():
            fh.write(json.dumps([key, value], sort_keys=True) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="record every case in golden_sim.json")
    ap.add_argument(
        "--only", nargs="*", help="with --write: regenerate only the cases with these keys"
    )
    args = ap.parse_args(argv)
    if args.only:
        cases = load()
        new = compute(set(args.only))
        missing = set(args.only) - set(new)
        if missing:
            sys.exit(f"unknown cases: {sorted(missing)}")
        cases.update(new)
    else:
        cases = compute()
    if args.write:
        write(cases)
    old = load() if GOLDEN.exists() and not args.write else None
    changed = [key for key in cases if old is not None and not same(cases[key], old.get(key))]
    print(f"{len(cases)} cases" + (f", {len(changed)} differ from {GOLDEN.name}" if old else ""))
    for key in changed:
        print("  differs:", key)
    return 0 if not changed else 1


if __name__ == "__main__":
    sys.exit(main())
