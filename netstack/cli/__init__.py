"""The ``netstack`` command."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from netstack.cli.main import main as _main

    return _main(argv)
