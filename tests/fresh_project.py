"""Run a docs page's pytest examples as a new user would: in an empty project.

Each ```` ```python ```` block of the page is a complete test file; they are
written as ``test_doc_N.py`` into a folder with no ``conftest.py`` and no
pytest configuration, and pytest runs there in a fresh process with the
current interpreter (where netstack is installed, as ``pip install
'netstack[pytest]'`` would leave it). The plugin arrives through its
``pytest11`` entry point, as in any project.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


def run_pytest(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in *project*, rootdir there, the user's defaults."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(project),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=timeout,
        check=False,
    )


def run_page(page: Path, project: Path) -> subprocess.CompletedProcess[str]:
    """Write *page*'s blocks into *project* and run pytest on them."""
    project.mkdir(parents=True, exist_ok=True)
    for i, block in enumerate(python_blocks(page)):
        (project / f"test_doc_{i}.py").write_text(block, encoding="utf-8")
    return run_pytest(project, "-q")
