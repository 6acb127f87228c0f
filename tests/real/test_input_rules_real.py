"""The input rules of docs/reliability.md on `sara-real`, each as a class (the issue's cases and
held-out ones): task files have one check for validate, compare and audit; model folders are
checked before an engine starts; a run file that is a directory or device gets its true reason;
the audit's and the run's size guards count every factor; make-tiny never rebuilds over a model
of other settings; integer flags are ASCII and seeds have sara-sim's range; engine noise goes to
OUT/engine.log. Nothing here starts an engine but the `integration` test at the end."""

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from real.app.cli import main
from sara_sim.cli.app import main as sim_main
from sara_sim.core.errors import SEED_MAX

ROOT = Path(__file__).resolve().parents[2]


def run(argv, capsys):
    """(exit status, stderr lines) of `sara-real ARGV` in process (argparse's exit included)."""
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err.splitlines()


def one_line(argv, capsys, flag, *words, rc=2):
    got, err = run(argv, capsys)
    assert got == rc and len(err) == 1, (argv, got, err)
    assert flag in err[0] and "Traceback" not in err[0], err
    for w in words:
        assert w in err[0], (w, err[0])
    return err[0]


# ---------------------------------------------------------------- task files: one check


def _task_files(tmp_path):
    files = {
        "wrong keys": ('{"problem": "1+1"}\n', "needs a JSON object with 'problem' and 'answer'"),
        "not JSON": ("1+1 = 2\n", "line 1 is not JSON"),
        "not an object": ('["1+1", "2"]\n', "needs a JSON object"),
        "a bad second line": (
            '{"problem": "1", "answer": "1"}\n{"problem"\n',
            "line 2 is not JSON",
        ),
        "empty": ("", "no problems"),
        "blank lines only": ("\n \n", "no problems"),
        "not UTF-8": (b"\xff\xfe{}\n", "is not UTF-8"),
    }
    out = {}
    for name, (text, words) in files.items():
        p = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        out[name] = (p, words)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "gone")
    out |= {
        "a FIFO": (fifo, "named pipe"),
        "a directory": (tmp_path, "is a directory"),
        "a dangling link": (tmp_path / "dangling.jsonl", "dangling symbolic link"),
        "missing": (tmp_path / "nope.jsonl", "no such JSONL file"),
        "a device": (Path("/dev/null"), "character device"),
    }
    return out


def test_task_files_have_one_check_for_validate_compare_and_audit(tmp_path, capsys):
    """`audit` with a malformed, wrong-keys or empty file printed a 28-38 line traceback while
    `validate` said one line: now the same line from every command, under the flag typed."""
    for name, (path, words) in _task_files(tmp_path).items():
        lines = set()
        for cmd in ("validate", "compare", "audit"):
            out = ["--out", str(tmp_path / f"out-{cmd}")]
            line = one_line(
                [cmd, "--task", "math", "--task-path", str(path), *out],
                capsys,
                "--task-path",
                words,
            )
            lines.add(line.split(": error: ")[1])
        assert len(lines) == 1, (name, lines)
        one_line(
            ["validate", "--task", "math", "--eval-path", str(path), "--out", str(tmp_path / "o")],
            capsys,
            "--eval-path",
            words,
        )
    assert not any(tmp_path.glob("out-*"))


@pytest.mark.parametrize("n", [1, 4])
def test_a_tiny_math_file_says_its_held_out_split_is_empty(n, tmp_path, capsys):
    """One problem gave "--eval-problems: must be in [1, 0] ..., got 64" with no --eval-problems
    on the command line; the cause is the empty held-out split (every 5th problem)."""
    from real.app.run import check_config
    from real.base.config import Config

    data = tmp_path / "few.jsonl"
    data.write_text(
        "".join(json.dumps({"problem": f"{i}+1", "answer": str(i + 1)}) + "\n" for i in range(n))
    )
    argv = ["validate", "--task", "math", "--task-path", str(data), "--out", str(tmp_path / "r")]
    line = one_line(
        argv, capsys, "--task-path", "held-out set is empty", f"holds {n} problem", "--eval-path"
    )
    assert "[1, 0]" not in line and "--eval-problems" not in line
    held = tmp_path / "held.jsonl"
    held.write_text('{"problem": "2+2", "answer": "4"}\n')
    cfg = Config(
        task="math",
        task_path=str(data),
        eval_path=str(held),
        eval_problems=1,
        out=str(tmp_path / "r"),
    )
    assert len(check_config(cfg).task.eval_problems()) == 1  # --eval-path: accepted


# ---------------------------------------------------------------- model folders


