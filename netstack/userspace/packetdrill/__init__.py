"""packetdrill: the kernel TCP maintainers' script language, run against a netstack host.

A packetdrill script is a timeline of system calls, injected (``<``) and
expected (``>``) TCP packets, shell commands and ``tcp_info`` assertions::

    0   socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
    +0  bind(3, ..., ...) = 0
    +0  listen(3, 1) = 0
    +0  < S 0:0(0) win 65535 <mss 1460,sackOK,nop,nop,nop,wscale 7>
    +0  > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 7>

This package parses such scripts (:mod:`.parser`), and runs one on a Net
(:class:`~.runner.Runner`): no root, no tun device, any OS, in virtual time.
:func:`run_script` is the entry point for a Net you built; the ``netstack
packetdrill`` command, :func:`netstack.testing.packetdrill.run_file` and the
pytest plugin (which collects ``*.pkt`` files) build a fresh host per script.

Kernel side of the comparison: google/packetdrill, gtests/net/packetdrill.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Literal

import attrs
import trio

from netstack.core.net import Net
from netstack.userspace.packetdrill.config import Config, apply_options
from netstack.userspace.packetdrill.errors import (
    PacketdrillError,
    ScriptError,
    ScriptFailure,
    Unsupported,
)
from netstack.userspace.packetdrill.parser import parse_script
from netstack.userspace.packetdrill.runner import Runner
from netstack.userspace.packetdrill.script import Script

__all__ = [
    "Config",
    "PacketdrillError",
    "Result",
    "ScriptError",
    "ScriptFailure",
    "Unsupported",
    "load_script",
    "parse_script",
    "run_script",
]


@attrs.frozen
class Result:
    """How one script ran.

    ``status`` is ``"pass"``, ``"fail"`` (the stack disagreed with the script) or
    ``"error"`` (bad input: syntax, unknown name, unsupported construct);
    ``message`` is packetdrill's report (``FILE:LINE: …``) when it did not pass.
    """

    path: str
    status: Literal["pass", "fail", "error"]
    message: str = ""
    warnings: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    virtual_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def load_script(
    path: str,
    options: Iterable[tuple[str, str | None]] = (),
    *,
    text: str | None = None,
) -> tuple[Script, Config]:
    """Read and parse *path* (or *text*), and build its Config: the script's own
    ``--options`` first, then *options* (the command line's), which win.

    Raises:
        ScriptError: unreadable file, syntax or semantic error, bad option.
        Unsupported: a construct this runner does not run.
    """
    if text is None:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ScriptError(f"{path}: cannot read script: {e.strerror}", path=path) from None
    options = list(options)
    cli_defines: dict[str, str] = {}
    for name, value in options:
        if name in ("define", "D") and value and "=" in value:
            k, _, v = value.partition("=")
            cli_defines[k] = v
    script = parse_script(text, path, cli_defines)
    config = Config()
    apply_options(config, [(n, v) for n, v, _ in script.options], path)
    apply_options(config, options, "Command Line", script=False)
    if config.defines != cli_defines:  # the script defines symbols: scan again with them
        script = parse_script(text, path, config.defines)
    return script, config


async def run_script(
    net: Net,
    path: str,
    options: Iterable[tuple[str, str | None]] = (),
    *,
    text: str | None = None,
    output: Callable[[str], None] | None = None,
) -> Result:
    """Parse and run the script at *path* (or *text*) on *net*; never raises for the script's sake.

    *net* must be a fresh host's Net (the run adds ``tun0``); the caller runs
    Trio — on ``MockClock(autojump_threshold=0)`` a run takes no wall time.
    """
    lines: list[str] = []
    emit = output or lines.append
    start = trio.current_time()
    try:
        script, config = load_script(path, options, text=text)
        if config.dry_run:
            return Result(path, "pass")
        runner = Runner(net, script, config, output=emit, base_dir=os.path.dirname(path) or ".")
        try:
            await runner.run()
        finally:
            warnings = tuple(runner.warnings)
    except ScriptFailure as e:
        return Result(path, "fail", e.message, output=tuple(lines),
                      virtual_seconds=trio.current_time() - start)  # fmt: skip
    except ScriptError as e:
        return Result(path, "error", e.message, output=tuple(lines),
                      virtual_seconds=trio.current_time() - start)  # fmt: skip
    return Result(path, "pass", "", warnings, tuple(lines), trio.current_time() - start)
