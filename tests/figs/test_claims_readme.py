"""benchmarks/README.md's two claim tables are pasted outputs of benchmarks/claims.py: each
must be what the command prints from the committed claim files (benchmarks/results/claims), so a
changed claim file, statistic or verdict rule cannot leave the README quoting old numbers."""

import difflib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "benchmarks" / "README.md"


def readme_block(text: str, tag: str) -> list[str]:
    """The lines between `<!-- TAG: ... -->` and `<!-- /TAG -->` (each marker exactly once)."""
    opens = re.findall(rf"^<!-- {tag}:.*-->$", text, re.M)
    closes = re.findall(rf"^<!-- /{tag} -->$", text, re.M)
    assert len(opens) == 1 and len(closes) == 1, f"{README}: want one {tag} block and its close"
    body = text.split(opens[0] + "\n", 1)[1].split(f"<!-- /{tag} -->", 1)[0]
    return body.splitlines()


def command_lines(argv: list[str], capsys) -> list[str]:
    """What `python benchmarks/claims.py ARGV` prints, run in this process (no new
    interpreter: the claim files are a few seconds to load, an interpreter more)."""
    spec = importlib.util.spec_from_file_location("claims_cmd", ROOT / "benchmarks/claims.py")
    cmd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmd)
    capsys.readouterr()  # drop anything printed before the command
    assert cmd.main(argv) == 0
    out = capsys.readouterr()
    assert out.err == "", f"claim files missing from the commit: {out.err}"
    return out.out.splitlines()


BLOCKS = [("claims-table", []), ("claims-budget", ["--budget"])]  # README tag, command flags


@pytest.mark.parametrize(("tag", "argv"), BLOCKS, ids=["table", "budget"])
def test_the_readme_tables_are_the_commands_output_on_the_committed_files(tag, argv, capsys):
    pasted = readme_block(README.read_text(), tag)
    fresh = command_lines(argv, capsys)
    if pasted != fresh:
        diff = "\n".join(difflib.unified_diff(pasted, fresh, "README", "command", lineterm=""))
        command = " ".join(["python benchmarks/claims.py", *argv])
        pytest.fail(
            f"benchmarks/README.md's {tag} block is stale: rerun `{command}` and paste its "
            f"output between the {tag} markers\n{diff}"
        )


def test_a_block_is_read_between_its_own_markers():
    text = "x\n<!-- t: out -->\n| a |\n| b |\n<!-- /t -->\n<!-- u: out -->\n| c |\n<!-- /u -->\n"
    assert readme_block(text, "t") == ["| a |", "| b |"]
    assert readme_block(text, "u") == ["| c |"]
