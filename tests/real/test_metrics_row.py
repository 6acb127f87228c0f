"""The one metrics line (real.io.runlog.metrics_row), pass@1 and checkpoint-N naming, shared by the
native loop, the TRL run and the adapter."""

import pytest

from real.io.runfolder import checkpoint_dir, checkpoint_step
from real.io.runlog import METRICS_KEYS, READER_KEYS, TRL_KEYS, metrics_row, pass_at_1


def _values(**over):
    return {k: i for i, k in enumerate(METRICS_KEYS)} | over


def test_row_has_exactly_the_keys_in_order():
    row = metrics_row(_values())
    assert list(row) == list(METRICS_KEYS)
    assert "eval_accuracy" not in row and "eval_initial_wins" not in row
    trl = metrics_row(_values(trainer="trl", padded=0))
    assert list(trl) == list(METRICS_KEYS) + list(TRL_KEYS)


def test_row_refuses_a_missing_or_unknown_key():
    v = _values()
    del v["loss"]
    with pytest.raises(KeyError, match="missing \\['loss'\\]"):
        metrics_row(v)
    with pytest.raises(KeyError, match="unknown \\['collect_s'\\]"):
        metrics_row(_values(collect_s=1.0))


def test_row_evaluation_fields():
    row = metrics_row(_values(), eval_wins=[3, 0, 1], eval_samples=4, initial_wins=[1, 1, 1])
    assert row["eval_accuracy"] == pass_at_1([3, 0, 1], 4) == 4 / 12
    assert row["eval_wins"] == [3, 0, 1] and row["eval_initial_wins"] == [1, 1, 1]
    assert list(row)[-3:] == ["eval_accuracy", "eval_wins", "eval_initial_wins"]


def test_checkpoint_naming_round_trips(tmp_path):
    assert checkpoint_dir(tmp_path, 12) == tmp_path / "checkpoint-12"
    assert checkpoint_step(checkpoint_dir(tmp_path, 12)) == 12
    for name in ("incomplete-checkpoint-3", "checkpoint-", "checkpoint-x", "checkpoint-3-2"):
        assert checkpoint_step(tmp_path / name) is None


def test_reader_keys_are_on_every_line():
    """The notebook requires READER_KEYS: every line metrics_row writes has them."""
    assert set(READER_KEYS) <= set(METRICS_KEYS)
