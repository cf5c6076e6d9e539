"""mkdocs hooks: the parts of the docs site that are generated at build time.

Listed under ``hooks`` in ``mkdocs.yml``; nothing here is committed as output.

**Examples.** Every ``examples/*.py`` and ``examples/*.toml`` gets a page
``examples/NAME.md`` (its docstring or header comment, how to run it, its
picture for a lab file, and its source), listed under "Examples" in the nav.
A page links to an example by its path in the repository —
``[tc_netem_ping.py](../examples/tc_netem_ping.py)`` from ``docs/`` — or
just names it in code, ``examples/tc_netem_ping.py``; either becomes a link
to the example's page.

**Pictures.** An image whose target is a lab file or experiment figures is
drawn when the site is built:

- ``![The lab](../../examples/demo.toml)`` — the lab file's topology, as
  ``netstack draw`` draws it (:func:`netstack.labs.draw.lab_svg`). The path is
  relative to the page, like any link; or it names a ``# file: NAME.toml``
  lab block of the same page.
- ``![Before and after](gre-lltx.json)`` — an experiment's figures (``netstack
  experiment NAME --both --json``, refreshed by
  ``scripts/refresh_experiment_figures.py``), plotted by
  :func:`netstack.experiments.plot.render_data`.
- ``![NUD](../pictures/nud-states.svg)`` — a picture of :data:`GENERATED`:
  the NUD state machine, drawn from the tables of ``netstack/neigh/nud.py``.

A picture that cannot be drawn is a warning, so ``mkdocs build --strict``
fails on it.
"""

from __future__ import annotations

import ast
import html
import json
import logging
import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
log = logging.getLogger("mkdocs.hooks.netstack")

FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)
IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+\.(?:toml|json))\)")
EXAMPLE_LINK = re.compile(r"\]\((?P<path>[^)\s#]*examples/(?P<name>[\w-]+\.(?:py|toml)))\)")
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
FILE_BLOCK = re.compile(
    r"^```toml\n# file: (?P<name>\S+)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL
)

# (page src_uri, image target) -> generated picture's uri
_pictures: dict[tuple[str, str], str] = {}


# -- examples ----------------------------------------------------------------------------------
def examples() -> list[Path]:
    """The example files that get a page: lab files, then Python programs."""
    return sorted(EXAMPLES.glob("*.toml")) + sorted(EXAMPLES.glob("*.py"))


def example_uri(name: str) -> str:
    return f"examples/{name.replace('.', '-')}.md"


