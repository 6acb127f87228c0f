"""In the real loop: DS as verl's DAPO run scripts set it (`ds-verl3n`: a
generation batch of 3N prompts) and SARA without carrying surplus and open groups into the next
step (`--no-carry`; NAME+no-carry in a compare or the learning benchmark). Bad combinations are
one line before any engine starts. (The toy-size learning benchmark running all four side by
side: tests/real/test_real_learning_bench.py.)"""

from real.app.cli import build_parser, main, run_config
from real.app.run import check_config


def _bad(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (argv, err)
    return err


def test_no_carry_on_a_strategy_that_carries_nothing_is_one_line(tmp_path, capsys):
    out = ["--out", str(tmp_path / "o")]
    err = _bad(["validate", "--strategy", "ds", "--no-carry", *out], capsys)
    assert err.startswith("sara-real: error: --no-carry: ds carries nothing to drop")
    err = _bad(["compare", "--strategies", "ds,uniform+no-carry", *out], capsys)
    assert "--strategies: uniform+no-carry: uniform carries nothing" in err
    err = _bad(["compare", "--strategies", "ds,sara", "--no-carry", *out], capsys)
    assert "--no-carry: ds carries nothing" in err and "NAME+no-carry" in err
    err = _bad(["compare", "--strategies", "sara+nocarry", *out], capsys)
    assert "--strategies: sara+nocarry: suffixes are +no-carry, +stream, +rounds, +tokens" in err
    assert not (tmp_path / "o").exists()


def test_the_flags_reach_the_collectors(tmp_path):
    p = build_parser()
    for name in ("sara", "sara-dps"):
        argv = ["validate", "--strategy", name, "--no-carry", "--task-size", "16"]
        col = check_config(run_config(p.parse_args([*argv, "--out", str(tmp_path / name)])))
        assert col.collector.params.carry is False and col.collector.rc.carry is False
    a = p.parse_args(
        ["validate", "--strategy", "ds-verl3n", "--groups", "5", "--out", str(tmp_path / "v")]
    )
    assert check_config(run_config(a)).collector.gen_batch_size == 15  # verl's 3N
    a = p.parse_args(["validate", "--strategy", "ds", "--groups", "5", "--out", str(tmp_path)])
    assert check_config(run_config(a)).collector.gen_batch_size == 5


def test_no_carry_drops_what_sara_carries():
    """The run's collector (built from the config as a run builds it) on the simulator's Beta
    law: carrying, sara takes surplus groups or open prompts into later steps; with carry off
    the same draws leave nothing for the next step and count the dropped rollouts as waste."""
    import numpy as np

    from real.base.config import StrategyConfig, build_collector

    def steps(carry):
        col = build_collector("sara", StrategyConfig(carry=carry), k=8, groups=4, seed=0)
        rng, rate = np.random.default_rng(0), {}

        def sample(requests):
            return [
                [int(x) for x in rng.random(r.n) < rate.setdefault(r.prompt_id, rng.beta(0.5, 0.5))]
                for r in requests
            ]

        prompts = iter(range(10**6))
        return [col.collect_step(prompts, sample) for _ in range(6)]

    kept, dropped = steps(True), steps(False)
    assert sum(r.carried + r.carried_open for r in kept) > 0
    assert sum(r.waste for r in kept) == 0
    assert all(r.carried == 0 and r.carried_open == 0 for r in dropped)
    assert sum(r.waste for r in dropped) > 0
    assert all(r.n_effective >= 4 for r in kept + dropped)
