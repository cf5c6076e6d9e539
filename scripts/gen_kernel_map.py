"""Generate docs/kernel-map.md from the ``@kernel(...)`` markers of netstack's code.

python scripts/gen_kernel_map.py          # rewrite docs/kernel-map.md
python scripts/gen_kernel_map.py --check  # exit 1 if it is out of date

Functions and classes come from their markers (``netstack.sites.kernel``),
with the timed-mode costs each one spends (``spend("name")`` in its body);
modules, which carry no marker, from their docstrings' ``Kernel:`` lines.
Reads source text only (``scripts/kernel_markers.py`` parses it).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_markers import ROOT, files, is_path, kernel_text, module_name, sites

OUT = ROOT / "docs" / "kernel-map.md"

HEADER = """# Kernel map

Every netstack function or class that mirrors kernel code carries a marker
naming the kernel files and functions it mirrors
(`@kernel("net/core/dev.c", "__dev_queue_xmit")`, `netstack/sites.py`), and
its docstring ends with the matching `Kernel:` line (`scripts/kernel_markers.py
--check` keeps the two in step). This page is generated from the markers by
`scripts/gen_kernel_map.py`; a test keeps it current. Use it to go from a
kernel function you know to the code that emulates it, or back. The last
column lists what the function charges in [timed mode](timed.md)
(`spend("…")`, priced by `netstack/cpu/costs.py`); markers themselves cost
nothing and decide no cost.

## Functions and classes

| netstack | kernel source | kernel functions | timed-mode cost |
|---|---|---|---|
"""

MODULES = """
## Modules

| module | kernel |
|---|---|
"""


def _spends(node: ast.AST) -> list[str]:
    """The sites a function's own body spends (not those of nested functions)."""
    out: list[str] = []

    def visit(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name)
                and child.func.id == "spend"
                and child.args
                and isinstance(child.args[0], ast.Constant)
                and isinstance(child.args[0].value, str)
                and child.args[0].value not in out
            ):
                out.append(child.args[0].value)
            visit(child)

    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        visit(node)
    return out


def render() -> str:
    rows: list[str] = []
    mods: list[str] = []
    for path in files():
        mod = module_name(path)
        text = kernel_text(ast.get_docstring(ast.parse(path.read_text())))
        if text:
            mods.append(f"| `{mod}` | {text.replace('|', '/')} |\n")
        for site in sites(path):
            if site.marked is None:
                continue
            paths = ", ".join(r for r in site.marked if is_path(r))
            funcs = ", ".join(f"{r}()" for r in site.marked if not is_path(r))
            spent = ", ".join(f"`{s}`" for s in _spends(site.node))
            rows.append(f"| `{mod}.{site.qualname}` | {paths} | {funcs} | {spent} |\n")
    return HEADER + "".join(rows) + MODULES + "".join(mods)


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/kernel-map.md is out of date: run python scripts/gen_kernel_map.py")
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
