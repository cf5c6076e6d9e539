"""Keep the ``@kernel(...)`` markers in step with the docstrings' ``Kernel:`` lines.

python scripts/kernel_markers.py --check  # exit 1 if a marker is missing, stale or disagrees
python scripts/kernel_markers.py --fix    # add, correct or remove markers; then ruff fixes imports

Every function or class of ``netstack/`` whose docstring ends with a
``Kernel:`` line naming kernel source files or functions carries a marker
with the same names, in the same order: ``Kernel: net/core/dev.c,
netif_rx() / enqueue_to_backlog().`` goes with ``@kernel("net/core/dev.c",
"netif_rx", "enqueue_to_backlog")`` (a path contains ``/`` or ends in ``.c``
or ``.h``; a function is a name followed by ``(``). A ``Kernel:`` line naming
neither (``Kernel: Qdisc_ops.init.``) needs no marker; a marker without a
``Kernel:`` line is an error. ``--fix`` takes the docstring as the truth: it
inserts the marker directly above the ``def``/``class`` line (below any other
decorator, so it sees the plain function), rewrites a disagreeing one, drops a
stale one, imports from :mod:`netstack.sites` what a file uses of it
(``kernel``, ``TIMED``, ``spend``), and runs ``ruff``
(import order on every file with markers, format on the files it
changed). It reads and writes source
text only — it imports nothing of netstack, so it works on a tree that does
not import yet (say, right after a merge) — and running it twice changes
nothing the second time.

Markers are metadata (:mod:`netstack.sites`): they cost nothing at run time
and decide no timed-mode cost; ``docs/kernel-map.md`` is generated from them
(``scripts/gen_kernel_map.py``). ``--check`` also checks the ``Twin:`` lines
of per-family twins (``scripts/twins.py``).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "netstack"
SKIP = {PACKAGE / "sites.py"}  # defines the marker

_FUNC = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(")
_PATH = re.compile(r"(?<![\w./-])([\w+-]+(?:/[\w.+-]+)*\.[ch])\b")

__all__ = [
    "Site",
    "files",
    "is_path",
    "kernel_refs",
    "kernel_text",
    "module_name",
    "problems",
    "sites",
]


def is_path(ref: str) -> bool:
    """A marker argument naming a kernel source file (as ``netstack.sites.is_path``)."""
    return "/" in ref or ref.endswith((".c", ".h"))


def kernel_text(doc: str | None) -> str | None:
    """The text of *doc*'s (last) ``Kernel:`` line to the end, whitespace-normalised."""
    if not doc:
        return None
    idx = doc.rfind("Kernel:")
    if idx < 0:
        return None
    return " ".join(doc[idx + len("Kernel:") :].split())


def kernel_refs(text: str | None) -> tuple[str, ...]:
    """The files and functions a ``Kernel:`` text names, in order, without repeats."""
    if not text:
        return ()
    found: list[tuple[int, str]] = [(m.start(), m.group(1)) for m in _PATH.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _FUNC.finditer(text)]
    out: list[str] = []
    for _, ref in sorted(found):
        if ref not in out:
            out.append(ref)
    return tuple(out)


class Site(NamedTuple):
    """One function or class: what its docstring says and what its marker says."""

    path: Path
    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    refs: tuple[str, ...]  # from the docstring
    marker: ast.Call | None  # the @kernel(...) decorator, if any
    marked: tuple[str, ...] | None  # its arguments


def _marker(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.Call | None:
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call):
            f = dec.func
            if (isinstance(f, ast.Name) and f.id == "kernel") or (
                isinstance(f, ast.Attribute) and f.attr == "kernel"
            ):
                return dec
    return None


def _walk(path: Path, tree: ast.Module) -> Iterator[Site]:
    def walk(body: list[ast.stmt], prefix: str) -> Iterator[Site]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qual = prefix + node.name
                dec = _marker(node)
                marked = None
                if dec is not None:
                    marked = tuple(
                        a.value
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)
                        else ast.unparse(a)
                        for a in dec.args
                    )
                refs = kernel_refs(kernel_text(ast.get_docstring(node, clean=False)))
                yield Site(path, qual, node, refs, dec, marked)
                inner = "." if isinstance(node, ast.ClassDef) else ".<locals>."
                yield from walk(node.body, qual + inner)
            elif isinstance(node, ast.If):
                yield from walk(node.body, prefix)
                yield from walk(node.orelse, prefix)
            elif isinstance(node, ast.Try | ast.With):
                yield from walk(node.body, prefix)

    yield from walk(tree.body, "")


def module_name(path: Path) -> str:
    mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return mod.removesuffix(".__init__")


def files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p not in SKIP]


def sites(path: Path) -> list[Site]:
    return list(_walk(path, ast.parse(path.read_text(), str(path))))


