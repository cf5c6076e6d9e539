"""The docs: every code block of the tutorials runs, and the reference pages are current.

Blocks are run by kind:

- ```` ```python ````: executed; the blocks of a page share one namespace.
- ```` ```toml ````: a lab file. With a first line ``# file: NAME.toml`` it is
  written to the page's working directory (a later console block uses it);
  otherwise it must be a valid lab file.
- ```` ```console ````: ``$ netstack …`` lines are run through the CLI's
  ``main()`` (in a directory where ``examples/`` is the repository's), and
  the lines after a command are its expected output. ``$ netstack shell
  LAB`` followed by prompt lines (``netstack> CMD``, ``a# CMD``) runs those
  lines in one shell. Other ``$`` lines (``pip install``…) are not run.

Expected output matches when each of its lines matches a later line of the
real output, in order; ``…`` in a line matches anything, and a line of only
``…`` stands for lines left out.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from netstack.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [
    DOCS / "getting-started.md",
    DOCS / "labs.md",
    DOCS / "commands.md",
    *sorted((DOCS / "tutorials").glob("*.md")),
]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PROMPT = re.compile(r"^(?:netstack>|[A-Za-z][\w-]*#) (.*)$")


def blocks(page: Path) -> list[tuple[str, str, int]]:
    text = page.read_text(encoding="utf-8")
    return [(m[1], m[2], text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def matches(expected: list[str], actual: str) -> str | None:
    """None if *expected* matches *actual* (see the module docstring), else the first miss."""
    lines = actual.splitlines()
    i = 0
    for want in expected:
        if not want.strip() or want.strip() == "…":
            continue
        pattern = re.compile(".*".join(re.escape(p) for p in want.rstrip().split("…")) + r"\s*$")
        while i < len(lines) and not pattern.match(lines[i]):
            i += 1
        if i == len(lines):
            return want
        i += 1
    return None


def run_cli(argv: list[str]) -> str:
    out = io.StringIO()  # one stream, as a terminal shows stdout and stderr
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(argv)
        except SystemExit:
            pass
    return out.getvalue()


def console(block: str, where: str) -> None:
    steps: list[tuple[list[str], list[str]]] = []  # (argv, expected lines)
    for line in block.splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            steps.append((words[1:] if words[0] == "netstack" else [], []))
        elif steps and steps[-1][0][:1] == ["shell"] and (m := PROMPT.match(line)):
            steps[-1][0].extend(["-c", m[1]])
        elif steps:
            steps[-1][1].append(line)
    for argv, expected in steps:
        if not argv:
            continue
        out = run_cli(argv)
        miss = matches(expected, out)
        assert miss is None, f"{where}: netstack {shlex.join(argv)}\nmissing: {miss!r}\n{out}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from netstack.labs.labfile import parse_lab

    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for lang, text, line in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        if lang == "python":
            exec(compile(text, where, "exec"), namespace)
        elif lang == "toml" and text.startswith("# file: "):
            name = text.split("\n", 1)[0][len("# file: ") :].strip()
            (tmp_path / name).write_text(text, encoding="utf-8")
        elif lang == "toml":
            parse_lab(text, where)
        elif lang == "console":
            console(text, where)


def test_testing_page_runs_as_a_users_pytest_project(tmp_path: Path) -> None:
    """docs/testing.md's blocks are test files: pytest runs them in an empty project."""
    from fresh_project import run_page

    r = run_page(DOCS / "testing.md", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 passed" in r.stdout, r.stdout  # five blocks; @seeds(5) is five tests


def test_every_tutorial_is_tested_and_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (DOCS / "tutorials").glob("*.md"):
        assert f"tutorials/{page.name}" in nav, page
        assert page in PAGES


def test_matching_rules() -> None:
    assert matches(["a", "…", "c…e"], "a\nb\ncde\n") is None
    assert matches(["x"], "a\n") == "x"
    assert matches(["b", "a"], "a\nb\n") == "a"


def test_reference_pages_are_current() -> None:
    rc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs_ref.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert rc.returncode == 0, rc.stdout + rc.stderr
