"""The input rules of docs/reliability.md on `sara-sim` and `python -m paper_figs`, each as a class:
every history-reading command applies the one reader's rules; every named path gets its true
reason under the flag typed; the size guard counts every factor; figures never replace files
without --overwrite; integer flags are ASCII; seeds have one range; a message is one line.
The issue's cases and held-out ones of each class; in-process, no engine, a few seconds each."""

import json
import os
from pathlib import Path

import pytest

from paper_figs.__main__ import main as figs_main
from sara_sim.cli.app import main
from sara_sim.core.difficulty import TOKEN_COLUMNS, load_history, parse_law
from sara_sim.core.errors import SEED_MAX, ParameterError, ascii_float, ascii_int
from sara_sim.core.files import path_problem, run_cli

HEAD = "prompt_id,epoch,correct,samples\n"
GOOD = HEAD + "0,0,3,8\n1,0,5,8\n0,1,4,8\n1,1,2,8\n"


def run(argv, capsys, prog=main):
    """(exit status, stdout, the stderr lines) of one in-process call."""
    capsys.readouterr()
    rc = prog(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err.splitlines()


def one_line(argv, capsys, flag, *words, rc=2, prog=main):
    """The call fails with exactly one stderr line naming `flag` and every word; no stdout."""
    got, out, err = run(argv, capsys, prog)
    assert got == rc and len(err) == 1, (argv, got, err)
    assert f" {flag}: " in err[0] or f"error: {flag}" in err[0] or rc == 1, err
    for w in words:
        assert w in err[0], (w, err[0])
    assert "Traceback" not in err[0] and out == ""
    return err[0]


# ---------------------------------------------------------------- one history reader, one rulebook

BAD_HISTORIES = {  # name -> (file text, words the one line must hold: the row and the rule)
    "duplicate": (
        HEAD + "0,0,3,8\n1,0,2,8\n0,0,5,8\n",
        ["row 3 (line 4)", "repeats row 1", "one record per (prompt_id, epoch)"],
    ),
    "duplicate after a blank line": (
        HEAD + "0,0,3,8\n\n0,0,3,8\n",
        ["row 2 (line 4)", "repeats row 1 (line 2)"],
    ),
    "negative epoch": (
        HEAD + "0,0,3,8\n1,-1,4,8\n",
        ["row 2 (line 3)", "epoch -1", "need epoch >= 0"],
    ),
    "negative correct": (HEAD + "0,0,-1,8\n", ["row 1", "need 0 <= correct <= samples"]),
    "correct above samples": (HEAD + "0,0,9,8\n", ["row 1", "need 0 <= correct <= samples"]),
    "no samples": (HEAD + "0,0,0,0\n", ["row 1", "need samples >= 1"]),
    "a fraction": (HEAD + "0,0,1.5,8\n", ["row 1", "correct", "not an integer"]),
    "a word": (HEAD + "0,zero,1,8\n", ["row 1", "epoch", "not an integer"]),
    "beyond 2**53": (HEAD + "0,1e30,1,8\n", ["row 1", "epoch", "not an integer"]),
    "a short row": (HEAD + "0,0,1,8\n1,0,2\n", ["row 2", "samples", "not an integer"]),
    "a ragged row": (
        HEAD + "0,0,1,8\n1,0,2,8,9\n",
        ["malformed history file", "Expected 4 fields in line 3, saw 5"],
    ),
    "a column missing": ("prompt_id,epoch,correct\n0,0,1\n", ["lacks columns ['samples']"]),
    "no rows": (HEAD, ["has no rows"]),
    "empty": ("", ["malformed history file"]),
}


@pytest.fixture
def histories(tmp_path):
    out = {}
    for name, (text, _) in BAD_HISTORIES.items():
        out[name] = tmp_path / (name.replace(" ", "_") + ".csv")
        out[name].write_text(text)
    return out


@pytest.mark.parametrize("name", BAD_HISTORIES)
def test_every_rule_of_the_reader_is_one_line_naming_file_row_and_rule(name, histories, capsys):
    path = histories[name]
    argv = ["theory", "--difficulty", f"history:{path}", "--k", "4", "--tau-low", "0.3"]
    line = one_line(argv, capsys, "--difficulty", *BAD_HISTORIES[name][1])
    assert str(path) in line


def _commands(path, tmp_path):
    """Every command that reads a history file, with that file -> (argv, flag, prog)."""
    tok = ["wallclock", "--difficulty", "beta:1,1", "--lengths", str(path), "--steps", "1"]
    return [
        (
            ["theory", "--difficulty", f"history:{path}", "--k", "4", "--tau-low", ".3"],
            "--difficulty",
            main,
        ),
        (["optimal", "--difficulty", f"history:{path}", "--k", "4"], "--difficulty", main),
        (
            [
                *"simulate --strategy ds --difficulty".split(),
                f"history:{path}",
                *"--k 4 --steps 1".split(),
            ],
            "--difficulty",
            main,
        ),
        (
            ["compare", "--difficulty", f"history:{path}", "--k", "4", "--steps", "1"],
            "--difficulty",
            main,
        ),
        (["replay", "--history", str(path), "--k", "4", "--seeds", "1"], "--history", main),
        (
            ["wallclock", "--difficulty", f"history:{path}", "--k", "4", "--steps", "1"],
            "--difficulty",
            main,
        ),
        (tok, "--lengths", main),
        (
            ["figures", "--out", str(tmp_path / "f"), "--only", "1", "--history", str(path)],
            "--history",
            main,
        ),
        (
            ["--out", str(tmp_path / "g"), "--only", "1", "--history", str(path)],
            "--history",
            figs_main,
        ),
    ]


@pytest.mark.parametrize("name", ["duplicate", "negative epoch", "a word"])
def test_every_command_applies_the_same_rules(name, tmp_path, capsys):
    """theory weighted every row of a repeated pair, replay kept the last; theory counted a
    negative epoch, replay dropped it: now each refuses the file with the same line."""
    text = BAD_HISTORIES[name][0]
    path = tmp_path / "h.csv"
    tokens = text.replace(
        "prompt_id,epoch,correct,samples", "prompt_id,epoch,correct,samples,pass_tokens,fail_tokens"
    )
    lines = set()
    for argv, flag, prog in _commands(path, tmp_path):
        rows = tokens.splitlines()
        path.write_text(
            "\n".join([rows[0], *(r + ",10,20" if r else r for r in rows[1:])]) + "\n"
            if "--lengths" in argv
            else text
        )
        line = one_line(argv, capsys, flag, *BAD_HISTORIES[name][1], prog=prog)
        # the refusal after the program and the flag (--lengths' file also shows its token columns)
        lines.add(line.split(": ", 3)[3].replace(", pass_tokens 10, fail_tokens 20", ""))
    assert len(lines) == 1, lines  # one rulebook: word for word the same refusal
    assert not (tmp_path / "f").exists() and not (tmp_path / "g").exists()  # before any figure


def test_the_audit_history_is_read_by_the_same_reader(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text(
        "prompt_id,epoch,correct,samples,pass_tokens,fail_tokens\n0,0,1,4,5,9\n0,0,2,4,5,9\n"
    )
    with pytest.raises(ParameterError, match=r"row 2 \(line 3\): prompt_id 0, epoch 0 repeats"):
        load_history(path, "--out", TOKEN_COLUMNS)
    path.write_text("prompt_id,epoch,correct,samples,pass_tokens,fail_tokens\n0,0,1,4,-5,9\n")
    with pytest.raises(ParameterError, match="need pass_tokens >= 0"):
        load_history(path, "--out", TOKEN_COLUMNS)


def test_a_good_file_reads_the_same_everywhere(tmp_path, capsys):
    path = tmp_path / "h.csv"
    path.write_text(GOOD)
    frame = load_history(path)
    assert frame.values.tolist() == [[0, 0, 3, 8], [1, 0, 5, 8], [0, 1, 4, 8], [1, 1, 2, 8]]
    assert parse_law(f"history:{path}", epochs="1").frame["epoch"].tolist() == [1, 1]
    rc, out, _ = run(
        ["replay", "--history", str(path), *"--k 4 --seeds 1 --strategies ds --json".split()],
        capsys,
    )
    assert rc == 0 and json.loads(out)["epochs"] == [0, 1]


def test_a_huge_epoch_span_costs_what_its_records_cost(tmp_path, capsys):
    """--epochs 0-1000000000 built the whole epoch list (~36 GB); only epochs with records are
    replayed now, and the result is the default range's."""
    path = tmp_path / "h.csv"
    path.write_text(GOOD)
    base = ["replay", "--history", str(path), "--k", "4", "--seeds", "1", "--strategies", "ds,sara",
            "--json"]  # fmt: skip
    rc, out, _ = run([*base, "--epochs", "0-1000000000"], capsys)
    assert rc == 0
    rc, default, _ = run(base, capsys)
    assert json.loads(out)["rows"] == json.loads(default)["rows"]
    for span in ("0-99999999999999999999", "1-10000000000000"):  # held out: beyond int64 too
        rc, _, err = run([*base, "--epochs", span], capsys)
        assert rc == 0, err


# ---------------------------------------------------------------- every path: its true reason


@pytest.fixture
def odd_paths(tmp_path):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "gone.csv")
    (tmp_path / "null.csv").symlink_to("/dev/null")
    (tmp_path / "file").write_text("x")
    return {
        "missing": (tmp_path / "nope.csv", "not found"),
        "a directory": (tmp_path, "is a directory"),
        "a FIFO": (fifo, "is a named pipe (FIFO)"),
        "a device": (Path("/dev/null"), "is a character device"),
        "a link to a device": (tmp_path / "null.csv", "character device (via a symbolic link"),
        "a dangling link": (tmp_path / "dangling.csv", "is a dangling symbolic link"),
        "unreadable": (Path("/proc/self/mem"), "cannot read /proc/self/mem: Input/output error"),
        "under a file": (tmp_path / "file" / "h.csv", "is a file, not a directory"),
    }


@pytest.mark.parametrize(
    "kind",
    [
        "missing",
        "a directory",
        "a FIFO",
        "a device",
        "a link to a device",
        "a dangling link",
        "unreadable",
        "under a file",
    ],
)
def test_every_named_file_gets_its_true_reason_under_the_flag_typed(
    kind, odd_paths, tmp_path, capsys
):
    path, words = odd_paths[kind]
    for argv, flag, prog in _commands(path, tmp_path):
        line = one_line(argv, capsys, flag, prog=prog)
        if kind == "missing":
            assert "not found" in line or "no such" in line, line
        else:
            assert words in line, (argv[0], line)
        assert "malformed" not in line  # an unreadable file is not a malformed one


def test_paper_figs_learning_and_claims_get_their_reasons(odd_paths, tmp_path, capsys):
    out = ["--out", str(tmp_path / "figs"), "--only", "1"]
    fifo, _ = odd_paths["a FIFO"]
    one_line([*out, "--learning", str(fifo)], capsys, "--learning", "named pipe", prog=figs_main)
    one_line(
        [*out, "--learning", str(tmp_path)], capsys, "--learning", "is a directory", prog=figs_main
    )
    one_line([*out, "--claims", str(fifo)], capsys, "--claims", "named pipe", prog=figs_main)
    one_line(
        [*out, "--claims", str(tmp_path / "file")], capsys, "--claims", "is a file", prog=figs_main
    )
    one_line(
        [*out, "--claims", str(tmp_path / "dangling.csv")],
        capsys,
        "--claims",
        "dangling",
        prog=figs_main,
    )
    assert not (tmp_path / "figs").exists()


def test_path_problem_reads_nothing_that_could_block(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    assert path_problem(fifo) == f"{fifo} is a named pipe (FIFO), not a regular file (file)"
    assert path_problem(tmp_path, folder=True) is None
    assert "not a folder" in path_problem(fifo, "folder", folder=True)


# ---------------------------------------------------------------- the size guard: every factor


@pytest.mark.parametrize(
    "argv,flag",
    [
        (
            ["simulate", "--strategy", "ds", "--difficulty", "drift:1,1,0.01,0.25,1e9"],
            "--difficulty",
        ),
        (
            ["simulate", "--strategy", "sara", "--difficulty", "drift:1,1,0.01,0.25,1e12"],
            "--difficulty",
        ),
        (
            ["simulate", "--strategy", "ds", "--difficulty", "drift:1,1,0.01,0.25,1e30"],
            "--difficulty",
        ),
        (["compare", "--difficulty", "drift:1,1,0.01,0.25,2e8"], "--difficulty"),
        (
            [
                "simulate",
                "--strategy",
                "mopps",
                "--difficulty",
                "beta:1,1",
                "--pool",
                "100000000000",
            ],
            "--pool",
        ),
        (
            [
                "simulate",
                "--strategy",
                "ds",
                "--difficulty",
                "drift:1,1,0.01,0.25,1e6",
                "--replicates",
                "10000",
            ],
            "--difficulty",
        ),
        (
            [
                "simulate",
                "--strategy",
                "sara",
                "--difficulty",
                "beta:1,1",
                "--capacity",
                str(10**11),
            ],
            "--capacity",
        ),
        (["compare", "--difficulty", "beta:1,1", "--replicates", "10000000"], "--replicates"),
        (["wallclock", "--difficulty", "beta:1,1", "--pool", "10000000000"], "--pool"),
        (["wallclock", "--difficulty", "beta:1,1", "--groups", "1000000"], "--groups"),
        (["wallclock", "--difficulty", "beta:1,1", "--k", "100000"], "--k"),
    ],
)
def test_the_size_guard_names_the_biggest_factor(argv, flag, capsys):
    argv = [*argv, "--k", "8", "--steps", "2"] if "--k" not in argv else [*argv, "--steps", "2"]
    one_line(argv, capsys, flag)


def test_forced_past_memory_is_one_line_exit_1(capsys):
    argv = ["simulate", "--strategy", "ds", "--difficulty", "drift:1,1,0.01,0.25,1e12", "--k", "8",
            "--steps", "1", "--force"]  # fmt: skip
    line = one_line(argv, capsys, "", rc=1)
    assert line.startswith("sara-sim: error: out of memory")


# ---------------------------------------------------------------- figures need --overwrite


@pytest.mark.parametrize("prog,name", [(main, "sara-sim"), (figs_main, "paper_figs")])
def test_figures_never_replace_files_without_overwrite(prog, name, tmp_path, capsys):
    out = tmp_path / "figs"
    out.mkdir()
    argv = ["figures"] * (prog is main) + ["--out", str(out), "--only", "1,2"]
    for existing in ("fig1_p_eff.png", "fig2_abandon_reliability.txt", "fig1_p_eff_extra.md"):
        (out / existing).write_text("mine")
        line = one_line(argv, capsys, "--out", existing, "--overwrite", prog=prog)
        assert line.startswith(f"{name}: error: --out: {out} already holds")
        assert (out / existing).read_text() == "mine"
        (out / existing).unlink()
    (out / "fig3_rollout_savings.png").write_text("not asked for")  # another figure's: kept
    (out / "notes.txt").write_text("mine")
    rc, _, err = run([*argv[:-1], "1"], capsys, prog)
    assert rc == 0, err
    assert (out / "fig3_rollout_savings.png").read_text() == "not asked for"
    rc, _, err = run([*argv[:-1], "1"], capsys, prog)
    assert rc == 2 and "fig1_p_eff.csv" in err[0] and len(err) == 1
    rc, _, err = run([*argv[:-1], "1", "--overwrite"], capsys, prog)
    assert rc == 0, err
    assert (out / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------- ASCII integers, one seed range


@pytest.mark.parametrize("value", ["٨", "８", "1_0", " 8", "8 ", "+٨", "0x8", "8.0e0x"])
def test_integer_flags_take_ascii_digits_only(value, capsys):
    argv = ["theory", "--difficulty", "beta:1,1", "--k", value, "--tau-low", "0.3"]
    one_line(argv, capsys, "--k", repr(value))
    one_line(
        ["simulate", "--strategy", "ds", "--difficulty", "beta:1,1", "--k", "8", "--steps", value],
        capsys,
        "--steps",
    )
    one_line(["--out", "unused", "--seed", value], capsys, "--seed", prog=figs_main)


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["theory", "--difficulty", "beta:1,1", "--k", "8", "--tau-low", "٠.٥"], "--tau-low"),
        (["theory", "--difficulty", "beta:١,1", "--k", "8", "--tau-low", "0.5"], "--difficulty"),
        (["theory", "--difficulty", "point:０.５", "--k", "8", "--tau-low", "0.5"], "--difficulty"),
        (["theory", "--difficulty", "beta:1_0,1", "--k", "8", "--tau-low", "0.5"], "--difficulty"),
        (
            "theory --difficulty beta:1,1 --k 8 --tau-low 0.5 --prior ١,1".split(),
            "--prior",
        ),
        (
            "theory --difficulty history:deepscaler --epoch ٣ --k 8 --tau-low 0.5".split(),
            "--epoch",
        ),
        (["replay", "--history", "deepscaler", "--epochs", "0-٣"], "--epochs"),
        (
            ["simulate", "--strategy", "ds", "--difficulty", "drift:1,1,0.01,0.25,١٠", "--k", "8"],
            "--difficulty",
        ),
    ],
)
def test_numbers_inside_specs_are_ascii_too(argv, flag, capsys):
    one_line(argv, capsys, flag)


