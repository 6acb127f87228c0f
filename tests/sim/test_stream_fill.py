"""A streamed step's fill knob: ``rc.overprovision`` scales the stream's probe quota
to over x the missing groups, tapered as the step fills (``stream_plan._wanted``) — the plan's
count exactly, the step's
invariants under the training loop's "fresh" boundary, a fuller engine on the engine model, and
its flags (``sara-sim wallclock``)."""

import math

import pytest

from sara_sim.cli.app import main
from sara_sim.collect.collectors import make_collector
from sara_sim.collect.stream import FLY, _with_fly
from sara_sim.core.difficulty import parse_law
from sara_sim.core.rounds import C_WANT
from sara_sim.core.schedule import yield_probes
from sara_sim.core.stream_plan import plan_stream
from sara_sim.sim.stream import Live, stream_driver
from sara_sim.sim.wallclock import EngineConfig, lognormal_lengths
from sara_sim.sim.wallclock_run import OutcomeSource, Setup, run_strategy

SETUP = Setup(EngineConfig(0.01, 0.001, 0.02, 128), lognormal_lengths(200, 350, 0.5))


@pytest.mark.parametrize("over", [1.0, 1.5, 2.0, 3.0])
def test_the_first_plan_probes_for_over_x_the_missing_groups(over):
    col = make_collector("sara", k=8, groups=32, seed=0, overprovision=over)
    sm = _with_fly(col.rounds)  # nothing open: the step's first plan
    assert plan_stream(sm, col.rc, FLY, 256, False)
    want = yield_probes(sm.rates, col.rc.tau_low, 32 * over, 0)
    assert sm.cnt[C_WANT] == want == math.ceil(32 * over / (1.0 - col.rc.tau_low))


@pytest.mark.parametrize("over", [1.0, 1.5, 3.0])
@pytest.mark.parametrize("done", [0, 16, 31])
def test_the_extra_probes_taper_as_the_step_fills(over, done):
    """(over - 1) x the missing groups, tapered by the share still missing: x over at the step's
    start, about x 1 at its end (few extra prompts left for the step's end to drop)."""
    from sara_sim.core.rounds import C_GROUPS

    col = make_collector("sara", k=8, groups=32, seed=0, overprovision=over)
    sm = _with_fly(col.rounds)
    sm.cnt[C_GROUPS] = done
    assert plan_stream(sm, col.rc, FLY, 256, False)
    missing = 32 - done
    wanted = missing + (over - 1.0) * missing * missing / 32
    assert sm.cnt[C_WANT] == yield_probes(sm.rates, col.rc.tau_low, wanted, 0)
    assert sm.cnt[C_WANT] == math.ceil(wanted / (1.0 - col.rc.tau_low))


def _drive(name, over, steps=6, groups=12, seed=0):
    law = parse_law("beta:0.6,0.6")
    src = OutcomeSource(law, seed, pool=4096)
    col = make_collector(
        name, k=8, groups=groups, seed=seed, epoch_size=src.pool, overprovision=over
    )
    live = Live(SETUP, src, seed)
    drv = stream_driver(col, live, SETUP.engine.max_num_seqs, "fresh")
    prompts = src.prompts()
    return live, [(drv.collect_step(prompts), list(col.group_visits)) for _ in range(steps)]


@pytest.mark.parametrize("name", ["sara", "sara-auto"])
@pytest.mark.parametrize("over", [1.5, 3.0])
def test_an_overprovisioned_fresh_stream_commits_its_groups_once_each(name, over):
    live, steps = _drive(name, over)
    seen = set()
    for res, visits in steps:
        assert len(res.groups) == 12 and res.n_effective == 12 and not res.capped
        for _pid, r in res.groups:
            assert len(r) == 8 and 0 < sum(r) < 8
        # "fresh": nothing is in flight between steps, each group is one visit, used once
        assert live.engine.inflight == 0
        assert len(set(visits)) == 12 and not seen & set(visits)
        seen |= set(visits)
    eng = live.engine
    assert eng.tokens == eng.slot_iterations  # every token generated is counted once
    assert sum(res.rollouts for res, _ in steps) == len(eng.length)


def test_overprovision_keeps_a_fresh_stream_fuller_and_pays_for_it_in_rollouts():
    law = parse_law("beta:0.6,0.6")
    kw = {"k": 8, "groups": 32, "steps": 8, "seed": 2, "schedule": "stream", "boundary": "fresh"}
    base = run_strategy(law, "sara", SETUP, **kw)
    over = run_strategy(law, "sara", SETUP, overprovision=2.0, **kw)
    assert over["time_utilisation"] > base["time_utilisation"]
    assert over["rollouts_per_effective_group"] > base["rollouts_per_effective_group"]


WC = ["wallclock", "--difficulty", "beta:0.5,0.5", "--steps", "2", "--groups", "4",
      "--schedule", "stream", "--strategies", "sara", "--max-num-seqs", "32"]  # fmt: skip


def test_the_cli_streams_overprovisioned_with_the_fresh_boundary(capsys):
    assert main([*WC, "--boundary", "fresh", "--overprovision", "2"]) == 0
    out = capsys.readouterr().out
    table, _, refs = out.partition("against DS streamed")
    assert "streamed (fresh)" in out and table.count("\nsara ") == 1 and refs.count("\nsara ") == 1


@pytest.mark.parametrize("value", ["0.99", "101", "inf"])
def test_a_bad_stream_overprovision_is_one_line_naming_the_flag(capsys, value):
    assert main([*WC, "--overprovision", value]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1 and "--overprovision" in lines[0], lines


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--over", "0.5"], "--over"),
        (["--over", "1,x"], "--over"),
        (["--over", ""], "--over"),
        (["--seeds", "0"], "--seeds"),
        (["--run", "/nonexistent.json"], "--run"),
    ],
)
def test_stream_fill_bad_input_is_one_line_naming_the_flag(script, capsys, argv, flag):
    stream_fill = script("benchmarks/investigations/stream_fill/stream_fill.py")

    assert stream_fill.main(argv) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1 and flag in lines[0], lines


def test_stream_fill_sweeps_the_knob_on_a_run_s_laws(script, capsys):
    """benchmarks/investigations/stream_fill/stream_fill.py on a toy run's laws: DS by rounds is
    the reference (1.000), one row per SARA stream and knob value."""
    stream_fill = script("benchmarks/investigations/stream_fill/stream_fill.py")

    prompts = [[c % 5, 4] for c in range(40)]
    lengths = [[r, 10 + 20 * (1 - r)] for c, _ in prompts for r in [1] * c + [0] * (4 - c)]
    meta = {"k": 4, "groups": 2, "steps": 2, "max_num_seqs": 16}
    out = stream_fill.sweep(meta, {"law": {"prompts": prompts, "lengths": lengths}}, [1.0, 2.0], 1)
    assert list(out) == [
        ("ds rounds", 1.0),
        ("ds stream", 1.0),
        ("sara stream", 1.0),
        ("sara stream", 2.0),
        ("sara-auto stream", 1.0),
        ("sara-auto stream", 2.0),
    ]
    stream_fill.table(out)
    lines = capsys.readouterr().out.splitlines()
    cells = lines[1].split()
    assert len(lines) == 1 + len(out) and cells[:3] == ["ds", "rounds", "1"] and cells[4] == "1.000"