def _intro(path: Path) -> str:
    """What the example says about itself: the module docstring, or a lab file's
    header comment."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        doc = ast.get_docstring(ast.parse(text)) or ""
        return re.sub(r"(?m)^(\s*)(python |netstack )", r"\1$ \2", doc)
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(lines)


def example_page(path: Path) -> str:
    rel = f"examples/{path.name}"
    intro = _intro(path)
    if path.suffix == ".toml":
        run = f"netstack run {rel}\nnetstack shell {rel}"
        head = f"![The lab of {path.name}](../../{rel})\n\n"
    else:
        run = f"python {rel}"
        head = ""
    return (
        f"# {path.name}\n\n{head}"
        f"```text\n{intro}\n```\n\n"
        f"Run it from the repository's root:\n\n```sh\n{run}\n```\n\n"
        f"## Source\n\n```{'toml' if path.suffix == '.toml' else 'python'}\n"
        f"{path.read_text(encoding='utf-8').rstrip()}\n```\n"
    )


def examples_index() -> str:
    rows = ["# Examples", "", "Each example runs as it is, from the repository's root;"]
    rows += ["`tests/test_examples.py` runs every one of them.", ""]
    rows += ["| example | what it shows |", "|---|---|"]
    for path in examples():
        first = _intro(path).strip().splitlines()[0] if _intro(path).strip() else ""
        rows.append(f"| [{path.name}]({example_uri(path.name)[9:]}) | {first} |")
    return "\n".join(rows) + "\n"


# -- pictures ----------------------------------------------------------------------------------
def nud_svg() -> str:
    """The NUD state machine, from the tables and pure functions of ``neigh/nud.py``."""
    return render_state_diagram(
        nud_transitions(),
        "NUD states (net/core/neighbour.c)\n"
        "(from any state, a reply makes an entry REACHABLE and a new address STALE)",
    )


def nud_transitions() -> list[tuple[str, str, str]]:
    """``(from, to, event)`` of every NUD transition.

    Timer transitions are the rows of ``TIMER_TABLE`` (their ``describe``) and
    the probe limit of ``timer_handler``; the others are found by running the
    pure functions: ``event_send`` (a packet to send) and ``update`` (a
    solicited confirmation, an unsolicited or changed address) from each
    state.
    """
    from netstack.neigh import nud

    p = nud.NeighParms()
    states = [
        nud.NUD_NONE,
        nud.NUD_INCOMPLETE,
        nud.NUD_REACHABLE,
        nud.NUD_STALE,
        nud.NUD_DELAY,
        nud.NUD_PROBE,
        nud.NUD_FAILED,
    ]
    name = nud.nud_state_name
    edges: list[tuple[str, str, str]] = []

    def add(a: int, b: int, what: str) -> None:
        if a != b and (name(a), name(b), what) not in edges:
            edges.append((name(a), name(b), what))

    for row in nud.TIMER_TABLE:
        if row.new_state:
            add(row.state, row.new_state, "timer: " + row.describe.split(":")[0])
    for state in (nud.NUD_INCOMPLETE, nud.NUD_PROBE):
        n = nud.NudEntry(nud_state=state, probes=99)
        nud.timer_handler(n, p, 10_000)
        add(state, n.nud_state, "timer: probes exhausted")
    for state in states:
        n = nud.NudEntry(nud_state=state)
        nud.event_send(n, p, 10_000)
        add(state, n.nud_state, "packet to send")
    # what ARP/ND report: from the states where it is the lesson (from the others
    # it does the same, and the diagram says so in its title instead of 15 lines)
    for state in (nud.NUD_INCOMPLETE, nud.NUD_STALE, nud.NUD_DELAY, nud.NUD_PROBE):
        n = nud.NudEntry(nud_state=state)
        nud.update(n, p, 10_000, nud.NUD_REACHABLE, lladdr_changed=False, has_lladdr=True, flags=0)
        add(state, n.nud_state, "reply")
    for state in (nud.NUD_INCOMPLETE, nud.NUD_REACHABLE):
        n = nud.NudEntry(nud_state=state)
        nud.update(
            n, p, 10_000, nud.NUD_STALE, lladdr_changed=True, has_lladdr=True,
            flags=nud.NEIGH_UPDATE_F_OVERRIDE,
        )  # fmt: skip
        add(state, n.nud_state, "unsolicited, new lladdr")
    return edges


def render_state_diagram(edges: list[tuple[str, str, str]], title: str) -> str:
    """A state diagram as SVG: Graphviz's dot if installed, else a table of transitions."""
    from netstack.labs.draw import graphviz_available, svg_only

    if graphviz_available():
        import graphviz

        g = graphviz.Digraph(
            "states",
            graph_attr={"label": title, "labelloc": "t", "fontname": "DejaVu Sans", "pad": "0.2"},
            node_attr={
                "shape": "box",
                "style": "rounded,filled",
                "fillcolor": "#eef4fb",
                "color": "#2b5d8a",
                "fontname": "DejaVu Sans Mono",
                "fontsize": "11",
            },
            edge_attr={"fontname": "DejaVu Sans", "fontsize": "9", "color": "#444444"},
        )
        pairs: dict[tuple[str, str], list[str]] = {}
        for a, b, what in edges:
            pairs.setdefault((a, b), []).append(what)
        for (a, b), whats in pairs.items():
            g.edge(a, b, label="\n".join(whats))
        return svg_only(g.pipe(format="svg", encoding="utf-8"))
    rows = [f"{a} → {b}: {what}" for a, b, what in edges]
    height = 40 + 18 * len(rows)
    texts = "".join(
        f'<text x="20" y="{48 + 18 * i}">{html.escape(r)}</text>' for i, r in enumerate(rows)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="{height}" '
        f'font-family="DejaVu Sans Mono, monospace" font-size="12">'
        f'<rect width="100%" height="100%" fill="white"/>'
        f'<text x="20" y="24" font-weight="bold">{html.escape(title)}</text>{texts}</svg>\n'
    )


GENERATED: dict[str, Callable[[], str]] = {"pictures/nud-states.svg": nud_svg}
"""Pictures drawn from code, by their path in the site: link to them as to any file."""