def test_ascii_parsers():
    assert ascii_int("8") == 8 and ascii_int("-0") == 0 and ascii_int("+12") == 12
    assert ascii_float("1e-3") == 1e-3 and ascii_float("-inf") == float("-inf")
    for bad in ("٨", "８", "1_0", "", " 1", "1.0"):
        with pytest.raises(ValueError):
            ascii_int(bad)
    for bad in ("٨", "1_0.5", " 1.5", "１.５"):
        with pytest.raises(ValueError):
            ascii_float(bad)


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--strategy", "ds", "--difficulty", "beta:1,1", "--k", "8", "--steps", "1"],
        ["verify", "--quick", "--steps", "1", "--replicates", "1"],
        ["wallclock", "--difficulty", "beta:1,1", "--steps", "1"],
        ["figures", "--out", "unused", "--only", "1"],
    ],
)
def test_sara_sim_seeds_have_sara_reals_range(argv, capsys, tmp_path):
    argv = [str(tmp_path / "f") if a == "unused" else a for a in argv]
    for bad in (str(SEED_MAX + 1), "99999999999999999999", "-1"):
        one_line([*argv, "--seed", bad], capsys, "--seed", f"must be an integer in [0, {SEED_MAX}]")
    one_line(
        ["--out", str(tmp_path / "g"), "--seed", str(SEED_MAX + 1)],
        capsys,
        "--seed",
        prog=figs_main,
    )


