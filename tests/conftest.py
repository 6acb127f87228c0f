"""Shared fixtures: the real outcome histories are the ones shipped in sara_sim/data."""

import pytest

from sara_sim.core.difficulty import builtin_history


@pytest.fixture(scope="session")
def history_path():
    path = builtin_history("deepscaler")
    assert path.is_file(), f"expected the packaged histories at {path}"
    return path