def problems(site: Site) -> str | None:
    """What is wrong with *site*'s marker, or None."""
    if site.marked is None:
        return f"no marker for Kernel: {', '.join(site.refs)}" if site.refs else None
    if not site.refs:
        return "marker without a Kernel: line naming a file or function"
    if site.marked != site.refs:
        return f"marker {site.marked} disagrees with its Kernel: line {site.refs}"
    return None


def _render(refs: tuple[str, ...], indent: str) -> str:
    return f"{indent}@kernel({', '.join(repr(r).replace(chr(39), chr(34)) for r in refs)})\n"


def fix_file(path: Path) -> bool:
    """Bring *path*'s markers in line with its docstrings; True if it changed."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line index, end index, replacement)
    for site in sites(path):
        if problems(site) is None:
            continue
        indent = " " * site.node.col_offset
        if site.marker is None:  # add, right above the def/class line
            i = site.node.lineno - 1
            edits.append((i, i, _render(site.refs, indent)))
        elif not site.refs:  # stale: drop the decorator's lines
            edits.append((site.marker.lineno - 1, site.marker.end_lineno or site.marker.lineno, ""))
        else:  # rewrite
            start = site.marker.lineno - 1
            end = site.marker.end_lineno or site.marker.lineno
            edits.append((start, end, _render(site.refs, indent)))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = [new] if new else []
    new_text = "".join(lines)
    new_text = _add_import(new_text)  # also when a merge kept markers or charges, lost imports
    if new_text == text:
        return False
    path.write_text(new_text)
    return True


SITES_NAMES = ("TIMED", "kernel", "spend")


def _needed(tree: ast.Module) -> set[str]:
    """The names of netstack.sites the module uses without importing them."""
    used = {
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id in SITES_NAMES and isinstance(n.ctx, ast.Load)
    }
    have: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            have |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            have.add(node.name)
        elif isinstance(node, ast.Assign):
            have |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return used - have


def _add_import(text: str) -> str:
    """Import what the module uses of netstack.sites (``kernel``, and after a
    merge that kept a charge but lost its import, ``TIMED``/``spend``): into an
    existing ``from netstack.sites import`` or after the module's first block of
    imports (not a bottom-of-module one)."""
    tree = ast.parse(text)
    need = _needed(tree)
    if not need:
        return text
    lines = text.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "netstack.sites":
            names = sorted({a.name for a in node.names} | need, key=lambda n: (not n.isupper(), n))
            start, end = node.lineno - 1, node.end_lineno or node.lineno
            lines[start:end] = [f"from netstack.sites import {', '.join(names)}\n"]
            return "".join(lines)
    at = 0
    seen_import = False
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            seen_import = True
            at = node.end_lineno or node.lineno
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and not at:
            at = node.end_lineno or node.lineno  # the module docstring
        elif seen_import:
            break
    names = sorted(need, key=lambda n: (not n.isupper(), n))
    lines.insert(at, f"from netstack.sites import {', '.join(names)}\n")
    return "".join(lines)


def _ruff(changed: list[Path], marked: list[Path]) -> None:
    """Import order on every file with markers (a merge may have left the import
    out of place), unused imports and format on the files changed here."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if shutil.which(ruff) is None and not Path(ruff).exists():
        print("ruff not found: run ruff check --select I --fix and ruff format yourself")
        return
    quiet = ["check", "-q", "--fix", "--exit-zero"]
    subprocess.run([ruff, *quiet, "--select", "I", *map(str, marked)], check=False)
    if changed:
        subprocess.run([ruff, *quiet, "--select", "F401", *map(str, changed)], check=False)
        subprocess.run([ruff, "format", "-q", *map(str, changed)], check=False)


def main(argv: list[str]) -> int:
    if "--fix" in argv:
        changed = [p for p in files() if fix_file(p)]
        _ruff(changed, [p for p in files() if "@kernel(" in p.read_text()])
        print(f"kernel markers: {len(changed)} files changed")
        return 0
    bad = 0
    for path in files():
        text = path.read_text()
        missing = _needed(ast.parse(text))
        if missing:
            bad += 1
            rel = path.relative_to(ROOT)
            print(
                f"{rel}: uses {', '.join(sorted(missing))} without importing it from netstack.sites"
            )
        for site in sites(path):
            msg = problems(site)
            if msg is not None:
                bad += 1
                rel = path.relative_to(ROOT)
                print(f"{rel}:{site.node.lineno}: {site.qualname}: {msg}")
    if bad:
        print(f"{bad} markers out of step: run python scripts/kernel_markers.py --fix")
    from twins import problems as twin_problems  # the Twin: lines of per-family twins

    twin_bad = twin_problems()
    for line in twin_bad:
        print(line)
    if twin_bad:
        print(f"{len(twin_bad)} Twin: lines out of step (scripts/twins.py)")
    return 1 if bad or twin_bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
