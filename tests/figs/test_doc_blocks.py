"""The docs' generated blocks (paper_figs.doc_blocks): every block is what its generator gives now
from the shipped histories and the committed results, so a changed result, statistic or verdict
rule cannot leave a doc quoting old numbers; the markers are read strictly."""

import pytest

from paper_figs.doc_blocks import BLOCKS, blocks, docs, main, render, stale


def test_every_block_of_the_docs_is_what_its_generator_gives():
    diffs = stale()
    assert not diffs, "stale blocks (python -m paper_figs.doc_blocks rewrites them):\n" + "\n".join(
        diffs
    )


def test_every_generator_has_its_block_in_the_docs():
    used = [name for path in docs() for name, _ in blocks(path.read_text())]
    assert sorted(used) == sorted(BLOCKS)  # each once, none unused


def test_a_block_is_rewritten_between_its_own_markers_and_nothing_else():
    text = (
        "x\n<!-- claims-table: t -->\n| a |\n<!-- /claims-table -->\nprose\n"
        "<!-- claims-budget: u -->\n<!-- /claims-budget -->\n"
    )
    assert blocks(text) == [("claims-table", "| a |\n"), ("claims-budget", "")]
    out = render(text, {"claims-table": ["| b |"], "claims-budget": ["| c |", "| d |"]})
    assert out == (
        "x\n<!-- claims-table: t -->\n| b |\n<!-- /claims-table -->\nprose\n"
        "<!-- claims-budget: u -->\n| c |\n| d |\n<!-- /claims-budget -->\n"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("<!-- nope: x -->\n<!-- /nope -->\n", "unknown block 'nope'"),
        ("<!-- claims-table: x -->\n| a |\n", "not closed"),
        ("<!-- claims-table: x -->\n| a | <!-- /claims-table -->\n", "not closed"),
        ("<!-- claims-table: x -->\n<!-- /claims-table -->\n" * 2, "more than once"),
    ],
)
def test_a_malformed_block_is_an_error_naming_it(text, why):
    with pytest.raises(ValueError, match=why):
        blocks(text)


def test_recompute_refuses_an_unknown_name_in_one_line(capsys):
    assert main(["--recompute", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "doc_blocks: error: --recompute: unknown nope"


def test_the_real_tokens_block_is_each_run_row_by_row(tmp_path, monkeypatch):
    """real-tokens: the command of each committed stream_real run (its settings from its meta),
    then a row per strategy from the run's totals and its ratios to DS streamed; undefined is
    '-', and the goal is met only by a whole interval at or below 0.70 with every group
    effective."""
    import json

    from paper_figs import doc_blocks

    def row(eff, groups, drawn, tokens):
        return {"rollouts": 12 * eff, "tokens": tokens, "eff": eff, "groups": groups,
                "prompts_drawn": drawn, "wall": 90.0}  # fmt: skip

    meta = {"task": "reasoning-long", "task_size": 16, "k": 8, "groups": 4, "steps": 2}
    meta |= {"warmup": 1, "seed": 0, "strategies": "tokens"}
    run = {
        "meta": meta,
        "rows": {
            "ds stream": row(8, 8, 24, 4000),
            "a": row(8, 8, 40, 2400),
            "b": row(8, 9, 40, 2400),
            "c": row(0, 0, 8, 0),
        },
        "against_ds_stream": {
            "ds stream": {"rollouts": [1, 1, 1], "tokens": [1, 1, 1], "eff_frac": 1.0},
            "a": {"rollouts": [0.8, 0.7, 0.9], "tokens": [0.6, 0.55, 0.65], "eff_frac": 1.0},
            "b": {"rollouts": [0.8, 0.7, 0.9], "tokens": [0.6, 0.55, 0.65], "eff_frac": 8 / 9},
            "c": {"rollouts": None, "tokens": None, "eff_frac": None},
        },
    }
    (tmp_path / "one.json").write_text(json.dumps(run))
    monkeypatch.setattr(doc_blocks, "STREAM_REAL", tmp_path)
    monkeypatch.setattr(doc_blocks, "REAL_TOKENS", ("one.json",))
    lines = doc_blocks.real_tokens()
    assert lines[0].startswith(f"The model (built once, cached): `{doc_blocks.LONG_MODEL}` (")
    assert lines[0].endswith("MODEL below); then, per row group below:") and lines[1] == ""
    assert lines[2].startswith('- `.venv/bin/python benchmarks/stream_real.py --model "$MODEL" ')
    assert "--task-size 16 --k 8 --groups 4 --steps 2 --warmup 1 --seed 0" in lines[2]
    assert "--strategies tokens --out benchmarks/results/stream_real/one.json`" in lines[2]
    assert lines[2].endswith("(~6 min of collection here)") and lines[3] == ""  # 4 x 90 s
    cells = {line.split(" | ")[2]: line.strip("| ").split(" | ") for line in lines[6:11]}
    one = "1.00 [1.00, 1.00]"
    assert cells["ds stream"][3:] == ["12.00", "500.0", "1.00", "1.5", one, one, "-"]
    interval = ["0.80 [0.70, 0.90]", "0.60 [0.55, 0.65]"]
    assert cells["a"][3:] == ["12.00", "300.0", "1.00", "2.5", *interval, "met"]
    assert cells["b"][5] == "0.89" and cells["b"][-1] == "MISSED"  # a group not effective
    assert cells["c"][3:] == ["-", "-", "-", "0.5", "-", "-", "MISSED"]
    # the floor: k rollouts in every effective group, over DS streamed's 12 (no token floor:
    # a strategy may prefer the prompts whose traces are short)
    floor = cells["the floor: k rollouts in every effective group"]
    assert floor[3:] == ["8.00", "-", "-", "-", "0.67", "-", "-"]
    assert len(lines) == 11 + 2