def test_the_largest_seed_runs(capsys):
    argv = ["simulate", "--strategy", "sara", "--difficulty", "beta:1,1", "--k", "8", "--steps",
            "1", "--replicates", "1", "--seed", str(SEED_MAX), "--json"]  # fmt: skip
    rc, out, err = run(argv, capsys)
    assert rc == 0 and json.loads(out)["config"]["seed"] == SEED_MAX, err


# ---------------------------------------------------------------- mixtures, one line


def test_mix_weights_are_relative_and_the_output_says_so(capsys):
    law = parse_law("mix:0.3*beta:1,5+0.3*beta:5,1")
    assert law.weights == (0.5, 0.5) and str(law) == "mix:0.5*beta:1,5+0.5*beta:5,1"
    assert parse_law("mix:3*beta:1,5+1*beta:5,1").weights == (0.75, 0.25)
    rc, out, _ = run(
        ["theory", "--difficulty", "mix:0.3*beta:1,5+0.3*beta:5,1", "--k", "8", "--tau-low", "0.3"],
        capsys,
    )
    assert rc == 0 and out.splitlines()[0].startswith(
        "SARA exact theory — mix:0.5*beta:1,5+0.5*beta:5,1"
    )


def test_every_message_is_one_line(capsys):
    def multi():
        raise ParameterError("--x", "first\n\nsecond\n")

    assert run_cli("prog", multi) == 2
    assert capsys.readouterr().err == "prog: error: --x: first second\n"

    def full():
        raise OSError(28, "No space left on device\n")

    assert run_cli("prog", full) == 1
    assert capsys.readouterr().err == "prog: error: No space left on device\n"
