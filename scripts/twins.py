"""Keep the ``Twin:`` lines of the per-family twins pointing at each other.

python scripts/twins.py  # exit 1 if a Twin: target is missing or does not name back

Some functions exist twice on purpose, because the kernel has them twice:
``ip_finish_output2`` and ``ip6_finish_output2``, IPv4's and IPv6's
fragment reassembly, route exceptions (``fnhe`` and ``rt6_ex``), the
``tcp_v4_*``/``tcp_v6_*`` entry points. A change to one usually wants the
same change to the other, so each says so in its docstring, on a line of its
own above the ``Kernel:`` line::

    Twin: netstack.ipv6.ip6_output.ip6_finish_output2.

A ``Twin:`` line names one or more functions or classes by their full dotted
name (module and qualname), separated by commas. This script checks that
every named twin exists and that its docstring names the first one back, so
neither side can be renamed or moved without the other noticing. It reads
source text only (through :mod:`kernel_markers`), imports nothing of
netstack, and runs as part of ``scripts/kernel_markers.py --check``.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from kernel_markers import ROOT, files, module_name, sites

__all__ = ["TWIN", "problems", "twins", "twins_of"]

TWIN = re.compile(r"^[ \t]*Twin:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def twins_of(doc: str | None) -> tuple[str, ...]:
    """The dotted names the ``Twin:`` lines of *doc* name, in order."""
    if not doc:
        return ()
    out: list[str] = []
    for m in TWIN.finditer(doc):
        for part in m.group(1).split(","):
            name = part.strip().strip("`").rstrip(".").strip("`")
            if name and name not in out:
                out.append(name)
    return tuple(out)


def twins() -> dict[str, tuple[Path, int, tuple[str, ...]]]:
    """Every function/class of netstack by full name: its file, line and ``Twin:`` names."""
    index: dict[str, tuple[Path, int, tuple[str, ...]]] = {}
    for path in files():
        mod = module_name(path)
        for site in sites(path):
            doc = ast.get_docstring(site.node, clean=False)
            index[f"{mod}.{site.qualname}"] = (path, site.node.lineno, twins_of(doc))
    return index


def problems(index: dict[str, tuple[Path, int, tuple[str, ...]]] | None = None) -> list[str]:
    """One line per ``Twin:`` name that does not exist or does not name its holder back.

    *index* is :func:`twins` (the default) or, for tests, a made-up one.
    """
    if index is None:
        index = twins()
    out: list[str] = []
    for name, (path, line, names) in index.items():
        for twin in names:
            where = f"{path.relative_to(ROOT)}:{line}: {name}"
            if twin == name:
                out.append(f"{where}: names itself as its Twin")
            elif twin not in index:
                out.append(f"{where}: Twin {twin} does not exist")
            elif name not in index[twin][2]:
                out.append(f"{where}: Twin {twin} does not name it back (add a Twin: line there)")
    return out


def main() -> int:
    bad = problems()
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} Twin: lines out of step")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
