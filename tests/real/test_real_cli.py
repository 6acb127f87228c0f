"""`sara-real` input checks: every bad value is exit 2 and one line naming its flag, before any
engine or model starts; used folders, --resume, corrupted checkpoints and the run lock; the help
text derived from the Config dataclass. Cheap: no case here starts vLLM."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from real.app.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _bad(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, (argv, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


TOKENS = ["--priced-in", "tokens"]
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
    (["--trainer", "trl", "--minibatches", "0"], "--minibatches"),  # checked before the trl rule
    (["--trainer", "trl", "--audit-abandoned", "2"], "--audit-abandoned"),  # native only
    (["--betas", "0.9,1"], "--betas"),
    (["--betas", "0.9"], "--betas"),
    (["--weight-decay", "-1"], "--weight-decay"),
    (["--probe", "9"], "--probe"),  # in [0, k=8]
    (["--increment", "-1"], "--increment"),
    (["--max-rounds", "0"], "--max-rounds"),
    (["--eb-window", "0"], "--eb-window"),
    (["--rule", "magic"], "--rule"),
    (["--rho", "0"], "--rho"),
    (["--rho", "1.5"], "--rho"),
    (["--kappa", "0"], "--kappa"),
    (["--explore", "2"], "--explore"),
    (["--max-skip", "-1"], "--max-skip"),
    (["--selector-ratio", "0.5"], "--selector-ratio"),
    (["--selector-target", "nan"], "--selector-target"),
    (["--tau-high", "0.1"], "--tau-high"),  # the collector's rule: above tau_low (0.2)
    (["--capacity", "4"], "--capacity"),  # the collector's rule: >= k
    (["--strategy", "ds", "--probe", "9"], "--probe"),  # checked whichever strategy runs
    (
        ["--strategy", "sara-dps", "--task-size", "8", "--selector-ratio", "0.9"],
        "--selector-ratio",
    ),
    (["--task", "bogus"], "--task"),
    (["--strategy", "bogus"], "--strategy"),
    (["--task-size", "0"], "--task-size"),
    (["--task", "math", "--task-size", "5"], "--task-size"),
    (["--task-path", "x.jsonl"], "--task-path"),  # only math reads a file
    (["--strategy", "sara-history"], "--task-size"),
    (["--strategy", "sara-dps", "--task", "countdown"], "--task-size"),
    (["--strategy", "mopps"], "--task-size"),  # the peers' selectors learn from revisits too
    (["--model", "/nonexistent/model"], "--model"),
    (["--out", "/proc/nope"], "--out"),
    (["--resume", "--overwrite"], "--resume"),
    (["--eval-size", "0"], "--eval-size"),
    (["--task", "math", "--eval-size", "8"], "--eval-size"),  # math reads its held-out set
    (["--eval-size", "100", "--eval-problems", "101"], "--eval-problems"),
    (["--task-seed", "-1"], "--task-seed"),
    (["--audit-abandoned", "-1"], "--audit-abandoned"),
    (["--schedule", "bogus"], "--schedule"),
    (["--max-inflight", "9"], "--max-inflight"),  # in [0, k]
    (["--max-inflight", "-1"], "--max-inflight"),
    (["--overprovision", "0.5"], "--overprovision"),
    (["--overprovision", "nan"], "--overprovision"),
    (["--request-cost", "-1"], "--request-cost"),
    (["--request-cost", "1"], "--request-cost"),  # sara's tau rule has no price: sara-auto's
    (["--strategy", "sara-auto", "--request-cost", "1", "--probe", "2"], "--request-cost"),
    (["--schedule", "stream", "--strategy", "uniform"], "--schedule"),
    (["--priced-in", "bytes"], "--priced-in"),
    (TOKENS, "--priced-in"),  # sara's tau rule has no price to put in tokens
    (["--strategy", "ds", "--priced-in", "tokens"], "--priced-in"),  # nor DS's whole groups
    (["--strategy", "mopps", "--task-size", "8", "--priced-in", "tokens"], "--priced-in"),
    (["--strategy", "sara-history", "--task-size", "8", "--rule", "tau", *TOKENS], "--priced-in"),
    (["--trainer", "trl", "--strategy", "ds", "--priced-in", "tokens"], "--priced-in"),
    (["--trainer", "trl", "--schedule", "stream", "--strategy", "uniform"], "--schedule"),
    (["--trainer", "trl", "--schedule", "rows"], "--schedule"),
]


@pytest.mark.parametrize("args,flag", VALIDATE_BAD, ids=[" ".join(a) for a, _ in VALIDATE_BAD])
def test_validate_bad_input_is_one_line(args, flag, tmp_path, capsys):
    out = ["--out", str(tmp_path / "run")] if "--out" not in args else []
    err = _bad(["validate", *out, *args], capsys)
    assert flag in err
    assert not (tmp_path / "run").exists()  # nothing written


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
    # no checkpoint: --resume would be refused, so only --overwrite is offered (no circle)
    assert "before its first checkpoint" in err and "--overwrite" in err and "--resume" not in err
    assert (out / "metrics.jsonl").read_text() == '{"step": 0}\n'
    err = _bad(["validate", "--resume", "--out", str(out)], capsys)
    assert "before its first checkpoint" in err and "--overwrite starts it over" in err


def test_compare_bad_input(tmp_path, capsys):
    out = str(tmp_path / "cmp")
    assert "--strategies" in _bad(["compare", "--strategies", ",", "--out", out], capsys)
    assert "twice" in _bad(["compare", "--strategies", "ds,ds", "--out", out], capsys)
    assert "'bogus'" in _bad(["compare", "--strategies", "ds,bogus", "--out", out], capsys)
    # each strategy's own settings are checked before the first run starts
    err = _bad(["compare", "--strategies", "ds,sara-history", "--out", out], capsys)
    assert "--task-size" in err
    err = _bad(["compare", "--strategies", "ds,sara", "--resume", "--out", out], capsys)
    assert "no compare" in err
    assert not Path(out).exists()


def test_compare_into_a_used_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "cmp"
    (out / "sara").mkdir(parents=True)
    (out / "sara" / "metrics.jsonl").write_text('{"step": 0}\n')
    err = _bad(["compare", "--strategies", "ds,sara", "--out", str(out)], capsys)
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
    assert "--preset: must be one of default, graded" in _bad(
        ["make-tiny", "--preset", "x"], capsys
    )
    err = _bad(["make-tiny", "--preset", "reasoning", "--test-size"], capsys)
    assert err.endswith("--test-size: is --preset test; it cannot go with --preset reasoning")


@pytest.mark.parametrize(
    "argv, settings",
    [
        ([], "default"),
        (["--test-size"], "test"),
        (["--preset", "reasoning-long"], "reasoning_long"),
        (["--preset", "graded"], "graded"),
        (["--preset", "test", "--test-size"], "test"),
    ],
)
def test_make_tiny_builds_the_preset_named(argv, settings, monkeypatch, capsys):
    """--preset picks the TinySettings constructor the benchmarks and docs name (the model a
    `--task reasoning-long` run needs is `make-tiny --preset reasoning-long`)."""
    import real.app.cli as cli
    from real.models.tiny import TinySettings

    built = []

    class Built(Exception):
        pass

    def fake_build(out, s, progress, overwrite):
        built.append(s)
        raise Built

    monkeypatch.setattr(cli, "build_tiny", fake_build)
    with pytest.raises(Built):
        cli.cmd_make_tiny(
            cli.config_of(cli.TinyConfig, cli.build_parser().parse_args(["make-tiny", *argv]))
        )
    want = TinySettings() if settings == "default" else getattr(TinySettings, settings)()
    assert built == [want]


def test_a_locked_folder_is_refused(tmp_path, capsys):
    """A live run holds OUT/.lock; a second run on OUT is refused, naming the holder's pid."""
    out = tmp_path / "run"
    code = (
        "import sys, time; from real.io.runlog import RunLock; "
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
    from real.io.runlog import lock_holder

    deadline = time.time() + 10
    while lock_holder(out) is not None and time.time() < deadline:
        time.sleep(0.1)
    assert lock_holder(out) is None


def test_no_torch_or_vllm_before_a_bad_flag_is_reported():
    """The checks run before the heavy imports (a bad flag costs a second, not an engine)."""
    code = (
        "import sys; from real.app.cli import main; rc = main(['validate', '--lr', 'nan']); "
        "print(rc, 'vllm' in sys.modules, 'torch' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.stdout.split() == ["2", "False", "False"], r.stderr
    assert r.stderr.strip().endswith("--lr: must be a finite number in (0, 1], got nan")


def _help(capsys, *argv) -> str:
    """`sara-real ARGV --help` as a user reads it (on one line: wrapping differs by width)."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_is_derived_from_the_config(capsys):
    """Every leaf field of Config and its sections is a flag whose help is the field's docstring
    and shows its default (written once, in real/base/config.py); every strategy is listed."""
    from dataclasses import fields, is_dataclass

    from real.app.cli import NOT_FLAGS, field_docs, run_config
    from real.base.config import (
        STRATEGIES,
        Config,
        EngineConfig,
        GRPOConfig,
        StrategyConfig,
        flag_of,
    )

    leaves = []
    for cls in (Config, GRPOConfig, StrategyConfig, EngineConfig):
        docs = field_docs(cls)
        for f in fields(cls):
            assert docs.get(f.name), f"{cls.__name__}.{f.name} has no docstring"
            if not is_dataclass(f.type) and f.name not in NOT_FLAGS:
                leaves.append((f, docs[f.name]))
    assert len({f.name for f, _ in leaves}) == len(leaves)  # leaf names (flags) are unique
    for cmd in ("validate", "compare"):
        text = _help(capsys, cmd)
        for name in STRATEGIES:
            assert name in text, (cmd, name)
        for f, doc in leaves:
            shown = f"(default: {f.default})" if not callable(f.default) else ""
            if f.default is True:  # --no-NAME switches it off: "(default: True)" would mislead
                shown = f"switch off: {doc} (on without this flag)"
            assert f"{flag_of(f.name, f.default)} " in text, (cmd, f.name)
            assert f"{doc}" in text and shown in text, (cmd, f.name)
    assert "--no-std" in text and "--bf16-autocast" in text and "--no-progress" in text
    assert "(default: True)" not in text
    assert "PPO clip above (clip-higher; = eps_low for symmetric) (default: 0.28)" in text
    cfg = run_config(build_parser().parse_args(["validate"]))
    assert cfg == Config(out=cfg.out)  # every parsed default is the dataclass default


@pytest.mark.parametrize("cmd", ["audit", "serve", "make-tiny"])
def test_other_commands_take_their_flags_from_their_configs(cmd, capsys):
    """audit, serve and make-tiny: one flag per field of their config dataclass, with its
    docstring and its default in --help, and the parsed defaults are the dataclass's."""
    from dataclasses import fields

    from real.app.audit import AuditConfig
    from real.app.cli import TinyConfig, config_of, field_docs
    from real.base.config import flag_of
    from real.sampling.serve import ServeConfig

    cls = {"audit": AuditConfig, "serve": ServeConfig, "make-tiny": TinyConfig}[cmd]
    text, docs = _help(capsys, cmd), field_docs(cls)
    for f in fields(cls):
        assert docs.get(f.name), f"{cls.__name__}.{f.name} has no docstring"
        assert f"{flag_of(f.name, f.default)} " in text and docs[f.name] in text, f.name
        shown = "(onwithoutthisflag)" if f.default is True else f"(default:{f.default})"
        assert shown in text.replace(" ", ""), f.name  # a long one wraps
    assert config_of(cls, build_parser().parse_args([cmd])) == cls()


def test_renamed_flags_keep_their_old_spelling(capsys):
    """--allocator / --allocators still work as --strategy / --strategies and say so in one line
    on stderr; --help names only the new spellings."""
    from real.app.cli import run_config

    p = build_parser()
    a = p.parse_args(["validate", "--allocator", "ds"])
    assert run_config(a).strategy == "ds"
    assert capsys.readouterr().err == "--allocator is deprecated; use --strategy\n"
    a = p.parse_args(["compare", "--allocators=ds,sara"])
    assert a.strategies == "ds,sara"
    assert capsys.readouterr().err == "--allocators is deprecated; use --strategies\n"
    assert main(["validate", "--allocator", "bogus", "--out", "/tmp/unused"]) == 2
    note, err = capsys.readouterr().err.strip().splitlines()  # the note, then the one-line error
    assert note.endswith("use --strategy") and "--strategy: unknown strategy 'bogus'" in err
    for cmd in ("validate", "compare"):
        assert "allocator" not in _help(capsys, cmd)


def test_every_strategy_knob_reaches_the_collector():
    """Each StrategyConfig flag lands in the collector check_config builds for the run."""
    from real.app.cli import run_config
    from real.app.run import check_config

    argv = ["--task-size", "16", "--probe", "2", "--increment", "3", "--max-rounds", "7"]
    argv += ["--eb-window", "2", "--rule", "tau", "--rho", "0.5", "--kappa", "2", "--explore"]
    argv += ["0.25", "--max-skip", "5", "--selector-ratio", "2.5", "--selector-target", "0.4"]
    argv += ["--tau-low", "0.1", "--tau-high", "0.9", "--prior", "2,3", "--capacity", "40"]
    p = build_parser()
    a = p.parse_args(["validate", "--strategy", "sara-mopps", "--out", "/tmp/unused", *argv])
    col = check_config(run_config(a)).collector
    assert (col.probe, col.increment, col.max_rounds, col.eb_window) == (2, 3, 7, 2)
    assert (col.tau_low, col.tau_high, col.prior, col.capacity, col.rule) == (
        0.1,
        0.9,
        (2.0, 3.0),
        40,
        "tau",
    )
    h, sel = col.informed, col.selector
    assert (h.rho, h.kappa, h.explore, h.max_skip) == (0.5, 2.0, 0.25, 5)
    assert (sel.kind, sel.ratio, sel.target) == ("mopps", 2.5, 0.4)
    for name in ("sara-auto", "sara-history", "sara-mopps", "sara-dps"):  # the priced plans
        a = p.parse_args(
            [
                "validate",
                "--strategy",
                name,
                *"--task-size 16 --priced-in tokens --out /tmp/unused".split(),
            ]
        )
        assert check_config(run_config(a)).collector.priced_in == "tokens", name
    ds = ["validate", "--strategy", "ds", "--out", "/tmp/unused"]
    a = p.parse_args([*ds, "--gen-batch-size", "5", "--max-num-gen-batches", "3"])
    col = check_config(run_config(a)).collector
    assert (col.gen_batch_size, col.max_num_gen_batches) == (5, 3)


def test_config_doctests():
    import doctest

    import real.base.config

    assert doctest.testmod(real.base.config).failed == 0


OTHER_BAD = [
    # values argparse cannot parse: its own one-line error
    (["validate", "--k", "1e20"], "--k"),
    (["validate", "--k", "2.5"], "--k"),
    (["validate", "--seed", "x"], "--seed"),
    (["validate", "--prior", "a,b"], "--prior"),
    (["validate", "--bogus-flag"], "--bogus-flag"),
    # audit and serve
    (["audit", "--seed", "-1"], "--seed"),
    (["audit", "--out", "/proc/nope"], "--out"),
    (["audit", "--prompts", "0"], "--prompts"),
    (["audit", "--train-steps", "-1"], "--train-steps"),
    (["audit", "--temperature", "nan"], "--temperature"),
    (["audit", "--engine-url", "localhost"], "--engine-url"),
    (["audit", "--groups", "0"], "--groups"),
    (["serve", "--seed", "-1"], "--seed"),  # checked before the process becomes a server
    (["serve", "--dtype", "bogus"], "--dtype"),
    (["serve", "--port", "0"], "--port"),
]


@pytest.mark.parametrize("args,flag", OTHER_BAD, ids=[" ".join(a) for a, _ in OTHER_BAD])
def test_other_bad_input_is_one_line(args, flag, capsys):
    try:
        rc = main(args)
    except SystemExit as e:  # argparse's own error (also one line: real.app.cli.Parser)
        rc = e.code
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert flag in err


def test_resume_compares_the_saved_config_setting_by_setting(tmp_path, capsys):
    """A checkpoint's config is asdict(Config): compared setting by setting with the resumed
    run's; a changed one is named, one line."""
    from dataclasses import asdict

    import torch

    from real.app.resume import check_same_run
    from real.base.config import Config

    cfg = Config.from_flat({"out": str(tmp_path / "run"), "lr": 5e-4, "probe": 2})
    for saved in (asdict(cfg), json_like(asdict(cfg))):
        check_same_run(saved, cfg)  # the same experiment: no error
    with pytest.raises(Exception, match=r"lr=0\.0005 \(now 0\.001\)"):
        check_same_run(asdict(cfg), Config.from_flat({**cfg.flat(), "lr": 1e-3}))
    with pytest.raises(Exception, match="unknown settings bogus"):
        check_same_run({**asdict(cfg), "bogus": 1}, cfg)
    with pytest.raises(Exception, match="unknown settings .*lr"):
        check_same_run(cfg.flat(), cfg)  # a section's setting outside its section
    # through the CLI: a checkpoint resumed with another --eps-high
    out = tmp_path / "run"
    out.mkdir()
    torch.save({"step": 0, "config": asdict(cfg)}, out / "checkpoint.pt")
    base = ["validate", "--resume", "--out", str(out), "--lr", "5e-4", "--probe", "2"]
    err = _bad([*base, "--eps-high", "0.2"], capsys)
    assert "--resume" in err and "eps_high=0.28 (now 0.2)" in err


def json_like(d):
    import json

    return json.loads(json.dumps(d))  # tuples become lists, as in config.json


@pytest.mark.parametrize("cmd", ["validate", "compare", "audit", "serve", "make-tiny"])
def test_every_seed_flag_has_the_same_bounds(cmd, tmp_path, capsys):
    """One range for every seed (real.base.config.SEED_MAX), said the same way by each command."""
    from real.base.config import SEED_MAX

    out = [] if cmd == "serve" else ["--out", str(tmp_path / "out")]
    for bad in ("-1", str(SEED_MAX + 1)):
        err = _bad([cmd, "--seed", bad, *out], capsys)
        assert f"--seed: must be an integer in [0, {SEED_MAX}], got {bad}" in err, err
