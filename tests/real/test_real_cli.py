"""`sara-real` input checks: every bad value is exit 2 and one line naming its flag, before any
engine or model starts; used folders, --resume, corrupted checkpoints and the run lock; the help
text derived from the Config dataclass. Cheap: no case here starts vLLM."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from real.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _bad(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, (argv, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _parse_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1, err
    return err


VALIDATE_BAD = [
    (["--seed", "-1"], "--seed"),
    (["--lr", "nan"], "--lr"),
    (["--lr", "-1e3"], "--lr"),
    (["--lr", "inf"], "--lr"),
    (["--device", "bogus"], "--device"),
    (["--dtype", "bogus"], "--dtype"),
    (["--gpu-memory-utilization", "5"], "--gpu-memory-utilization"),
    (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
    (["--micro-batch", "-1"], "--micro-batch"),
    (["--eps-low", "-1"], "--eps-low"),
    (["--eps-low", "1"], "--eps-low"),
    (["--eps-high", "nan"], "--eps-high"),
    (["--kl-coef", "nan"], "--kl-coef"),
    (["--kl-coef", "-0.1"], "--kl-coef"),
    (["--max-grad-norm", "0"], "--max-grad-norm"),
    (["--eval-problems", "-3"], "--eval-problems"),
    (["--eval-problems", "65"], "--eval-problems"),  # the arithmetic held-out set is 64
    (["--eval-samples", "0"], "--eval-samples"),
    (["--eval-every", "0"], "--eval-every"),
    (["--ckpt-every", "0"], "--ckpt-every"),
    (["--k", "1"], "--k"),
    (["--k", "100000"], "--k"),  # memory bound: ~33 GiB on a 24 GiB machine
    (["--groups", "0"], "--groups"),
    (["--steps", "0"], "--steps"),
    (["--epochs", "0"], "--epochs"),
    (["--minibatches", "0"], "--minibatches"),
    (["--temperature", "0"], "--temperature"),
    (["--temperature", "nan"], "--temperature"),
    (["--tau-low", "1.5"], "--tau-low"),
    (["--tau-low", "nan"], "--tau-low"),
    (["--tau-high", "nan"], "--tau-high"),
    (["--prior", "-1,-1"], "--prior"),
    (["--prior", "0,1"], "--prior"),
    (["--capacity", "0"], "--capacity"),
    (["--gen-batch-size", "0"], "--gen-batch-size"),
    (["--max-num-gen-batches", "-1"], "--max-num-gen-batches"),
    (["--max-tokens", "0"], "--max-tokens"),
    (["--max-model-len", "0"], "--max-model-len"),
    (["--old-logprobs", "bogus"], "--old-logprobs"),
    (["--task", "bogus"], "--task"),
    (["--allocator", "bogus"], "--allocator"),
    (["--task-size", "0"], "--task-size"),
    (["--task", "math", "--task-size", "5"], "--task-size"),
    (["--task-path", "x.jsonl"], "--task-path"),  # only math reads a file
    (["--allocator", "sara-history"], "--task-size"),
    (["--allocator", "sara-dps", "--task", "countdown"], "--task-size"),
    (["--model", "/nonexistent/model"], "--model"),
    (["--out", "/proc/nope"], "--out"),
    (["--resume", "--overwrite"], "--resume"),
    (["--eval-size", "0"], "--eval-size"),
    (["--task", "math", "--eval-size", "8"], "--eval-size"),  # math reads its held-out set
    (["--eval-size", "100", "--eval-problems", "101"], "--eval-problems"),
    (["--task-seed", "-1"], "--task-seed"),
    (["--audit-abandoned", "-1"], "--audit-abandoned"),
]


@pytest.mark.parametrize("args,flag", VALIDATE_BAD, ids=[" ".join(a) for a, _ in VALIDATE_BAD])
def test_validate_bad_input_is_one_line(args, flag, tmp_path, capsys):
    out = ["--out", str(tmp_path / "run")] if "--out" not in args else []
    err = _bad(["validate", *out, *args], capsys)
    assert flag in err
    assert not (tmp_path / "run").exists()  # nothing written


@pytest.mark.parametrize(
    "args,flag",
    [
        (["validate", "--k", "1e20"], "--k"),
        (["validate", "--k", "2.5"], "--k"),
        (["validate", "--seed", "x"], "--seed"),
        (["validate", "--prior", "a,b"], "--prior"),
        (["validate", "--bogus-flag"], "--bogus-flag"),
    ],
)
def test_unparseable_values_are_one_line(args, flag, capsys):
    assert flag in _parse_error(args, capsys)


def test_paths_that_are_dirs_or_files(tmp_path, capsys):
    d = tmp_path / "data"
    d.mkdir()
    err = _bad(
        ["validate", "--task", "math", "--task-path", str(d), "--out", str(tmp_path / "r")], capsys
    )
    assert "--task-path" in err and "directory" in err
    f = tmp_path / "afile"
    f.write_text("x")
    assert "is a file" in _bad(["validate", "--out", str(f)], capsys)
    assert "--model" in _bad(["validate", "--model", str(f), "--out", str(tmp_path / "r")], capsys)


def test_resume_needs_a_checkpoint(tmp_path, capsys):
    err = _bad(["validate", "--resume", "--out", str(tmp_path / "empty")], capsys)
    assert "--resume" in err and "no checkpoint" in err
    assert not (tmp_path / "empty").exists()


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupted_checkpoint_is_one_line_before_the_engine(tmp_path, capsys, damage):
    import torch

    out = tmp_path / "run"
    out.mkdir()
    ck = out / "checkpoint.pt"
    torch.save({"step": 0, "config": {}, "model": torch.randn(4000)}, ck)
    data = bytearray(ck.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 2] ^= 0xFF
    else:
        data = bytearray(b"not a checkpoint at all")
    ck.write_bytes(bytes(data))
    before = ck.read_bytes()
    err = _bad(["validate", "--resume", "--out", str(out)], capsys)
    assert str(ck) in err and "corrupted" in err
    assert ck.read_bytes() == before  # untouched


def test_used_folder_needs_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 0}\n')
    err = _bad(["validate", "--out", str(out)], capsys)
    assert "--resume" in err and "--overwrite" in err
    assert (out / "metrics.jsonl").read_text() == '{"step": 0}\n'


def test_compare_bad_input(tmp_path, capsys):
    out = str(tmp_path / "cmp")
    assert "--allocators" in _bad(["compare", "--allocators", ",", "--out", out], capsys)
    assert "twice" in _bad(["compare", "--allocators", "ds,ds", "--out", out], capsys)
    assert "'bogus'" in _bad(["compare", "--allocators", "ds,bogus", "--out", out], capsys)
    # each allocator's own settings are checked before the first run starts
    err = _bad(["compare", "--allocators", "ds,sara-history", "--out", out], capsys)
    assert "--task-size" in err
    err = _bad(["compare", "--allocators", "ds,sara", "--resume", "--out", out], capsys)
    assert "no compare" in err
    assert not Path(out).exists()


def test_compare_into_a_used_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "cmp"
    (out / "sara").mkdir(parents=True)
    (out / "sara" / "metrics.jsonl").write_text('{"step": 0}\n')
    err = _bad(["compare", "--allocators", "ds,sara", "--out", str(out)], capsys)
    assert str(out / "sara") in err and "--overwrite" in err
    assert (out / "sara" / "metrics.jsonl").read_text() == '{"step": 0}\n'
    assert not (out / "ds").exists()


def test_make_tiny_bad_input(tmp_path, capsys):
    assert "--time-cap" in _bad(["make-tiny", "--time-cap", "-5"], capsys)
    assert "--time-cap" in _bad(["make-tiny", "--time-cap", "nan"], capsys)
    assert "--seed" in _bad(["make-tiny", "--seed", "-1"], capsys)
    assert "--out" in _bad(["make-tiny", "--out", "/proc/nope"], capsys)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("mine")
    assert "--out" in _bad(["make-tiny", "--out", str(tmp_path / "busy")], capsys)
    assert (tmp_path / "busy" / "x").read_text() == "mine"


def test_a_locked_folder_is_refused(tmp_path, capsys):
    """A live run holds OUT/.lock; a second run on OUT is refused, naming the holder's pid."""
    out = tmp_path / "run"
    code = (
        "import sys, time; from real.runlog import RunLock; "
        f"RunLock({str(out)!r}).__enter__(); print('locked', flush=True); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        err = _bad(["validate", "--overwrite", "--out", str(out)], capsys)
        assert f"pid {holder.pid}" in err and "another run" in err
    finally:
        holder.kill()
        holder.wait()
    # the OS released the lock with the process: the folder is free again
    from real.runlog import lock_holder

    deadline = time.time() + 10
    while lock_holder(out) is not None and time.time() < deadline:
        time.sleep(0.1)
    assert lock_holder(out) is None


def test_no_torch_or_vllm_before_a_bad_flag_is_reported():
    """The checks run before the heavy imports (a bad flag costs a second, not an engine)."""
    code = (
        "import sys; from real.cli import main; rc = main(['validate', '--lr', 'nan']); "
        "print(rc, 'vllm' in sys.modules, 'torch' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.stdout.split() == ["2", "False", "False"], r.stderr
    assert r.stderr.strip().endswith("--lr: must be a finite number in (0, 1], got nan")


def test_help_is_derived_from_the_config():
    """Every Config field is a flag whose help is the field's docstring and shows its default;
    every allocator is listed."""
    from dataclasses import fields

    from real.checks import ALLOCATORS
    from real.cli import FLAG_NAMES, NOT_FLAGS, field_docs
    from real.train import Config

    ap = build_parser()
    sub = ap._subparsers._group_actions[0].choices
    for cmd in ("validate", "compare"):
        text = sub[cmd].format_help()
        for name in ALLOCATORS:
            assert name in text, (cmd, name)
        docs = field_docs(Config)
        for f in fields(Config):
            if f.name in NOT_FLAGS:
                continue
            assert f.name in docs, f"Config.{f.name} has no docstring"
            flag = FLAG_NAMES.get(f.name) or (
                "--no-" + f.name.replace("_", "-")
                if f.default is True
                else "--" + f.name.replace("_", "-")
            )
            assert flag in text, (cmd, flag)
    validate = sub["validate"]
    a = validate.parse_args([])
    assert a.eps_high == Config.eps_high and a.tau_low == Config.tau_low and a.lr == Config.lr
    assert "(default: 0.28)" in " ".join(validate.format_help().split())


@pytest.mark.parametrize(
    "args,flag",
    [
        (["audit", "--seed", "-1"], "--seed"),
        (["audit", "--out", "/proc/nope"], "--out"),
        (["audit", "--prompts", "0"], "--prompts"),
        (["audit", "--temperature", "nan"], "--temperature"),
        (["audit", "--engine-url", "localhost"], "--engine-url"),
        (["serve", "--seed", "-1"], "--seed"),  # checked before the process becomes a server
        (["serve", "--dtype", "bogus"], "--dtype"),
        (["serve", "--port", "0"], "--port"),
    ],
)
def test_serve_and_audit_bad_input_is_one_line(args, flag, capsys):
    assert flag in _bad(args, capsys)
