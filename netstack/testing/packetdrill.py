"""packetdrill scripts as tests: a one-call runner and the pytest collector.

Theory of operation: :func:`run_file` builds a lab with one host (``pd``) on
Trio's autojump ``MockClock``, runs the script on it with
:func:`netstack.userspace.packetdrill.run_script` and returns the
:class:`~netstack.userspace.packetdrill.Result`; :func:`run_paths` does that for
files and directories (``*.pkt``, sorted). The pytest hook
:func:`pytest_collect_file` (registered by the netstack plugin) makes every
``*.pkt`` file under the test paths one test item: it passes when the script
passes and fails with packetdrill's report otherwise. A script whose first
lines carry a comment ``// xfail: REASON`` is expected to fail (strictly: a
pass is reported as an error) — the way to keep a script that reproduces a
known difference from Linux until it is fixed; ``// cmdline: OPTIONS`` gives
options for the command line (``--ip_version=ipv4-mapped-ipv6``), which the
``netstack packetdrill`` command honours too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from netstack.host import open_lab
from netstack.userspace.packetdrill import Result, run_script

__all__ = ["PacketdrillFile", "PacketdrillItem", "pytest_collect_file", "run_file", "run_paths"]

_XFAIL = re.compile(r"^\s*//\s*xfail:\s*(.+?)\s*$", re.M)
_CMDLINE = re.compile(r"^\s*//\s*cmdline:\s*(.+?)\s*$", re.M)


def run_file(
    path: str | os.PathLike[str],
    options: Iterable[tuple[str, str | None]] = (),
    *,
    seed: int = 0,
    text: str | None = None,
) -> Result:
    """Run one script on a fresh host in virtual time; return its Result."""
    opts = list(options)

    async def main() -> Result:
        async with open_lab(seed=seed) as lab:
            host = lab.add_host("pd")
            return await run_script(host.net, os.fspath(path), opts, text=text)

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def iter_scripts(paths: Iterable[str | os.PathLike[str]]) -> Iterator[str]:
    """Files as given; directories as their ``*.pkt`` files, recursively and sorted."""
    for p in paths:
        path = Path(p)
        if path.is_dir():
            yield from (str(f) for f in sorted(path.rglob("*.pkt")))
        else:
            yield str(path)


def run_paths(
    paths: Iterable[str | os.PathLike[str]], options: Iterable[tuple[str, str | None]] = ()
) -> list[Result]:
    """Run every script of *paths* (files or directories), each on its own host."""
    opts = list(options)
    return [run_file(f, opts) for f in iter_scripts(paths)]


def cmdline_options(text: str) -> list[tuple[str, str | None]]:
    """The options of a script's ``// cmdline: --ip_version=ipv6 …`` comment.

    Some options cannot be written in a script (packetdrill's lexer reads
    ``ipv4-mapped-ipv6`` as three tokens): its test runner passes them on the
    command line, and this comment is how a script asks the collector to.
    """
    out: list[tuple[str, str | None]] = []
    for m in _CMDLINE.finditer(text):
        for arg in m.group(1).split():
            name, eq, value = arg.lstrip("-").partition("=")
            out.append((name, value if eq else None))
    return out


def xfail_reason(text: str) -> str | None:
    """The ``// xfail: REASON`` of a script, if it has one."""
    m = _XFAIL.search(text)
    return m.group(1) if m else None


class PacketdrillFile(pytest.File):
    """A ``*.pkt`` file: one test."""

    def collect(self) -> Iterator[pytest.Item]:
        yield PacketdrillItem.from_parent(self, name=self.path.name)


class PacketdrillItem(pytest.Item):
    """One script, run on a fresh host."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.obj = self.runtest  # plugins that look at item.obj (pytest-trio) see a sync test
        text = self.path.read_text(encoding="utf-8")
        reason = xfail_reason(text)
        if reason is not None:
            self.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=PacketdrillFailed))

    def runtest(self) -> None:
        result = run_file(self.path, cmdline_options(self.path.read_text(encoding="utf-8")))
        if not result.passed:
            raise PacketdrillFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, PacketdrillFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"packetdrill: {self.path.name}"


class PacketdrillFailed(Exception):
    """A script did not pass; the message is packetdrill's report."""

    def __init__(self, result: Result) -> None:
        super().__init__(f"{result.status}: {result.message}")
        self.result = result


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    """Collect ``*.pkt`` files as packetdrill tests."""
    if file_path.suffix == ".pkt":
        return PacketdrillFile.from_parent(parent, path=file_path)
    return None
