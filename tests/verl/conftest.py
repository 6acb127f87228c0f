"""verl's tests run in verl's own environment (`bash scripts/setup.sh --verl`: .venv-verl), with
the tiny model served by a real vLLM server of the project's main environment (.venv, or the
python named by SARA_MAIN_PYTHON), started and stopped here by pid; the two talk over 127.0.0.1."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def main_python() -> Path:
    return Path(os.environ.get("SARA_MAIN_PYTHON", ROOT / ".venv" / "bin" / "python"))


@pytest.fixture(scope="session")
def tiny_dir():
    """The test-size tiny model, built (or found in the project cache) by the main environment."""
    py = main_python()
    out = subprocess.run(
        [str(py), "-m", "real.app.cli", "make-tiny", "--test-size"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    import json

    return Path(json.loads(out.stdout.strip().splitlines()[-1])["model"])


@pytest.fixture(scope="session")
def server_url(tiny_dir, tmp_path_factory):
    """One real vLLM server of the tiny model (main environment), stopped with its process group."""
    from real.sampling.serve import free_port, stop_server, wait_ready

    log = tmp_path_factory.mktemp("server") / "server.log"
    port = free_port()
    cmd = [str(main_python()), "-m", "real.app.cli", "serve", "--model", str(tiny_dir)]
    cmd += ["--port", str(port), "--max-model-len", "256"]
    with open(log, "ab") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log=log)
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def ray_session():
    """A local Ray (and TransferQueue, once a trainer starts it), shut down after the test."""
    from real.verl import toy

    toy.start_ray()
    try:
        yield
    finally:
        toy.stop_ray()


@pytest.fixture
def dataset(tmp_path):
    from real.verl import toy

    return toy.write_dataset(tmp_path / "train.parquet", 64)


sys.dont_write_bytecode = True
