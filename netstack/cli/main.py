"""The ``netstack`` command: ``netstack demo``, ``netstack experiment NAME``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from netstack import __version__
from netstack.cli.demo import demo
from netstack.experiments import EXPERIMENTS
from netstack.experiments.plot import write_plot

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
    e = sub.add_parser(
        "experiment",
        help="rerun a seed's benchmark in timed mode, before and after its patch",
        description="Rerun one of the seeds' benchmarks on an emulated machine "
        "(timed mode) and print the figures beside the published ones.",
    )
    e.add_argument("name", choices=sorted(EXPERIMENTS), metavar="NAME", help="experiment")
    side = e.add_mutually_exclusive_group()
    side.add_argument("--before", dest="which", action="store_const", const="before")
    side.add_argument("--after", dest="which", action="store_const", const="after")
    side.add_argument("--both", dest="which", action="store_const", const="both")
    e.set_defaults(which="both")
    e.add_argument("--cpus", type=int, help="CPUs (sending threads) to use")
    e.add_argument("--json", action="store_true", help="print the figures as JSON")
    e.add_argument("--plot", metavar="FILE", help="also draw the result (.svg, or .png)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "experiment":
        exp = EXPERIMENTS[args.name]
        kwargs = {} if args.cpus is None else {"cpus": args.cpus}
        try:
            result = exp.run(args.which, **kwargs)
        except ValueError as e:
            parser.error(str(e))
        print(result.to_json() if args.json else result.render())
        if args.plot:
            try:
                print(f"wrote {write_plot(result, args.plot)}", file=sys.stderr)
            except ValueError as e:
                parser.error(str(e))
        return 0
    if args.command == "demo":
        wall = time.perf_counter()
        rc = demo(pcap_dir=args.pcap, seed=args.seed, out=sys.stdout)
        print(f"\n(wall time {time.perf_counter() - wall:.2f} s)")
        return rc
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