def _safetensors(path: Path, tensors: dict, cut: int = 0) -> None:
    """A safetensors file written by hand (8-byte header length, JSON header, data)."""
    header, data = {}, b""
    for name, shape in tensors.items():
        n = 4
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + n]}
        data += b"\0" * n
    head = json.dumps(header).encode()
    blob = len(head).to_bytes(8, "little") + head + data
    path.write_bytes(blob[: len(blob) - cut])


def _model(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "none", "vocab_size": 10}')
    (folder / "tokenizer.json").write_text("{}")
    _safetensors(folder / "model.safetensors", {"w": [4, 4], "b": [4]})
    return folder


def _broken_models(tmp_path):
    """name -> (folder, words of the one line)."""
    out = {}

    def make(name, damage, words):
        folder = _model(tmp_path / name.replace(" ", "_"))
        damage(folder)
        out[name] = (folder, words)

    make(
        "truncated weights",
        lambda f: _safetensors(f / "model.safetensors", {"w": [4, 4]}, 9),
        "model.safetensors is truncated",
    )
    make(
        "a header only",
        lambda f: (f / "model.safetensors").write_bytes(b"\x10" + b"\0" * 7),
        "model.safetensors is truncated or not safetensors",
    )
    make(
        "a garbage header",
        lambda f: (f / "model.safetensors").write_bytes((4).to_bytes(8, "little") + b"{{{{"),
        "model.safetensors is damaged",
    )
    make(
        "a tensor of the wrong size",
        lambda f: _bad_tensor(f / "model.safetensors"),
        "tensor w holds 60 bytes, its shape needs 64",
    )
    make("no weights", lambda f: (f / "model.safetensors").unlink(), "no weights")
    make("no config", lambda f: (f / "config.json").unlink(), "no config.json")
    make(
        "a config that is not JSON",
        lambda f: (f / "config.json").write_text("{"),
        "config.json is not JSON",
    )
    make(
        "a config that is a list",
        lambda f: (f / "config.json").write_text("[]"),
        "config.json is not a JSON object",
    )
    make(
        "a config that is a directory",
        lambda f: _swap_for_dir(f / "config.json"),
        "config.json is a directory",
    )
    make("no tokenizer", lambda f: (f / "tokenizer.json").unlink(), "no tokenizer")
    make("a missing shard", lambda f: _index(f, ["model-1.safetensors"]), "no such weights file")
    make(
        "weights behind a dangling link",
        lambda f: _dangle(f / "model.safetensors"),
        "dangling symbolic link",
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    (tmp_path / "afile").write_text("x")
    out |= {
        "/dev/null": (Path("/dev/null"), "character device, not a model directory"),
        "a FIFO": (fifo, "named pipe (FIFO), not a model directory"),
        "a file": (tmp_path / "afile", "is a file, not a model directory"),
        "a dangling link": (tmp_path / "dangling", "dangling symbolic link"),
    }
    return out


def _bad_tensor(path):
    _safetensors(path, {"w": [4, 4]})
    blob = path.read_bytes()
    n = int.from_bytes(blob[:8], "little")
    head = json.loads(blob[8 : 8 + n])
    head["w"]["data_offsets"] = [0, 60]
    new = json.dumps(head).encode()
    path.write_bytes(len(new).to_bytes(8, "little") + new + b"\0" * 60)


def _swap_for_dir(path):
    path.unlink()
    path.mkdir()


def _index(folder, shards):
    (folder / "model.safetensors").unlink()
    weight_map = {f"w{i}": s for i, s in enumerate(shards)}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def _dangle(path):
    path.unlink()
    path.symlink_to(path.with_name("gone"))


def test_model_folders_are_checked_before_any_engine(tmp_path, capsys):
    """A truncated model.safetensors gave 35 lines after the engine was set up: every command
    that loads a model now refuses a broken folder first, in one line naming the file."""
    from real.models.resolve import resolve_model

    good = _model(tmp_path / "good")
    assert resolve_model(str(good)) == good
    for folder, words in _broken_models(tmp_path).values():
        for argv in (
            ["validate", "--out", str(tmp_path / "r")],
            ["audit", "--out", str(tmp_path / "a")],
            ["serve"],
        ):
            one_line([*argv, "--model", str(folder)], capsys, "--model", words)
    assert not (tmp_path / "r").exists() and not (tmp_path / "a").exists()


# ---------------------------------------------------------------- a run's own files


@pytest.mark.parametrize("what", ["a directory", "/dev/null", "a FIFO"])
@pytest.mark.parametrize("name", ["checkpoint.pt", "metrics.jsonl", "summary.json"])
def test_a_run_file_that_is_not_a_file_gets_its_true_reason(what, name, tmp_path, capsys):
    """A checkpoint.pt that is a directory or /dev/null was "stopped before its first
    checkpoint"; now it is said to be what it is, with and without --resume / --overwrite, and
    it is never removed."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 0}\n') if name != "metrics.jsonl" else None
    path = out / name
    {
        "a directory": path.mkdir,
        "/dev/null": lambda: path.symlink_to("/dev/null"),
        "a FIFO": lambda: os.mkfifo(path),
    }[what]()
    kind = {"a directory": "is a directory", "/dev/null": "character device", "a FIFO": "FIFO"}
    for extra, flag in (([], "--out"), (["--resume"], "--resume"), (["--overwrite"], "--out")):
        line = one_line(
            ["validate", "--out", str(out), *extra], capsys, flag, kind[what], "move it away"
        )
        assert "before its first checkpoint" not in line
        assert os.path.lexists(path)


def test_an_unreadable_checkpoint_is_not_a_corrupted_one(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "checkpoint.pt").symlink_to("/proc/self/mem")  # a regular file that fails to read
    line = one_line(["validate", "--out", str(out), "--resume"], capsys, "--resume")
    assert "cannot read" in line and "Input/output error" in line and "corrupted" not in line


# ---------------------------------------------------------------- size guards


@pytest.mark.parametrize(
    "argv,flag,words",
    [
        (["audit", "--bootstrap", "100000000000000"], "--bootstrap", "bootstrap work"),
        (["audit", "--bootstrap", "100000"], "--bootstrap", "bootstrap work"),
        (["audit", "--prompts", "100000000", "--bootstrap", "0"], "--prompts", "GiB"),
        (
            ["audit", "--prompts", "100000", "--passes", "3", "--bootstrap", "0"],
            "--prompts",
            "prompt visits to replay",
        ),
        (["audit", "--passes", "10000", "--bootstrap", "0"], "--passes", "prompt visits"),
        (
            [*"audit --batch 256 --prompts 256 --k 4096 --max-tokens 8192 --bootstrap 0".split()],
            "--batch",
            "GiB",
        ),
        (["validate", "--eval-samples", "100000000"], "--eval-samples", "GiB"),
        (["validate", "--groups", "100000"], "--groups", "GiB"),
    ],
)
def test_size_guards_count_every_factor_before_the_engine(argv, flag, words, tmp_path, capsys):
    """`audit --bootstrap 1e14` was accepted: the engine sampled, then nothing was written."""
    one_line([*argv, "--out", str(tmp_path / "o")], capsys, flag, words, "--force")
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- make-tiny over another model


def _built_tiny(folder: Path, **settings) -> Path:
    """A folder as make-tiny leaves it (stamp and spread file; the weights do not matter here)."""
    from real.models.tiny import STAMP, TinySettings

    s = TinySettings.test() if settings.pop("test", True) else TinySettings()
    folder.mkdir()
    (folder / STAMP).write_text(s.digest())
    (folder / "tiny_spread.json").write_text(json.dumps({"settings": asdict(s)}))
    (folder / "model.safetensors").write_text("weights a run may be using")
    return folder


@pytest.mark.parametrize(
    "argv,words",
    [
        (["--test-size", "--seed", "1"], "seed 0 there, 1 asked"),
        (["--seed", "3"], "seed 0 there, 3 asked"),
        ([], "batch 128 there, 256 asked"),
    ],
)
def test_make_tiny_never_rebuilds_over_another_model_without_overwrite(
    argv, words, tmp_path, capsys
):
    folder = _built_tiny(tmp_path / "model")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    one_line(["make-tiny", "--out", str(folder), *argv], capsys, "--out", words, "--overwrite")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    (folder / "tiny_spread.json").unlink()
    one_line(
        ["make-tiny", "--out", str(folder), *argv],
        capsys,
        "--out",
        "its settings file is unreadable",
    )


# ---------------------------------------------------------------- flags: ASCII, seeds, help


@pytest.mark.parametrize("value", ["٨", "８", "1_0", "8 "])
@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--k"],
        ["audit", "--prompts"],
        ["make-tiny", "--seed"],
        ["serve", "--port"],
        ["compare", "--groups"],
        ["validate", "--lr"],
    ],
)
def test_integer_flags_take_ascii_digits_only(argv, value, capsys):
    one_line([*argv, value], capsys, argv[1], repr(value))


@pytest.mark.parametrize("bad", [str(SEED_MAX + 1), "99999999999999999999"])
def test_both_clis_give_seeds_one_range_in_the_same_words(bad, tmp_path, capsys):
    real = one_line(["validate", "--seed", bad, "--out", str(tmp_path / "r")], capsys, "--seed")
    capsys.readouterr()
    assert (
        sim_main(
            ["simulate", "--strategy", "ds", "--difficulty", "beta:1,1", "--k", "8", "--seed", bad]
        )
        == 2
    )
    sim = capsys.readouterr().err.strip()
    assert real.split(": error: ")[1] == sim.split(": error: ")[1]
    assert f"[0, {SEED_MAX}]" in sim


def test_no_progress_says_what_it_switches_off(capsys):
    for cmd in ("validate", "audit"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--no-progress switch off: progress bar (on without this flag)" in text
        assert "(default: True)" not in text


# ---------------------------------------------------------------- engine noise -> OUT/engine.log

PHASE = """
import os, sys
from real.io.enginelog import engine_log, user_stderr
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
try:
    with engine_log(out):
        os.write(2, b"C++ warning on fd 2\\n")
        os.write(1, b"banner on fd 1\\n")
        print("python library noise", file=sys.stderr)
        print("note: ours", file=user_stderr())
        raise RuntimeError("engine died")
except RuntimeError as e:
    print(f"error: {e} (traceback in {getattr(e, 'engine_log', None)})", file=sys.stderr)
print("result", flush=True)
"""


def test_engine_noise_goes_to_the_log_and_ours_to_the_terminal(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", PHASE, str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = tmp_path / "run" / "engine.log"
    assert proc.stderr.splitlines() == ["note: ours", f"error: engine died (traceback in {log})"]
    assert proc.stdout == "result\n"
    text = log.read_text()
    for noise in ("C++ warning on fd 2", "banner on fd 1", "python library noise"):
        assert noise in text
    assert "Traceback" in text and "RuntimeError: engine died" in text


def test_a_log_on_a_full_disk_loses_the_noise_not_the_run(tmp_path, tmpfs):
    disk = tmpfs.mount("64k")
    tmpfs.fill(disk, leave=0)
    proc = subprocess.run(
        [sys.executable, "-c", PHASE, str(disk / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == "result\n"
    # the noise is lost with the disk; a traceback that could not be logged names no log
    assert proc.stderr.splitlines() == ["note: ours", "error: engine died (traceback in None)"]


def test_a_failure_after_the_engine_phase_starts_is_one_line_naming_the_log(tmp_path, capsys):
    """A model folder that passes the checks but that transformers cannot load fails inside the
    phase: one line, exit 1, the traceback in OUT/engine.log (no engine is started)."""
    model = _model(tmp_path / "model")  # model_type "none": no architecture transformers knows
    out = tmp_path / "run"
    line = one_line(
        ["validate", "--model", str(model), "--steps", "1", "--no-progress", "--out", str(out)],
        capsys,
        "ValueError",
        rc=1,
    )
    assert f"(traceback in {out / 'engine.log'})" in line
    assert "Traceback (most recent call last)" in (out / "engine.log").read_text()


# ---------------------------------------------------------------- a full disk, as a user sees it


def _fill(tmpfs, size: str, leave: int, name: str):
    disk = tmpfs.mount(size, name)
    tmpfs.fill(disk, leave=leave)
    return disk


@pytest.mark.integration
def test_a_full_disk_is_the_terminals_last_and_only_line(tiny_dir, tmpfs):
    """ENOSPC in `audit` and `validate` printed the right line, then ~5 lines of engine shutdown
    (and the start-up banners before it): as a program, stderr is now that one line; the
    engine's output is in OUT/engine.log."""
    exe = Path(sys.executable).parent / "sara-real"
    disk = _fill(tmpfs, "1m", 8192, "audit-disk")
    audit = [str(exe), "audit", "--model", str(tiny_dir), "--prompts", "8", "--k", "4",
             "--bootstrap", "0", "--no-progress", "--out", str(disk / "audit")]  # fmt: skip
    proc = subprocess.run(audit, capture_output=True, text=True, timeout=600)
    want = (
        f"sara-real: error: cannot write {disk / 'audit' / 'audit.json'}: No space left on device"
    )
    assert proc.returncode == 1 and proc.stderr.splitlines() == [want], proc.stderr
    disk = _fill(tmpfs, "4m", 8192, "run-disk")
    run = [str(exe), "validate", "--model", str(tiny_dir), "--k", "4", "--groups", "2",
           "--steps", "2", "--eval-problems", "4", "--eval-samples", "1", "--out",
           str(disk / "run")]  # fmt: skip
    proc = subprocess.run(run, capture_output=True, text=True, timeout=600)
    lines = [x for x in proc.stderr.replace("\r", "\n").splitlines() if x.strip()]
    assert proc.returncode == 1 and "No space left on device" in lines[-1], proc.stderr
    assert [x for x in lines if not x.startswith("sara:")] == [lines[-1]]  # our bar, our line
