"""The ``netstack`` command."""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    from netstack.cli.main import main as _main

    status = 141  # 128 + SIGPIPE, what a shell reports when the reader left
    try:
        status = _main(argv)
    except* BrokenPipeError:  # `netstack demo | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
    return status
