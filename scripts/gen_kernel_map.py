"""Generate docs/kernel-map.md from the ``Kernel:`` lines of netstack's docstrings.

python scripts/gen_kernel_map.py          # rewrite docs/kernel-map.md
python scripts/gen_kernel_map.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "kernel-map.md"

HEADER = """# Kernel map

Every netstack function or class that mirrors kernel code names it in the
last line of its docstring (`Kernel: file, function()`). This table is
generated from those lines by `scripts/gen_kernel_map.py`; a test keeps it
current. Use it to go from a kernel function you know to the code that
emulates it, or back.

| netstack | kernel |
|---|---|
"""


def kernel_line(doc: str | None) -> str | None:
    if not doc:
        return None
    lines = [ln.strip() for ln in doc.strip().splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("Kernel:"):
            text = " ".join([ln[len("Kernel:") :].strip(), *lines[i + 1 :]]).strip()
            return " ".join(text.split())
    return None


def rows() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in sorted((ROOT / "netstack").rglob("*.py")):
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if mod.endswith(".__init__"):
            mod = mod[: -len(".__init__")]
        tree = ast.parse(path.read_text())
        k = kernel_line(ast.get_docstring(tree))
        if k:
            out.append((f"`{mod}`", k))

        def walk(body: list[ast.stmt], prefix: str, mod: str = mod) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    k = kernel_line(ast.get_docstring(node))
                    name = f"{prefix}{node.name}"
                    if k:
                        out.append((f"`{mod}.{name}`", k))
                    if isinstance(node, ast.ClassDef):
                        walk(node.body, f"{name}.", mod)

        walk(tree.body, "")
    return out


def render() -> str:
    body = "".join(f"| {a} | {b.replace('|', '/')} |\n" for a, b in rows())
    return HEADER + body


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/kernel-map.md is out of date: run python scripts/gen_kernel_map.py")
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({text.count(chr(10)) - HEADER.count(chr(10))} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
