"""Nothing lost, nothing misleading through TRL: a full disk while TRL writes its own
checkpoint is one line naming the folder, and every metrics line is strict JSON (undefined
numbers null) — on the tiny model, the real in-process engine and a real tmpfs."""

import json
import math
import shutil

import pytest

import real.rollout.collect
from real.app.cli import main
from real.io.runlog import append_metrics, read_metrics

COMMON = ["--trainer", "trl", "--k", "4", "--groups", "4", "--eval-every", "2", "--no-progress",
          "--eval-problems", "8", "--eval-samples", "2", "--ckpt-every", "1"]  # fmt: skip


def _strict(line: str) -> dict:
    def refuse(word):
        raise ValueError(f"not strict JSON: {word}")

    return json.loads(line, parse_constant=refuse)


def test_an_undefined_metric_is_null_in_the_metrics_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    append_metrics(path, {"step": 0, "rollouts_per_effective_group": math.nan, "x": math.inf})
    row = _strict(path.read_text())
    assert row == {"step": 0, "rollouts_per_effective_group": None, "x": None}


@pytest.mark.integration
def test_a_full_disk_in_a_trl_checkpoint_is_one_line(
    tiny_dir, engine, hf_model, tmp_path, tmpfs, monkeypatch, capsys
):
    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)

    def cli(*args):
        capsys.readouterr()
        rc = main(["validate", "--model", str(tiny_dir), *COMMON, *args])
        err = capsys.readouterr().err.strip().splitlines()
        bars = ("Loading weights", "Writing model shards")  # transformers' own progress bars
        return rc, [e for e in err if e.strip() and not any(b in e for b in bars)]

    try:
        first = tmp_path / "first"
        assert cli("--steps", "1", "--out", str(first))[0] == 0
        (ckpt1,) = (first / "trl").glob("checkpoint-*")  # checkpoint-N, N = optimizer steps
        size = sum(p.stat().st_size for p in ckpt1.rglob("*") if p.is_file())
        whole = sum(p.stat().st_size for p in first.rglob("*") if p.is_file())
        disk = tmpfs.mount(f"{(whole + 2 * size) // 1024 + 512}k")
        out = disk / "run"
        shutil.copytree(first, out)
        filler = tmpfs.fill(disk, leave=size // 2)  # room for step 1's line, not its checkpoint
        rc, err = cli("--steps", "2", "--resume", "--out", str(out))
        assert rc == 1 and len(err) == 1, err
        ckpt2 = out / f"trl/checkpoint-{2 * int(ckpt1.name.split('-')[1])}"
        assert err[0].startswith(f"sara-real: error: cannot write {ckpt2}: No space left on device")
        assert not ckpt2.exists()  # the half-written checkpoint is not left to be resumed from
        filler.unlink()
        rc, err = cli("--steps", "2", "--resume", "--out", str(out))
        assert rc == 0, err
        lines = (out / "metrics.jsonl").read_text().splitlines()
        assert [_strict(x)["step"] for x in lines] == [0, 1]
        assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1]
    finally:
        engine.push_weights(hf_model)  # other tests expect the untrained weights


@pytest.mark.integration
def test_resume_skips_a_trl_checkpoint_cut_off_mid_save(
    tiny_dir, engine, hf_model, tmp_path, monkeypatch, capsys
):
    """A kill while TRL saves leaves a checkpoint-N folder without our marker (the metrics-row
    copy on_save writes last). A real SIGKILL inside TRL's save cannot be timed reliably, so the
    cut-off folder is simulated: the uninterrupted run's own next checkpoint, copied without the
    marker and with its weights truncated, plus that step's metrics line (written before the
    save). --resume sets it aside (kept, named incomplete-...) and continues from the last whole
    checkpoint, redoing the step with the uninterrupted run's numbers."""
    monkeypatch.setattr(real.rollout.collect, "make_engine", lambda cfg, model_dir: engine)
    common = ["validate", "--model", str(tiny_dir), *COMMON]
    try:
        full, cut = tmp_path / "full", tmp_path / "cut"
        assert main([*common, "--steps", "3", "--out", str(full)]) == 0
        assert main([*common, "--steps", "2", "--out", str(cut)]) == 0
        ckpts = sorted((cut / "trl").glob("checkpoint-*"), key=lambda p: int(p.name[11:]))
        last = 3 * int(ckpts[0].name[11:])  # global step of collection step 2's checkpoint
        half = cut / f"trl/checkpoint-{last}"
        shutil.copytree(full / f"trl/checkpoint-{last}", half)
        (half / "sara_metrics_row.json").unlink()
        weights = list(half.glob("*.safetensors"))
        assert weights  # the cut-off save's weights are truncated, not merely unmarked
        for f in weights:
            f.write_bytes(f.read_bytes()[:100])
        step2 = (full / "metrics.jsonl").read_text().splitlines()[2]
        with open(cut / "metrics.jsonl", "a") as fh:
            fh.write(step2 + "\n")
        capsys.readouterr()
        assert main([*common, "--steps", "3", "--resume", "--out", str(cut)]) == 0
        err = capsys.readouterr().err
        assert "set aside incomplete checkpoint(s)" in err and f"checkpoint-{last} ->" in err
        aside = cut / f"trl/incomplete-checkpoint-{last}"
        assert aside.is_dir() and not (aside / "sara_metrics_row.json").exists()  # kept as found
        assert (cut / f"trl/checkpoint-{last}/sara_metrics_row.json").is_file()  # written anew
        rows, want = read_metrics(cut / "metrics.jsonl"), read_metrics(full / "metrics.jsonl")
        assert [r["step"] for r in rows] == [0, 1, 2]
        timing = {k for k in want[2] if k.endswith("_s")}
        assert {k: v for k, v in rows[2].items() if k not in timing} == {
            k: v for k, v in want[2].items() if k not in timing
        }
    finally:
        engine.push_weights(hf_model)  # other tests expect the untrained weights
