"""Model resolution: a local HF directory, a cached hub id, or (None) the tiny default built on
demand (`real.models.tiny`). Downloads are off (real.base.env)."""

from pathlib import Path

from real.base import env as _env  # noqa: F401  (HF_HOME before huggingface_hub is imported)
from real.models import tiny  # the module, so a test may swap build_tiny in it
from sara_sim.core.errors import ParameterError


def resolve_model(model, progress: bool = False, build: bool = True):
    """A local HF directory, a hub id already in the local cache, or (None) the tiny default."""
    if model is None:
        if not build:
            return None
        return tiny.build_tiny(progress=progress)
    p = Path(model).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ParameterError(
                "--model", f"{model} is a directory without config.json (not an HF-format model)"
            )
        return p
    if p.exists():
        raise ParameterError("--model", f"{model} is a file, not a model directory")
    if _in_hub_cache(str(model)):
        return str(model)
    raise ParameterError(
        "--model",
        f"no model directory {model!r}, and no cached hub model of that name (downloads are off)",
    )


def _in_hub_cache(repo_id: str) -> bool:
    if repo_id.count("/") != 1 or repo_id.startswith((".", "/", "~")):
        return False
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a malformed id is simply not cached
        return False
