"""Shared fixtures: the real outcome histories are the ones shipped in sara_sim/data; the
repository's scripts (benchmarks/ is a folder of scripts, not a package) loaded by path."""

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from sara_sim.core.difficulty import builtin_history

REPO = Path(__file__).resolve().parents[1]
# what makes a test an integration test (pytest -m integration): a model built, an engine or a
# server started (tests/real/conftest.py), the main job run, a notebook kernel started
INTEGRATION_FIXTURES = {"tiny_dir", "hf_model", "engine", "shared_engine", "server_url", "servers"}
INTEGRATION_FIXTURES |= {"main_job", "notebook_kernel"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that asks for a model, an engine, a server, the main job or a notebook kernel but
    is not marked integration would slip into the fast tier: refuse the whole run, naming it."""
    unmarked = [
        item.nodeid
        for item in items
        if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("integration") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "mark these @pytest.mark.integration (they build a model, start an engine, a server "
            f"or a kernel, or run the main job): {', '.join(unmarked)}"
        )


@pytest.fixture(scope="session")
def history_path():
    path = builtin_history("deepscaler")
    assert path.is_file(), f"expected the packaged histories at {path}"
    return path


@pytest.fixture(scope="session")
def script():
    """load(path): the script at `path` (from the repository root) as a fresh module."""

    def load(path: str):
        spec = importlib.util.spec_from_file_location(Path(path).stem, REPO / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


class Tmpfs:
    """Real tmpfs mounts for the disk-full tests (we and CI run as root); unmounted at teardown."""

    def __init__(self, base: Path):
        self.base, self.mounted = base, []

    def mount(self, size: str = "1m", name: str = "disk") -> Path:
        import subprocess

        folder = self.base / name
        folder.mkdir()
        opts = f"size={size}"
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(folder)], check=True)
        self.mounted.append(folder)
        return folder

    @staticmethod
    def fill(folder: Path, leave: int) -> Path:
        """A filler file that leaves `leave` bytes free (tmpfs counts whole 4 KiB pages)."""
        import os

        st = os.statvfs(folder)
        filler = folder / "filler"
        filler.write_bytes(b"\0" * (st.f_bavail * st.f_frsize - leave))
        return filler

    def unmount_all(self) -> None:
        import subprocess

        for folder in reversed(self.mounted):
            if subprocess.run(["umount", str(folder)]).returncode:
                subprocess.run(["umount", "-l", str(folder)], check=True)  # a file still open
        self.mounted = []


@pytest.fixture
def tmpfs(tmp_path):
    disks = Tmpfs(tmp_path)
    try:
        yield disks
    finally:
        disks.unmount_all()


# verl's tests run in verl's own environment (scripts/test.sh: .venv-verl/bin/python -m pytest
# tests/verl); the main environment has no verl and never imports it
def _has_verl() -> bool:
    try:
        importlib.metadata.version("verl")  # the distribution (tests/verl is a "verl" folder too)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


collect_ignore = [] if _has_verl() else ["verl"]
