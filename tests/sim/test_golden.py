"""Every number stays the same: the simulator, theory and collector results recorded in
``golden_sim.json`` (``python -m tests.sim.golden --write``) are recomputed and compared
(``golden.same``: exactly, floats to 1e-12 relative)."""

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
        if not golden.same(got, recorded[key]):
            changed.append(key)
    assert not changed, f"{len(changed)} of {len(cases)} cases changed, e.g. {changed[:5]}"


def test_golden_file_covers_every_case(recorded):
    """No stale rows: the file holds exactly the generator's cases."""
    assert set(recorded) == {key for key, _ in golden.all_cases()}


def test_same_is_exact_but_for_float_rounding():
    assert golden.same({"a": [0.3, 2, "x"]}, {"a": [0.1 + 0.2, 2, "x"]})  # 1 ulp apart
    assert not golden.same([0.3], [0.3 * (1 + 1e-10)])  # a real change
    assert not golden.same([1.0, 2.0], [1.0])  # a lost entry
    assert not golden.same({"a": 1}, {"a": 1, "b": 2}) and not golden.same(1, 2)
    assert not golden.same(75.0, 64.0) and not golden.same("nan", 0.0)


def test_encoding_is_exact():
    x = 0.1 + 0.2
    back = golden.json.loads(golden.json.dumps(golden.enc([x, float("nan"), 3])))
    assert back[0] == x and back[0] != 0.3 and back[1] == "nan" and back[2] == 3
