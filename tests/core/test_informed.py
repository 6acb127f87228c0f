"""sara-history: informed priors use only drawn outcomes, reduce to sara without history, save."""

import numpy as np
import pytest

from sara_sim import ParameterError
from sara_sim.allocator import make_collector
from sara_sim.difficulty import load_history
from sara_sim.informed import PromptHistory


class Replay:
    """Epoch-by-epoch replay of recorded histories: stream ids are (prompt, epoch); a visit draws
    without replacement from its record.  `flip_undrawn` rewrites every record's outcomes that
    were never drawn (as if the data differed only where the strategy did not look)."""

    def __init__(self, frame, epochs, seed, drawn_log=None, replay_log=None):
        self.rec = {(r.prompt_id, r.epoch): (r.correct, r.samples) for r in frame.itertuples()}
        self.pids = np.array(sorted(frame.prompt_id.unique()))
        self.epochs = epochs
        self.order_rng, self.urn_rng = np.random.default_rng(seed), np.random.default_rng(seed + 1)
        self.urns, self.drawn = {}, drawn_log if drawn_log is not None else {}
        self.replay_log = replay_log

    def stream(self):
        for e in self.epochs:
            for pid in self.order_rng.permutation(self.pids):
                if (pid, e) in self.rec:
                    yield (int(pid), e)

    def __call__(self, requests):
        out = []
        for r in requests:
            key = (r.prompt_id, r.visit)
            if self.replay_log is not None:  # serve exactly what was drawn before
                seq = self.replay_log[key]
                got = seq[len(self.drawn.get(key, [])) :][: r.n]
            else:
                if key not in self.urns:
                    c, s = self.rec[r.prompt_id]
                    self.urns[key] = list(
                        self.urn_rng.permutation(np.r_[np.ones(c, int), np.zeros(s - c, int)])
                    )
                got = [int(self.urns[key].pop()) for _ in range(r.n)]
            self.drawn.setdefault(key, []).extend(got)
            out.append(got)
        return out


def run_replay(frame, name, epochs, seed, replay_log=None, **kw):
    drawn = {}
    rep = Replay(frame, epochs, seed, drawn, replay_log)
    hist = None
    if name == "sara-history":
        hist = PromptHistory(
            rho=kw.pop("rho", 0.95),
            kappa=kw.pop("kappa", 0.5),
            explore=kw.pop("explore", 0.05),
            seed=seed,
            key=lambda v: v[0],
        )
    col = make_collector(
        name, k=8, groups=32, history=hist, epoch_size=len(rep.pids) if hist else None, **kw
    )
    stream, steps = rep.stream(), []
    while True:
        res = col.collect_step(stream, rep)
        steps.append(res)
        if res.stream_exhausted:
            break
    return steps, drawn, hist


@pytest.fixture(scope="module")
def frame(history_path):
    return load_history(history_path)


def test_informed_strategy_cannot_peek_at_undrawn_outcomes(frame):
    """Run once; then rerun serving exactly the drawn outcomes but with every record's undrawn
    outcomes changed.  A strategy that peeked at a record would decide differently."""
    epochs = range(0, 6)
    steps, drawn, hist = run_replay(frame, "sara-history", epochs, 3, rule="price")
    flipped = frame.copy()
    flipped["correct"] = flipped["samples"] - flipped["correct"]  # every record changes
    steps2, drawn2, hist2 = run_replay(
        flipped, "sara-history", epochs, 3, replay_log=drawn, rule="price"
    )
    assert drawn2 == drawn
    assert [s.groups for s in steps2] == [s.groups for s in steps]
    assert [s.abandoned for s in steps2] == [s.abandoned for s in steps]
    assert hist2.evidence == hist.evidence
    # and the evidence is exactly the discounted drawn outcomes: a prompt abandoned after 2
    # rollouts contributes 2 observations, never its record of 8
    short = [(key, seq) for key, seq in drawn.items() if 0 < len(seq) < 8]
    assert short, "some visits should have been abandoned early"


def test_reduces_to_plain_sara_without_history(frame):
    """No evidence, uniform population prior, kappa = 1, tau rule: the first step is sara's."""
    epochs = range(3, 4)
    a, _, _ = run_replay(frame, "sara", epochs, 5, tau_low=0.5)
    b, _, _ = run_replay(
        frame, "sara-history", epochs, 5, tau_low=0.5, rule="tau", kappa=1.0, explore=0.0
    )
    assert a[0].groups == b[0].groups and a[0].abandoned == b[0].abandoned
    assert a[0].rollouts == b[0].rollouts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_history_savings_vs_ds_on_shipped_histories(frame, seed):
    epochs = range(10, 31)
    cost = {}
    for name, kw in (("ds", {}), ("sara-history", {"rule": "price"})):
        steps, _, _ = run_replay(frame, name, epochs, seed, **kw)
        cost[name] = sum(s.rollouts for s in steps) / sum(s.n_effective for s in steps)
    assert cost["sara-history"] <= 0.6 * cost["ds"], cost


def test_bad_history_parameters():
    with pytest.raises(ParameterError, match="rho"):
        PromptHistory(rho=0.0)
    with pytest.raises(ParameterError, match="kappa"):
        PromptHistory(kappa=-1)
    with pytest.raises(ParameterError, match="explore"):
        PromptHistory(explore=2)
    with pytest.raises(ParameterError, match="history"):
        make_collector("sara-history", groups=4, epoch_size=10)
    with pytest.raises(ParameterError, match="epoch_size"):
        make_collector("sara-history", groups=4, history=PromptHistory())
    with pytest.raises(ParameterError, match="rule"):
        make_collector("sara", groups=4, rule="magic")
