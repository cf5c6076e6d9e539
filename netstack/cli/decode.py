"""``netstack decode FILE.pcap``: tcpdump's one-line decoding of a capture file.

``netstack decode [-v] [-e] [-q] [-t…] [-x] [-c N] FILE [expression]`` is
``tcpdump -nn -r FILE`` with the same options and filter language
(:mod:`netstack.userspace.tcpdump.tcpdump`), so captures — netstack's own or any
Ethernet/raw-IP pcap or pcapng — can be read without Wireshark, tunnels
included (GRE, gretap, IPIP, 6in4).
"""

from __future__ import annotations

from typing import TextIO

from netstack.errors import ConfigError
from netstack.userspace.tcpdump.tcpdump import TCPDUMP_USAGE, Dumper, parse_tcpdump_args, read_pcap

__all__ = ["decode"]


def decode(argv: list[str], *, out: TextIO, err: TextIO) -> int:
    """Run ``netstack decode ARGV``; returns the exit status."""
    try:
        opts = parse_tcpdump_args(argv)
        if opts.read_file is None and opts.expression:
            opts.read_file = opts.expression.pop(0)
        if opts.show_help:
            print(TCPDUMP_USAGE.replace("tcpdump [", "netstack decode ["), file=err)
            return 0
        if opts.read_file is None:
            print("netstack decode: which capture file? (netstack decode FILE.pcap)", file=err)
            return 2
        head, frames = read_pcap(opts.read_file)
        dumper = Dumper(opts, lambda s: print(s, file=out))
    except ConfigError as e:
        print(e, file=err)
        return 1
    print(head, file=err)
    try:
        for ts, data, wirelen in frames:
            dumper.frame(ts, data, wirelen)
            if dumper.done:
                break
    except BrokenPipeError:  # `netstack decode x.pcap | head`
        return 0
    finally:
        dumper.close()
        frames.close()
    return 0
