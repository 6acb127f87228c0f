"""Model resolution: a local HF directory, a cached hub id, or (None) the tiny default built on
demand (`real.models.tiny`). Downloads are off (real.base.env)."""

import json
import math
import os
import zipfile
from pathlib import Path

from real.base import env as _env  # noqa: F401  (HF_HOME before huggingface_hub is imported)
from real.models import tiny  # the module, so a test may swap build_tiny in it
from sara_sim.core.errors import ParameterError
from sara_sim.core.files import check_input, read_input


def resolve_model(model, progress: bool = False, build: bool = True):
    """A local HF directory, a hub id already in the local cache, or (None) the tiny default;
    its folder checked (`check_model_dir`) before any engine or model loads it."""
    if model is None:
        if not build:
            return None
        folder = tiny.build_tiny(progress=progress)
        check_model_dir(
            folder, "--model", f"the default tiny model at {folder} (remove it to rebuild it)"
        )
        return folder
    p = Path(model).expanduser()
    if os.path.lexists(p):
        check_input(p, "--model", "model directory", folder=True)  # a file, FIFO, dangling link
        check_model_dir(p, "--model")
        return p
    snapshot = _in_hub_cache(str(model))
    if snapshot is not None:
        check_model_dir(snapshot, "--model", f"the cached hub model {model} ({snapshot})")
        return str(model)
    raise ParameterError(
        "--model",
        f"no model directory {model!r}, and no cached hub model of that name (downloads are off)",
    )


# bytes per element of each safetensors dtype (the format's own names)
_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2,
                "F16": 2, "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8,
                "F64": 8}  # fmt: skip
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
           "pytorch_model.bin.index.json")  # fmt: skip
TOKENIZER = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def check_model_dir(folder, flag: str = "--model", name: str | None = None) -> None:
    """An HF model folder an engine can load: config.json (a JSON object), a tokenizer (one of
    TOKENIZER; the JSON ones parse), and complete weights (one of WEIGHTS: every safetensors
    file's header parses and its tensors' sizes add up to the file's size; a shard index names
    only shards that are there and complete; a .bin is a readable zip). One line naming `flag`
    and the file otherwise: never a traceback after an engine has spent its start-up."""
    folder = Path(folder)
    name = name or str(folder)

    def bad(why):
        raise ParameterError(flag, f"{name} is not a complete model folder: {why}")

    _json_file(folder / "config.json", flag, bad)
    tokenizer = [f for f in TOKENIZER if os.path.lexists(folder / f)]
    if not tokenizer:
        bad(f"no tokenizer ({', '.join(TOKENIZER)})")
    for f in tokenizer:
        if f.endswith(".json"):
            _json_file(folder / f, flag, bad)
        else:
            check_input(folder / f, flag, "tokenizer file")
    weights = [f for f in WEIGHTS if os.path.lexists(folder / f)]
    if not weights:
        bad(f"no weights ({', '.join(WEIGHTS)})")
    for f in weights:
        if f.endswith(".index.json"):
            index = _json_file(folder / f, flag, bad)
            shards = sorted(set((index.get("weight_map") or {}).values()))
            if not shards:
                bad(f"{f} names no shard")
            for shard in shards:
                _check_weights(folder / shard, flag, bad)
        else:
            _check_weights(folder / f, flag, bad)


def _json_file(path: Path, flag: str, bad) -> dict:
    if not os.path.lexists(path):
        bad(f"no {path.name}")
    try:
        data = json.loads(read_input(path, flag, path.name).decode("utf-8"))
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError included
        bad(f"{path.name} is not JSON ({e})")
    if not isinstance(data, dict):
        bad(f"{path.name} is not a JSON object")
    return data


def _check_weights(path: Path, flag: str, bad) -> None:
    """A safetensors file whose header parses and whose tensors fill it exactly (a truncated
    copy is shorter), or a .bin that opens as a zip (its directory is at the end)."""
    check_input(path, flag, "weights file")
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            if path.suffix == ".bin":
                zipfile.ZipFile(f).close()
                return
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 2 <= n <= size - 8:
                bad(f"{path.name} is truncated or not safetensors ({size} bytes)")
            header = json.loads(f.read(n))
    except (ValueError, zipfile.BadZipFile) as e:
        bad(f"{path.name} is damaged ({e})")
    except OSError as e:
        raise ParameterError(flag, f"cannot read {path}: {e.strerror or e}") from None
    end = 0
    for key, t in header.items():
        if key == "__metadata__":
            continue
        try:
            lo, hi = t["data_offsets"]
            count = math.prod(t["shape"])
        except (KeyError, TypeError, ValueError):
            bad(f"{path.name}: tensor {key} has no valid shape and offsets")
        width = _DTYPE_BYTES.get(t.get("dtype"))
        if width is not None and hi - lo != count * width:
            bad(f"{path.name}: tensor {key} holds {hi - lo} bytes, its shape needs {count * width}")
        end = max(end, hi)
    if 8 + n + end != size:
        bad(f"{path.name} is truncated: {size} bytes, its header describes {8 + n + end}")


def _in_hub_cache(repo_id: str) -> Path | None:
    """The snapshot folder of a hub id in the local cache, or None."""
    if repo_id.count("/") != 1 or repo_id.startswith((".", "/", "~")):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # a malformed id is simply not cached
        return None
    return Path(found).parent if isinstance(found, str) else None
