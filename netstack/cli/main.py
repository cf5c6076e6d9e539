"""The ``netstack`` command: ``netstack demo`` (more subcommands arrive with later issues)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from netstack import __version__
from netstack.cli.demo import demo

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="netstack",
        description="The Linux network stack, emulated layer by layer on Trio.",
    )
    parser.add_argument("--version", action="version", version=f"netstack {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="run the built-in lab: three hosts, a router, ping and UDP")
    d.add_argument("--pcap", metavar="DIR", help="write a capture of every link end into DIR")
    d.add_argument("--seed", type=int, default=0, help="seed of the hosts' random numbers")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        wall = time.perf_counter()
        rc = demo(pcap_dir=args.pcap, seed=args.seed, out=sys.stdout)
        print(f"\n(wall time {time.perf_counter() - wall:.2f} s)")
        return rc
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
