"""The code blocks of the pages users read — README.md and docs/*.md — and which test runs each.

Every fenced block names its language: ``bash`` and ``python`` are code, ``text`` is output or a
diagram. A block that cannot run on the test machines (a GPU, a model hub, an install) opens
with a visible comment line ``# check-only: WHY`` and is checked as far as the machine allows.
A ``text`` block whose preceding prose line ends with "prints:" is the output of the ``python``
block before it, compared exactly.

A bash block's commands (continuation lines joined, comments dropped) each have a kind, and the
kind names the test that runs them:

* ``sara-sim``   tests/sim/test_readme_commands.py (fast tier, small sizes)
* ``sara-real``  tests/real/test_real_readme_commands.py, servers' in tests/real/test_serve.py
                 (integration); a check-only one: tests/core/test_doc_code.py (parsed, checked)
* ``figures``    tests/sim/test_readme_commands.py (fast tier: `python -m paper_figs`, two figures)
* ``example``    tests/real/test_trl.py (integration: examples/trl_sara.py, accelerate launch)
* ``benchmark``  check-only: its script's own argument check (tests/core/test_doc_code.py)
* ``setup``      check-only: installs and set-up scripts (extras, scripts and their flags exist);
                 `bash scripts/run.sh` runs in tests/test_new_user.py on a clean clone
* ``verl``       check-only: verl's Hydra lines, composed into verl's config in tests/verl

A python block that imports the real half (`real`, `trl`, ...) runs in tests/real/test_trl.py
(integration); one of the core library only runs in tests/core/test_doc_code.py (fast tier).
"""

import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("bash", "python", "text")
VERL_MAIN = ["python3", "-m", "verl.trainer.main_ppo"]
CHECK_ONLY = "# check-only:"
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    page: str  # path from the repository root
    line: int  # the opening fence's line
    lang: str
    text: str
    check_only: str | None  # why, when the block opens with "# check-only: WHY"
    expected: str | None = None  # a python block's printed output (the "prints:" block after it)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(paths=None) -> list[Block]:
    """Every fenced block of the pages, in order."""
    out = []
    for path in paths or pages():
        text = path.read_text()
        found = []
        for m in FENCE.finditer(text):
            body = m.group(2)
            first = body.lstrip().split("\n", 1)[0]
            why = first[len(CHECK_ONLY) :].strip() if first.startswith(CHECK_ONLY) else None
            before = text[: m.start()].rstrip().rsplit("\n", 1)[-1]
            line = text.count("\n", 0, m.start()) + 1
            found.append(
                (
                    Block(path.relative_to(ROOT).as_posix(), line, m.group(1), body, why),
                    before.endswith("prints:"),
                )
            )
        for i, (block, is_output) in enumerate(found):
            if is_output and block.lang == "text" and i and found[i - 1][0].lang == "python":
                prev = found[i - 1][0]
                out[-1] = Block(
                    prev.page, prev.line, prev.lang, prev.text, prev.check_only, block.text
                )
            out.append(block)
    return out


def commands(block: Block) -> list[str]:
    """A bash block's command lines: continuations joined, comments and blank lines dropped."""
    out = []
    for line in block.text.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            out.append(line)
    return out


def kind(command: str) -> str | None:
    """Which runner a documented command belongs to (module docstring); None: none does."""
    words = shlex.split(command)
    if words[0] == "nice":
        words = words[1:]
    head = " ".join(words[:2])
    if words[0] == ".venv/bin/sara-sim":
        return "sara-sim"
    if words[:3] == [".venv/bin/python", "-m", "paper_figs"]:
        return "figures"
    if words[0] == ".venv/bin/sara-real" or head == ".venv/bin/python benchmarks/real_compare.py":
        return "sara-real"
    if head == ".venv/bin/python examples/trl_sara.py" or words[:2] == [
        ".venv/bin/accelerate",
        "launch",
    ]:
        return "example"
    if words[0] == ".venv/bin/python" and words[1].startswith("benchmarks/"):
        return "benchmark"
    if words[0] == "bash" or any(w == "pip" or w.endswith("/pip") for w in words):
        return "setup"
    if words[0].startswith("HF_HUB_OFFLINE=") and words[1].endswith("/hf"):
        return "setup"
    if re.fullmatch(r"\+?[\w.]+=\S*", words[0]) or words[:3] == VERL_MAIN:
        return "verl"
    return None


def documented(what: str, check_only: bool | None = None) -> list[tuple[Block, str]]:
    """(block, command) of every documented command of kind `what`; `check_only` True / False
    keeps only those in check-only blocks / the others."""
    return [
        (b, c)
        for b in blocks()
        if b.lang == "bash" and (check_only is None or bool(b.check_only) == check_only)
        for c in commands(b)
        if kind(c) == what
    ]


REAL_IMPORTS = {"real", "trl", "transformers", "datasets", "torch", "vllm"}


def imports(code: str) -> set[str]:
    """The top-level packages a python block imports."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def python_blocks(real: bool) -> list[Block]:
    """The python blocks that run (not check-only): those of the real half (`real`) or those of
    the core library only."""
    return [
        b
        for b in blocks()
        if b.lang == "python" and not b.check_only and bool(imports(b.text) & REAL_IMPORTS) == real
    ]
