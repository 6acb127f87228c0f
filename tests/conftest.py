"""Shared fixtures: the real outcome histories live in ../shared/data beside the repository."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO.parent / "shared" / "data" / "deepscaler_pass_history.csv"


@pytest.fixture(scope="session")
def history_path():
    assert HISTORY.is_file(), f"expected the shipped histories at {HISTORY}"
    return HISTORY
