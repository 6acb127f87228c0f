"""Every number stays the same: the simulator, theory and collector results recorded in
``golden_sim.json`` (``python -m tests.sim.golden --write``) are recomputed and compared exactly."""

import pytest

from tests.sim import golden

KINDS = ("sim", "theory", "collect")


@pytest.fixture(scope="module")
def recorded():
    return golden.load()


@pytest.mark.parametrize("kind", KINDS)
def test_golden_numbers_unchanged(kind, recorded):
    cases = [(key, fn) for key, fn in golden.all_cases() if key.split()[0] == kind]
    assert len(cases) >= 12
    missing = [key for key, _ in cases if key not in recorded]
    assert not missing, f"cases not recorded (run python -m tests.sim.golden --write): {missing}"
    changed = []
    for key, fn in cases:
        got = golden.json.loads(golden.json.dumps(fn()))
        if got != recorded[key]:
            changed.append(key)
    assert not changed, f"{len(changed)} of {len(cases)} cases changed, e.g. {changed[:5]}"


def test_golden_file_covers_every_case(recorded):
    """No stale rows: the file holds exactly the generator's cases."""
    assert set(recorded) == {key for key, _ in golden.all_cases()}


def test_encoding_is_exact():
    x = 0.1 + 0.2
    back = golden.json.loads(golden.json.dumps(golden.enc([x, float("nan"), 3])))
    assert back[0] == x and back[0] != 0.3 and back[1] == "nan" and back[2] == 3
