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
