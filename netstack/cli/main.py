"""The ``netstack`` command: demo, run, check, shell, decode, packetdrill, draw, experiment.

Each subcommand is a thin layer over a module: ``demo`` (:mod:`.demo`),
``run``/``check`` (:mod:`.labs`, over :mod:`netstack.labs.labfile`), ``shell``
(:mod:`.shell`), ``decode`` (:mod:`.decode`, tcpdump's printer), ``packetdrill``
(:mod:`.packetdrill`, packetdrill scripts), ``draw``
(:mod:`netstack.labs.draw`) and ``experiment`` (:mod:`netstack.experiments`).
Exit status: 0 success, 1 a check failed or a tool reported an error, 2 bad
input (a wrong lab file, a bad option).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from netstack import __version__
from netstack.cli.sweep import add_executor_options, add_sweep_parser
from netstack.experiments import EXPERIMENTS

__all__ = ["build_parser", "main"]


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

    r = sub.add_parser("run", help="build a lab file's lab, run its steps and checks")
    r.add_argument("lab", metavar="LAB.toml")
    r.add_argument("-v", "--verbose", action="store_true", help="show commands and their output")
    r.add_argument("--pcap", metavar="DIR", help="write the captures (or every link end) into DIR")
    r.add_argument("--seed", type=int, help="override the lab's seed")

    c = sub.add_parser("check", help="validate a lab file (and run its host commands)")
    c.add_argument("lab", metavar="LAB.toml", nargs="+")

    s = sub.add_parser("shell", help="an interactive prompt on a lab (ip, ping, tcpdump…)")
    s.add_argument("lab", metavar="LAB.toml", nargs="?", help="lab file (default: the demo lab)")
    s.add_argument(
        "-c",
        "--command",
        action="append",
        metavar="LINE",
        dest="lines",
        help="run LINE (repeatable) instead of reading commands interactively",
    )
    s.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="RATE",
        help="virtual seconds per wall second while commands run (0: as fast as "
        "possible; 1: like a real network)",
    )
    s.add_argument("--empty", action="store_true", help="start with an empty lab")

    dec = sub.add_parser(
        "decode", help="print a pcap file as tcpdump does", add_help=False, prefix_chars="+"
    )
    dec.add_argument("args", nargs=argparse.REMAINDER)

    pd = sub.add_parser(
        "packetdrill",
        help="run packetdrill scripts (FILE.pkt or DIR) against an emulated host",
        add_help=False,
        prefix_chars="+",
    )
    pd.add_argument("args", nargs=argparse.REMAINDER)

    dr = sub.add_parser("draw", help="draw a lab file's topology (SVG or PNG)")
    dr.add_argument("lab", metavar="LAB.toml")
    dr.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="FILE.svg or FILE.png (default: LAB.svg next to the lab file)",
    )

    e = sub.add_parser(
        "experiment",
        help="rerun a seed's benchmark in timed mode, before and after its patch",
        description="Rerun one of the seeds' benchmarks on an emulated machine "
        "(timed mode) and print the figures beside the published ones.",
    )
    e.add_argument(
        "name", choices=sorted(EXPERIMENTS), metavar="NAME", help=", ".join(sorted(EXPERIMENTS))
    )
    side = e.add_mutually_exclusive_group()
    side.add_argument(
        "--before",
        dest="which",
        action="store_const",
        const="before",
        help="run only with the seed's patch reverted (the old kernel)",
    )
    side.add_argument(
        "--after",
        dest="which",
        action="store_const",
        const="after",
        help="run only with the seed's patch applied",
    )
    side.add_argument(
        "--both",
        dest="which",
        action="store_const",
        const="both",
        help="run before and after, and compare them with the seed's figures (the default)",
    )
    e.set_defaults(which="both", subparser=e)
    e.add_argument("--cpus", type=int, help="CPUs (sending threads) to use")
    e.add_argument("--json", action="store_true", help="print the figures as JSON")
    e.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the result: FILE.svg, or FILE.png with pip install 'netstack[draw]'",
    )
    e.add_argument(
        "--sweep",
        nargs="+",
        metavar="NAME=V1,V2",
        help="run over a grid of the experiment's parameters (see netstack sweep --help)",
    )
    sweep_options = e.add_argument_group("with --sweep")
    add_executor_options(sweep_options)  # type: ignore[arg-type]

    add_sweep_parser(sub)
    return parser  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "sweep":
        from netstack.cli.sweep import run_sweep_command

        return run_sweep_command(args.subparser, args.target, args.axes, args, json_dest=args.json)
    if args.command == "experiment" and args.sweep:
        from netstack.cli.sweep import run_sweep_command

        axes = list(args.sweep)
        if args.cpus is not None:
            axes.append(f"cpus={args.cpus}")
        if args.which != "both":
            axes.append(f"which={args.which}")
        return run_sweep_command(
            args.subparser,
            args.name,
            axes,
            args,
            json_dest="-" if args.json else None,
        )
    if args.command == "experiment":
        for option in ("serial", "dask", "scheduler", "workers", "csv", "column", "y"):
            if getattr(args, option):
                args.subparser.error(f"argument --{option}: only with --sweep")
        from netstack.cli.experiment import run_experiment
        from netstack.experiments.plot import check_plot_path

        if args.plot:
            try:
                check_plot_path(args.plot)  # before minutes of work, not after
            except ValueError as e:
                parser.error(str(e))
        kwargs = {} if args.cpus is None else {"cpus": args.cpus}
        try:
            result = run_experiment(args.name, args.which, **kwargs)
        except ValueError as e:
            parser.error(str(e))
        print(result.to_json() if args.json else result.render())
        if args.plot:
            from netstack.experiments.plot import write_plot

            try:
                print(f"wrote {write_plot(result, args.plot)}", file=sys.stderr)
            except ValueError as e:
                parser.error(str(e))
        return 0
    if args.command == "demo":
        from netstack.cli.demo import demo

        wall = time.perf_counter()
        rc = demo(pcap_dir=args.pcap, seed=args.seed, out=sys.stdout)
        print(f"\n(wall time {time.perf_counter() - wall:.2f} s)")
        return rc
    if args.command == "run":
        from netstack.cli.labs import run_lab_file

        return run_lab_file(
            args.lab,
            out=sys.stdout,
            err=sys.stderr,
            verbose=args.verbose,
            pcap_dir=args.pcap,
            seed=args.seed,
        )
    if args.command == "check":
        from netstack.cli.labs import check_lab_file

        return max(check_lab_file(p, out=sys.stdout, err=sys.stderr) for p in args.lab)
    if args.command == "shell":
        from netstack.cli.shell import shell

        return shell(args.lab, commands=args.lines, pace=args.pace, empty=args.empty)
    if args.command == "decode":
        from netstack.cli.decode import decode

        return decode(list(args.args), out=sys.stdout, err=sys.stderr)
    if args.command == "packetdrill":
        from netstack.cli.packetdrill import packetdrill

        return packetdrill(list(args.args), out=sys.stdout, err=sys.stderr)
    if args.command == "draw":
        from netstack.labs.draw import draw_lab_file

        return draw_lab_file(args.lab, args.output, out=sys.stdout, err=sys.stderr)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
