"""The docs: every code block of the tutorials runs, and the reference pages are current.

Blocks are run by kind:

- ```` ```python ````: executed; the blocks of a page share one namespace.
- ```` ```toml ````: a lab file. With a first line ``# file: NAME.toml`` it is
  written to the page's working directory (a later console block uses it);
  otherwise it must be a valid lab file.
- ```` ```console ````: ``$ netstack …`` lines are run through the CLI's
  ``main()`` (in a directory where ``examples/`` and ``tests/`` are the
  repository's), and the lines after a command are its expected output.
  ``$ netstack shell LAB`` followed by prompt lines (``netstack> CMD``,
  ``a# CMD``) runs those lines in one shell. Other ``$`` lines (``pip
  install``…) are not run.

Expected output matches when each of its lines matches a later line of the
real output, in order; ``…`` in a line matches anything, and a line of only
``…`` stands for lines left out.

Every page of ``docs/`` is run. A marker on the line just above a fence (an
HTML comment: not rendered) changes how its block runs:

- ``<!-- docs-test: skip (REASON) -->``: the block is not run, for the reason
  given (it runs for minutes, it needs a terminal…).
- ``<!-- docs-test: in examples/two_hosts.toml -->``: a Python fragment that
  runs inside that lab file's lab, its hosts bound to their names and the lab
  to ``lab``; top-level ``await`` is allowed. ``in an empty lab`` gives an
  empty ``lab``.

Fences of other kinds (``text``, ``sh``) are not run.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import CodeType
from typing import Any

import attrs
import pytest
import trio

import netstack
from netstack.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(
    r"^(?:<!-- docs-test: (?:(?P<skip>skip) \((?P<why>[^)]+)\)"
    r"|in (?P<lab>\S+\.toml|an empty lab)) -->\n)?"
    r"```(?P<lang>\w*)\n(?P<body>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
MARK = re.compile(r"^<!-- docs-test:", re.MULTILINE)
ANY_FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)
PROMPT = re.compile(r"^(?:netstack>|[A-Za-z][\w-]*#) (.*)$")


@attrs.frozen
class Block:
    lang: str
    text: str
    line: int
    lab: str | None = None  # run the fragment in this lab file's lab ("" for an empty lab)


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of *page* that are to run."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        if m["skip"]:
            continue
        lab = None if m["lab"] is None else "" if m["lab"] == "an empty lab" else m["lab"]
        out.append(Block(m["lang"], m["body"], text.count("\n", 0, m.start()) + 1, lab))
    return out


def run_in_lab(code: CodeType, namespace: dict[str, Any], lab_file: str) -> None:
    """Run a fragment (top-level ``await`` compiled in) inside *lab_file*'s lab."""
    from netstack.labs.labfile import build_lab, load_lab
    from netstack.labs.session import Session

    async def main() -> None:
        spec = load_lab(ROOT / lab_file) if lab_file else None
        seed = spec.seed if spec else 0
        async with netstack.open_lab(seed=seed) as lab, trio.open_nursery() as nursery:
            if spec is not None:
                await build_lab(spec, lab, Session(lab, nursery), captures=False)
            namespace.update(lab.hosts, lab=lab)
            result = eval(code, namespace)
            if inspect.iscoroutine(result):
                await result
            nursery.cancel_scope.cancel()

    netstack.run(main)


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
            words = shlex.split(line[2:], comments=True)
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
@pytest.mark.slow
def test_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from netstack.labs.labfile import parse_lab

    monkeypatch.chdir(tmp_path)
    for shared in ("examples", "tests"):  # pages name files of the repository
        (tmp_path / shared).symlink_to(ROOT / shared)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    for block in blocks(page):
        where = f"{page.relative_to(ROOT)}:{block.line}"
        lang, text = block.lang, block.text
        if lang == "python" and block.lab is not None:
            code = compile(text, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            run_in_lab(code, namespace, block.lab)
        elif lang == "python":
            exec(compile(text, where, "exec"), namespace)
        elif lang == "toml" and text.startswith("# file: "):
            name = text.split("\n", 1)[0][len("# file: ") :].strip()
            (tmp_path / name).write_text(text, encoding="utf-8")
        elif lang == "toml":
            parse_lab(text, where)
        elif lang == "console":
            console(text, where)


@pytest.mark.slow
def test_testing_page_runs_as_a_users_pytest_project(tmp_path: Path) -> None:
    """docs/testing.md's blocks are test files: pytest runs them in an empty project."""
    from fresh_project import run_page

    r = run_page(DOCS / "testing.md", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "9 passed" in r.stdout, r.stdout  # five blocks; @seeds(5) is five tests


def test_every_tutorial_is_tested_and_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (DOCS / "tutorials").glob("*.md"):
        assert f"tutorials/{page.name}" in nav, page
        assert page in PAGES


def test_markers_are_well_formed() -> None:
    """A marker that the pattern does not read would silently run its block
    (or, misplaced, skip nothing): each one must sit right above a fence."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        marks = len(MARK.findall(ANY_FENCE.sub("", text)))  # a fence may show a marker
        used = sum(1 for m in FENCE.finditer(text) if m["skip"] or m["lab"])
        assert marks == used, f"{page.relative_to(ROOT)}: a docs-test marker is not above a fence"


def test_matching_rules() -> None:
    assert matches(["a", "…", "c…e"], "a\nb\ncde\n") is None
    assert matches(["x"], "a\n") == "x"
    assert matches(["b", "a"], "a\nb\n") == "a"


@pytest.mark.slow
def test_reference_pages_are_current() -> None:
    rc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs_ref.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert rc.returncode == 0, rc.stdout + rc.stderr


def mkdocs_command() -> list[str]:
    """The docs build of ``scripts/check``, as it runs there."""
    for line in (ROOT / "scripts" / "check").read_text(encoding="utf-8").splitlines():
        if '"$BIN/mkdocs"' in line:
            return shlex.split(line.split('"$BIN/mkdocs"', 1)[1], comments=True)
    raise AssertionError("scripts/check does not build the docs")


def small_site(tmp_path: Path, pages: dict[str, str], *, api: bool = False) -> Path:
    """A copy of mkdocs.yml over *pages* only: the same strictness and link
    validation (and, with *api*, the same API reference machinery), without the
    hooks' generated pages, so that it builds in seconds. Returns the config."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    config.update(docs_dir=str(docs), site_dir=str(tmp_path / "site"), nav=list(pages))
    config.pop("hooks", None)
    plugins = config["plugins"]
    if api:
        handler = plugins[1]["mkdocstrings"]["handlers"]["python"]
        handler["paths"] = [str(ROOT)]
        exts = handler["options"]["extensions"]
        handler["options"]["extensions"] = [str(ROOT / e) for e in exts]
    else:
        config["plugins"] = [p for p in plugins if p == "search"]
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def build(config: Path) -> subprocess.CompletedProcess[str]:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    return subprocess.run(
        [str(mkdocs), *mkdocs_command(), "-f", str(config)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_the_docs_check_fails_on_a_broken_link(tmp_path: Path) -> None:
    """`--quiet` hid the warnings strict mode counts: the check could never fail."""
    argv = mkdocs_command()
    assert argv[0] == "build" and "--strict" in argv
    assert not {"-q", "--quiet"} & set(argv)
    good = {"index.md": "# Home\n\n[the other page](other.md)\n", "other.md": "# Other\n"}
    assert build(small_site(tmp_path / "good", good)).returncode == 0
    bad = {**good, "other.md": "# Other\n\n[an example](../examples/nowhere.py)\n"}
    result = build(small_site(tmp_path / "bad", bad))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "contains a link '../examples/nowhere.py'" in output
    assert "Aborted with 1 warnings in strict mode!" in output


@pytest.mark.slow
def test_api_reference_renders_roles_as_links(tmp_path: Path) -> None:
    """The docstrings' Sphinx roles (``:func:`open_lab```) become cross-references."""
    api = "# API\n\n::: netstack.open_lab\n\n::: netstack.Lab\n\n::: netstack.Capture\n"
    result = build(small_site(tmp_path, {"api.md": api}, api=True))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert not re.search(r":(func|class|meth|mod|data|attr|exc):", page)
    # Lab's docstring says "Create with :func:`open_lab`", Capture's names :meth:`stop`
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#netstack\.open_lab"', page)
    assert re.search(r'href="#netstack\.Capture\.stop"><code>stop\(\)</code></a>', page)


def hooks() -> Any:
    """scripts/docs_hooks.py, the mkdocs hooks, as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_tutorial_and_experiment_page_has_its_picture() -> None:
    """A tutorial opens with its lab drawn; an experiment page plots its figures."""
    h = hooks()
    for page in sorted((DOCS / "tutorials").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        first = h.IMAGE.search(text)
        assert first is not None and first["src"].endswith(".toml"), page.name
        assert "\n## " not in text[: first.start()], f"{page.name}: the picture comes late"
    for page in sorted((DOCS / "experiments").glob("*.md")):
        if page.name != "index.md":
            assert f"]({page.stem}.json)" in page.read_text(encoding="utf-8"), page.name


def test_nud_diagram_has_every_transition_of_the_timer_table() -> None:
    from netstack.neigh import nud

    edges = {(a, b) for a, b, _ in hooks().nud_transitions()}
    for row in nud.TIMER_TABLE:
        if row.new_state:
            assert (nud.nud_state_name(row.state), nud.nud_state_name(row.new_state)) in edges
    assert {("STALE", "DELAY"), ("NONE", "INCOMPLETE"), ("PROBE", "FAILED")} <= edges
    assert {("INCOMPLETE", "REACHABLE"), ("INCOMPLETE", "FAILED")} <= edges


def test_example_links_and_pictures_are_rewritten() -> None:
    """A link to an example's file, or its path in code, goes to the example's page;
    an image of a lab file or of figures goes to its drawing."""
    from types import SimpleNamespace

    h = hooks()
    h._pictures[("tutorials/x.md", "../../examples/demo.toml")] = "pictures/examples-demo.svg"
    page: Any = SimpleNamespace(file=SimpleNamespace(src_uri="tutorials/x.md"))
    text = (
        "See [this](../../examples/tc_netem_ping.py) and `examples/gretap.toml`.\n\n"
        "![lab](../../examples/demo.toml)\n\n"
        "```console\n$ netstack run examples/demo.toml `examples/demo.toml`\n```\n"
    )
    out = h.on_page_markdown(text, page=page, config=None, files=None)
    assert "[this](../examples/tc_netem_ping-py.md)" in out
    assert "[`examples/gretap.toml`](../examples/gretap-toml.md)" in out
    assert "![lab](../pictures/examples-demo.svg)" in out
    assert out.endswith("$ netstack run examples/demo.toml `examples/demo.toml`\n```\n")
    assert h.examples_index().count("](") == len(h.examples())
