"""Every `sara-sim` subcommand against many bad values: exit 2, nothing on stdout, exactly one line
on stderr that names the flag, no traceback — and a refused request never starts its work.

In-process through ``sara_sim.cli.app.main`` (fast), plus a few real subprocess runs of the CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sara_sim.cli.app import join_negative_values, main

REPO = Path(__file__).resolve().parents[2]
HISTORY = "deepscaler"  # the histories shipped in sara_sim/data, by their built-in name
TH = ["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", "0.2"]
OPT = ["optimal", "--difficulty", "beta:0.3,0.3", "--k", "8"]
SIM = ["simulate", "--strategy", "sara", "--difficulty", "beta:1,1", "--k", "8", "--steps", "2"]
CMP = ["compare", "--difficulty", "beta:1,1", "--k", "8", "--steps", "2"]
REP = ["replay", "--history", HISTORY, "--epochs", "0-1"]


def _with(base, flag, value):
    """base with `flag value` set (replaced when base has it)."""
    argv = list(base)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        return argv
    return [*argv, flag, value]


BAD = [  # (argv, the flag the one line must name)
    # theory: integers, finite floats, ranges, priors, laws, schedule, resource bound
    *[(_with(TH, "--k", v), "--k") for v in ("1", "2.5", "1e20", "10" * 10, "-3", "true", "")],
    (_with(TH, "--k", "100000000"), "--k"),  # O(k) exact theory: refused above ~5e6
    (_with(TH, "--k", "100000") + ["--increment", "1"], "--increment"),  # 2e5 schedule rounds
    *[(_with(TH, "--tau-low", v), "--tau-low") for v in ("nan", "inf", "-0.1", "1.5", "abc")],
    *[(_with(TH, "--tau-high", v), "--tau-high") for v in ("0.1", "nan", "2")],
    *[(_with(TH, "--prior", v), "--prior") for v in ("-1,-1", "1", "nan,1", "inf,1", "0,1")],
    ([*TH, "--prior=-1,-1"], "--prior"),
    *[
        (_with(TH, "--difficulty", v), "--difficulty")
        for v in (
            "beta:-1,1",
            "beta:nan,1",
            "beta:1",
            "beta:inf,1",
            "mix:inf*beta:1,1+1*beta:2,2",
            "mix:0*beta:1,1",
            "mix:nan*beta:1,1",
            "point:2",
            "point:nan",
            "bogus:1",
            "history:/tmp",
            "history:/no/such.csv",
        )
    ],
    (_with(TH, "--probe", "9"), "--probe"),
    (_with(TH, "--probe", "-1"), "--probe"),
    (_with(TH, "--increment", "2.5"), "--increment"),
    (_with(TH, "--epoch", "0"), "--epoch"),
    (TH[:-2], "--tau-low"),  # missing required flag
    # optimal: k^2 best-tau search refused above ~14000
    (_with(OPT, "--k", "100000"), "--k"),
    (_with(OPT, "--k", "1"), "--k"),
    (_with(OPT, "--prior", "0,0"), "--prior"),
    # simulate: sizes, seeds, tokens, strategy parameters, resource bounds
    *[(_with(SIM, "--groups", v), "--groups") for v in ("0", "2.5", "-4", "100000000")],
    *[(_with(SIM, "--steps", v), "--steps") for v in ("0", "-1", "nan")],
    (_with(SIM, "--replicates", "0"), "--replicates"),
    (_with(SIM, "--seed", "-1"), "--seed"),
    (_with(SIM, "--pool", "-1"), "--pool"),
    (_with(SIM, "--budget", "3"), "--budget"),
    (_with(SIM, "--capacity", "1"), "--capacity"),
    (_with(SIM, "--len-pass", "nan"), "--len-pass"),
    (_with(SIM, "--len-fail", "inf"), "--len-fail"),
    (_with(SIM, "--tau-low", "nan"), "--tau-low"),
    (_with(SIM, "--param", "tau_low=nan"), "--param"),
    (_with(SIM, "--param", "k=4"), "--param"),
    (_with(SIM, "--param", "bogus=1"), "--bogus"),
    (_with(SIM, "--param", "eb_window=0") + ["--strategy", "sara-eb"], "--eb-window"),
    (_with(SIM, "--strategy", "bogus"), "--strategy"),
    (_with(SIM, "--strategy", "ds") + ["--param", "gen_batch_size=abc"], "--gen-batch-size"),
    (_with(SIM, "--strategy", "ds") + ["--param", "max_num_gen_batches=-1"], "--max-num-gen"),
    (_with(SIM, "--strategy", "mopps") + ["--param", "ratio=nan"], "--ratio"),
    (_with(SIM, "--strategy", "greso") + ["--param", "dp=inf"], "--dp"),
    (_with(SIM, "--difficulty", "drift:1,1,nan"), "--difficulty"),
    (_with(SIM, "--steps", "100000000"), "--steps"),  # ~1e11 rollouts: refused
    (_with(SIM, "--replicates", "10000000"), "--replicates"),
    ([*SIM, "--epoch", "0", "--epochs", "0-1"], "--epochs"),
    # compare
    (_with(CMP, "--strategies", "ds,bogus"), "--strategies"),
    (_with(CMP, "--steps", "0"), "--steps"),
    (_with(CMP, "--groups", "100000000"), "--groups"),
    # verify: 0 is rejected like -1 (no silent defaults)
    *[(["verify", "--steps", v], "--steps") for v in ("0", "-1", "2.5", "100000000")],
    (["verify", "--replicates", "0"], "--replicates"),
    (["verify", "--seed", "-1"], "--seed"),
    # bench
    (["bench", "--k", "1"], "--k"),
    (["bench", "--k", "10000000"], "--k"),
    # replay
    (_with(REP, "--k", "9"), "--k"),  # more than the 8 recorded samples per record
    (_with(REP, "--k", "1"), "--k"),
    (_with(REP, "--history", "/tmp"), "--history"),
    (_with(REP, "--history", "/no/such.csv"), "--history"),
    (_with(REP, "--seeds", "0"), "--seeds"),
    (_with(REP, "--groups", "0"), "--groups"),
    (_with(REP, "--tau-low", "nan"), "--tau-low"),
    (_with(REP, "--strategies", "ds,bogus"), "--strategies"),
    (_with(REP, "--epochs", "60-70"), "--epochs"),
    (_with(REP, "--epochs", "0-52") + ["--seeds", "100"], "--seeds"),  # 1.6e7 visits: refused
    # figures: --out must be a writable folder (checked before any figure is drawn)
    (["figures", "--out", "/etc/passwd"], "--out"),
    (["figures", "--out", "/proc/nope"], "--out"),
    (["figures", "--out", "/etc/passwd/sub"], "--out"),
    (["figures", "--out", "unused", "--only", "99"], "--only"),
    (["figures", "--out", "unused", "--seed", "-1"], "--seed"),
    # no subcommand / unknown flag
    ([], "arguments"),
    ([*TH, "--bogus", "1"], "arguments"),
]


@pytest.mark.parametrize("argv,flag", BAD, ids=[" ".join(a[:1] + a[-2:]) for a, _ in BAD])
def test_bad_input_is_one_line_naming_the_flag(capsys, monkeypatch, tmp_path, argv, flag):
    monkeypatch.chdir(tmp_path)  # a relative --out must not leave anything in the repository
    rc = main(argv)
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert rc == 2 and out.out == "", (argv, out.out[:200])
    assert len(lines) == 1, out.err
    assert lines[0].startswith("sara-sim: error: ") and flag in lines[0], lines[0]
    assert "Traceback" not in out.err
    assert not any(tmp_path.iterdir())  # nothing written


def test_negative_values_reach_their_option():
    assert join_negative_values(["--prior", "-1,-1", "--k", "8"]) == ["--prior=-1,-1", "--k", "8"]
    assert join_negative_values(["--tau-low", "-inf", "--json"]) == ["--tau-low=-inf", "--json"]
    assert join_negative_values(["--k", "8", "--json"]) == ["--k", "8", "--json"]


def test_force_runs_what_the_bound_refuses(capsys, monkeypatch):
    """--force skips the bound (here made tiny so that the forced run stays small)."""
    import sara_sim.cli.app as cli

    monkeypatch.setattr(cli, "THEORY_WORK_LIMIT", 4)
    assert main(TH) == 2 and "--force" in capsys.readouterr().err
    assert main([*TH, "--force", "--json"]) == 0
    assert '"p_mixed"' in capsys.readouterr().out


def _subprocess(*args):
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "sara_sim.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    "argv,flag",
    [
        (_with(TH, "--prior", "-1,-1"), "--prior"),  # the shell's argv, not a joined string
        (_with(SIM, "--groups", "100000000"), "--groups"),  # was a MemoryError traceback
        (_with(TH, "--k", "10" * 10), "--k"),  # was a 33-line Numba TypingError
        (_with(REP, "--k", "9"), "--k"),  # was an IndexError
    ],
)
def test_bad_input_subprocess(argv, flag):
    proc = _subprocess(*argv)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    assert len(lines) == 1 and flag in lines[0] and lines[0].startswith("sara-sim: error: ")


def _strict(text):
    return json.loads(text, parse_constant=lambda tok: pytest.fail(f"non-strict JSON {tok}"))


@pytest.mark.parametrize(
    "argv,path",
    [  # degenerate but legal inputs whose numbers are undefined or infinite: null, not NaN
        (_with(SIM, "--difficulty", "point:0") + ["--json"], ("cost_per_effective_group",)),
        (
            [*CMP, "--difficulty", "point:1", "--strategies", "uniform,ds", "--json"],
            ("rows", 0, "cost_per_effective_group"),
        ),
        (
            [*REP[:-1], "26-26", "--strategies", "ds,sara", "--seeds", "1", "--json"],
            ("rows", 0, "cost_se"),  # one seed: no standard error
        ),
        (
            ["theory", "--difficulty", "point:0", "--k", "8", "--tau-low", "1", "--json"],
            ("savings_vs_ds",),
        ),
    ],
)
def test_json_is_strict_with_null_for_undefined(capsys, argv, path):
    assert main(argv) == 0
    val = _strict(capsys.readouterr().out)
    for key in path:
        val = val[key]
    assert val is None
