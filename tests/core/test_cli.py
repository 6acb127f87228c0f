"""`sara-sim theory|optimal`: the JSON contract and one-line errors."""

import json
import subprocess
import sys

import pytest

from sara_sim.cli.app import main


@pytest.fixture
def run_cli(capsys):
    """(exit status, stdout, stderr) of `sara-sim ARGS`, run in this process (the console
    script's own process-level path: tests/sim/test_cli_bad_input.py's subprocess cases)."""

    def run(*args):
        capsys.readouterr()
        rc = main(list(args))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


THEORY_KEYS = {
    "rollouts_per_prompt",
    "p_commit",
    "p_abandon",
    "p_false_abandon",
    "p_mixed",
    "cost_per_effective_group",
    "ds_cost_per_effective_group",
    "savings_vs_ds",
    "difficulty",
    "k",
    "tau_low",
    "prior",
}


def test_theory_json(capsys):
    assert (
        main(["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", "0.3", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert THEORY_KEYS <= set(out)
    assert out["prior"] == [1.0, 1.0]
    assert out["rollouts_per_prompt"] == pytest.approx(8 - 2 * 2 / 7)


def test_theory_history_and_optimal_json(capsys, history_path):
    spec = f"history:{history_path}"
    assert (
        main(["theory", "--difficulty", spec, *"--epoch 0 --k 8 --tau-low 0.5 --json".split()]) == 0
    )
    th = json.loads(capsys.readouterr().out)
    assert th["p_mixed"] == pytest.approx(1 - 0.3636 - 0.0793, abs=1e-3)  # README of the data
    assert main(["optimal", "--difficulty", spec, "--epoch", "0", "--k", "8", "--json"]) == 0
    opt = json.loads(capsys.readouterr().out)
    keys = {
        "bayes_optimal_cost_per_effective_group",
        "abandon_after_fail",
        "abandon_after_pass",
        "best_tau_low",
        "best_tau_cost_per_effective_group",
    }
    assert keys <= set(opt)
    assert opt["bayes_optimal_cost_per_effective_group"] <= opt["best_tau_cost_per_effective_group"]
    assert opt["best_tau_cost_per_effective_group"] <= th["ds_cost_per_effective_group"]


def test_readable_table(run_cli):
    rc, out, err = run_cli("optimal", "--difficulty", "beta:0.3,0.3", "--k", "16")
    assert rc == 0 and "bayes_optimal_cost_per_effective_group" in out and not err


@pytest.mark.parametrize(
    "args, name",
    [
        (["theory", "--difficulty", "beta:1,1", "--k", "1", "--tau-low", "0.2"], "--k"),
        (["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", "1.2"], "--tau-low"),
        (["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", "-0.1"], "--tau-low"),
        (
            ["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", ".2", "--prior", "0,1"],
            "--prior",
        ),
        (["theory", "--difficulty", "beta:0,1", "--k", "8", "--tau-low", "0.2"], "--difficulty"),
        (["theory", "--difficulty", "gamma:1", "--k", "8", "--tau-low", "0.2"], "--difficulty"),
        (
            ["theory", "--difficulty", "history:/no/such.csv", "--k", "8", "--tau-low", ".2"],
            "--difficulty",
        ),
        (["optimal", "--difficulty", "beta:1,1", "--k", "x"], "--k"),
        (
            ["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", ".2", "--epoch", "1"],
            "--epoch",
        ),
    ],
)
def test_bad_input_one_line(run_cli, args, name):
    rc, out, err = run_cli(*args)
    assert rc == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "Traceback" not in err, err


def test_malformed_history_and_k_above_samples(run_cli, tmp_path, history_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_id,epoch,correct\n1,0,3\n")
    rc, _, err = run_cli("theory", "--difficulty", f"history:{bad}", "--k", "4", "--tau-low", ".2")
    assert rc == 2 and "columns" in err and len(err.strip().splitlines()) == 1
    bad.write_text("prompt_id,epoch,correct,samples\n1,0,9,8\n")
    rc, _, err = run_cli("theory", "--difficulty", f"history:{bad}", "--k", "4", "--tau-low", ".2")
    assert rc == 2 and "correct <= samples" in err
    rc, _, err = run_cli(
        "theory", "--difficulty", f"history:{history_path}", "--k", "9", "--tau-low", ".2"
    )
    assert rc == 2 and err.startswith("sara-sim: error: --k")


def test_replay_json_ranks_informed_strategies(capsys, run_cli, history_path):
    argv = ["replay", "--history", str(history_path), "--epochs", "40-43", "--seeds", "1"]
    assert main([*argv, "--strategies", "sara,sara-history", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [r["strategy"] for r in out["rows"]]
    assert set(names) == {"ds", "sara", "sara-history"}  # ds added as the reference
    costs = [r["cost_per_effective_group"] for r in out["rows"]]
    assert costs == sorted(costs)
    row = out["rows"][names.index("sara-history")]
    assert row["savings_vs_ds"] > 0.3 and 0 <= row["starved_learnable_visit_share"] <= 1
    rc, _, err = run_cli(*argv, "--strategies", "nope")
    assert rc == 2 and "--strategies" in err


def test_a_reader_that_goes_away_is_not_an_error():
    """`sara-sim ... | head -1`: the closed pipe ends the program quietly (no error line, no
    traceback), with the exit status of a program killed by SIGPIPE. 4 MB of output: more than
    any pipe buffer holds, so the write really meets the closed pipe."""
    code = (
        "import sys; from sara_sim.core.files import run_cli; "
        "sys.exit(run_cli('sara-sim', lambda: print('x' * 4_000_000)))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    first = proc.stdout.read(10)
    proc.stdout.close()  # the reader leaves before the program has written everything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and first == b"x" * 10, (first, err)
    assert err == "", err
