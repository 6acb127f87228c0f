"""The strategy registry is the one list of names and defaults, and what its rows claim about each
strategy (which implementations exist, history, fixed budget) is what the code does."""

import inspect
import re
from pathlib import Path

import pytest

from real.app.run import check_strategy
from real.base import config as real_config
from real.base.config import STRATEGIES as REAL_STRATEGIES
from sara_sim.cli import replay as cli_replay
from sara_sim.cli.app import build_parser
from sara_sim.collect import collectors
from sara_sim.core import informed, registry
from sara_sim.core.errors import ParameterError
from sara_sim.core.registry import HISTORY, SARA, DSParams, SaraParams, names, row
from sara_sim.sim import simulate as sim_module
from sara_sim.sim import strategies
from sara_sim.sim.laws import parse_sim_law
from sara_sim.sim.simulate import simulate

REPO = Path(__file__).resolve().parents[2]


def test_every_list_of_names_is_a_view_of_the_registry():
    assert strategies.STRATEGIES == names("kernel")
    assert collectors.STRATEGIES == names("collector")
    assert cli_replay.REPLAY_STRATEGIES == names("replay")
    assert REAL_STRATEGIES == names("real")
    assert real_config.INFORMED == names("real", needs_history=True)
    assert strategies.ADAPTIVE == ("sara-eb", "sara-auto", "sara-history")
    assert len({r.name for r in registry.ROWS}) == len(registry.ROWS)


def test_no_module_spells_out_a_list_of_strategy_names():
    """Three or more quoted strategy names in a row, outside the registry, are a second list."""
    quoted = "|".join(re.escape(f'"{n}"') for n in names())
    run = re.compile(rf"(?:{quoted})\s*,\s*(?:{quoted})\s*,\s*(?:{quoted})")
    offenders = []
    for folder in ("sara_sim", "real"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name != "registry.py" and run.search(path.read_text()):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_defaults_are_written_once():
    opts = sim_module.OPTIONS
    assert opts["tau_low"] == SARA.tau_low and opts["max_rounds"] == SARA.max_rounds
    args = build_parser().parse_args(
        ["simulate", "--strategy", "sara", "--difficulty", "x"] + ["--k", "8"]
    )
    assert args.tau_low == SARA.tau_low
    col = collectors.make_collector("sara", groups=4)
    assert (
        (col.tau_low, col.eb_window, col.max_rounds)
        == (0.2, 4, 100)
        == (SARA.tau_low, SARA.eb_window, SARA.max_rounds)
    )
    ds = collectors.make_collector("ds", groups=4)
    assert ds.max_num_gen_batches == DSParams().max_num_gen_batches and ds.gen_batch_size == 4
    assert informed.INFORMED_DEFAULTS == {
        "rho": HISTORY.rho,
        "kappa": HISTORY.kappa,
        "explore": HISTORY.explore,
        "max_skip": HISTORY.max_skip,
        "rule": HISTORY.rule,
    }
    assert informed.SELECTOR_RATIO == HISTORY.ratio
    h = informed.PromptHistory()
    assert (h.rho, h.kappa, h.explore, h.max_skip) == (
        HISTORY.rho,
        HISTORY.kappa,
        HISTORY.explore,
        HISTORY.max_skip,
    )
    hist = strategies.default_params("sara-history", 8)
    assert all(hist[key] == val for key, val in informed.INFORMED_DEFAULTS.items())
    assert inspect.signature(informed.PromptHistory.plan).parameters["tau_low"].default is (
        inspect.Parameter.empty
    )


def test_make_collector_takes_the_parameter_object_or_its_fields():
    by_object = collectors.make_collector("sara", groups=4, params=SaraParams(tau_low=0.3))
    by_name = collectors.make_collector("sara", groups=4, tau_low=0.3)
    assert by_object.params == by_name.params == SaraParams(tau_low=0.3)
    mixed = collectors.make_collector("sara", groups=4, params=SaraParams(probe=2), tau_low=0.4)
    assert mixed.params == SaraParams(probe=2, tau_low=0.4)
    ds = collectors.make_collector("ds", groups=4, tau_low=0.3, gen_batch_size=3)  # one dict
    assert ds.params == DSParams(gen_batch_size=3)  # tau_low is no ds knob: ignored
    with pytest.raises(ParameterError, match="params"):
        collectors.make_collector("sara", groups=4, params=DSParams())
    with pytest.raises(ParameterError, match="tau_lo"):
        collectors.make_collector("sara", groups=4, tau_lo=0.3)
    with pytest.raises(TypeError):  # keyword-only: no 18 positional arguments
        collectors.make_collector("sara", 8, 4)


@pytest.mark.parametrize("name", names("collector"))
def test_collector_rows_say_what_the_collectors_do(name):
    r = row(name)
    with_history = {"epoch_size": 10}
    if r.needs_history:
        with pytest.raises(ParameterError, match="history|epoch_size|selector"):
            collectors.make_collector(name, groups=4)
    collectors.make_collector(name, groups=4, **with_history)  # prompt ids: a finite task
    if "collector" in r.fixed_budget:
        col = collectors.make_collector(name, budget=64, **with_history)
        assert col.budget == 64
    else:
        with pytest.raises(ParameterError, match="budget"):
            collectors.make_collector(name, groups=4, budget=64, **with_history)
    assert (r.selector is not None) == (r.family == "sara-select")


def test_kernel_rows_say_what_the_simulator_does():
    law = parse_sim_law("beta:0.5,0.5")
    for name in names():
        r = row(name)
        if "kernel" not in r.implements:
            with pytest.raises(ParameterError, match="--strategy"):
                simulate(name, law, k=4, groups=4, steps=1, replicates=1)
            continue
        if "kernel" in r.fixed_budget:
            res = simulate(name, law, k=4, budget=32, steps=1, replicates=1)
            assert res.frame["rollouts"].iloc[0] <= 32
        else:
            with pytest.raises(ParameterError, match="--budget"):
                simulate(name, law, k=4, budget=32, steps=1, replicates=1)


def test_unknown_names_list_the_choices():
    with pytest.raises(ParameterError, match="choose from uniform, ds, ds-verl3n, sara") as e:
        row("nope", "real", "--strategy")
    assert str(e.value).startswith("--strategy: unknown strategy 'nope'")
    assert check_strategy("sara-dps") == "sara-dps"