def _picture(page_uri: str, target: str, markdown: str) -> tuple[str, str]:
    """``(uri, svg)`` of the picture an image *target* of page *page_uri* asks for."""
    base = posixpath.dirname(page_uri)
    blocks = {m["name"]: m["body"] for m in FILE_BLOCK.finditer(markdown)}
    if target.endswith(".toml") and target in blocks:
        from netstack.labs.draw import lab_svg

        stem = posixpath.splitext(page_uri)[0].replace("/", "-")
        return f"pictures/{stem}-{target[:-5]}.svg", lab_svg(blocks[target], target)
    path = (ROOT / "docs" / base / target).resolve()
    rel = path.relative_to(ROOT).as_posix()
    slug = posixpath.splitext(rel)[0].replace("/", "-")
    if target.endswith(".toml"):
        from netstack.labs.draw import lab_svg

        return f"pictures/{slug}.svg", lab_svg(path.read_text(encoding="utf-8"), rel)
    from netstack.experiments.plot import render_data

    data = json.loads(path.read_text(encoding="utf-8"))
    return f"pictures/{slug}.svg", render_data(data, source=rel)


def _outside_fences(markdown: str, fn: Callable[[str], str]) -> str:
    """Apply *fn* to the parts of *markdown* that are not fenced code."""
    out, last = [], 0
    for m in FENCE.finditer(markdown):
        out += [fn(markdown[last : m.start()]), m[0]]
        last = m.end()
    out.append(fn(markdown[last:]))
    return "".join(out)


def _relative(page_uri: str, uri: str) -> str:
    return posixpath.relpath(uri, posixpath.dirname(page_uri) or ".")


# -- the hooks ---------------------------------------------------------------------------------
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Expand the nav's ``Examples: examples/index.md`` into a page per example."""
    nav = config.nav or []
    for i, item in enumerate(nav):
        if isinstance(item, dict) and item.get("Examples") == "examples/index.md":
            pages: list[Any] = [{"Overview": "examples/index.md"}]
            pages += [{p.name: example_uri(p.name)} for p in examples()]
            nav[i] = {"Examples": pages}
    return config


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    """Add the example pages and every picture the pages ask for."""
    files.append(File.generated(config, "examples/index.md", content=examples_index()))
    for path in examples():
        files.append(File.generated(config, example_uri(path.name), content=example_page(path)))
    drawn: dict[str, str] = {}
    _pictures.clear()
    for uri, make in GENERATED.items():
        drawn[uri] = make()
    for f in files.documentation_pages():
        markdown = f.content_string
        for m in IMAGE.finditer(markdown):
            if _inside_code(markdown, m.start()):
                continue
            try:
                uri, svg = _picture(f.src_uri, m["src"], markdown)
            except Exception as e:  # any failure is the page's problem: say which
                log.warning("%s: cannot draw %s: %s", f.src_uri, m["src"], e)
                continue
            drawn.setdefault(uri, svg)
            _pictures[(f.src_uri, m["src"])] = uri
    for uri, svg in drawn.items():
        files.append(File.generated(config, uri, content=svg))
    return files


def _inside_code(markdown: str, pos: int) -> bool:
    """True if *pos* is in a fenced block or a code span of *markdown*."""
    if any(m.start() <= pos < m.end() for m in FENCE.finditer(markdown)):
        return True
    line_start = markdown.rfind("\n", 0, pos) + 1
    para = markdown[line_start:]
    return any(m.start() <= pos - line_start < m.end() for m in CODE_SPAN.finditer(para[:2000]))


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Point pictures at their drawings, and example links at the example pages."""
    uri = page.file.src_uri
    base = posixpath.dirname(uri)

    def picture(m: re.Match[str]) -> str:
        drawn = _pictures.get((uri, m["src"]))
        if drawn is None:
            return m[0]
        return f"![{m['alt']}]({_relative(uri, drawn)})"

    def link(m: re.Match[str]) -> str:
        target = (ROOT / "docs" / base / m["path"]).resolve()
        if target.parent != EXAMPLES or not target.is_file():
            return m[0]
        return f"]({_relative(uri, example_uri(target.name))})"

    def prose(text: str) -> str:
        out, last = [], 0
        for m in CODE_SPAN.finditer(text):  # code shows links; it does not make them
            out.append(EXAMPLE_LINK.sub(link, IMAGE.sub(picture, text[last : m.start()])))
            name = re.fullmatch(r"examples/([\w-]+\.(?:py|toml))", m[2].strip())
            linked = text[m.start() - 1 : m.start()] == "[" and text[m.end() :].startswith("](")
            if name and not linked and (EXAMPLES / name[1]).is_file():
                out.append(f"[{m[0]}]({_relative(uri, example_uri(name[1]))})")
            else:
                out.append(m[0])
            last = m.end()
        out.append(EXAMPLE_LINK.sub(link, IMAGE.sub(picture, text[last:])))
        return "".join(out)

    return _outside_fences(markdown, prose)
