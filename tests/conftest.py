"""Shared fixtures: the real outcome histories are the ones shipped in sara_sim/data."""

import importlib.metadata
from pathlib import Path

import pytest

from sara_sim.core.difficulty import builtin_history


@pytest.fixture(scope="session")
def history_path():
    path = builtin_history("deepscaler")
    assert path.is_file(), f"expected the packaged histories at {path}"
    return path


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
