"""``netstack decode FILE.pcap``: tcpdump's one-line decoding of a capture file.

``netstack decode [-v] [-e] [-q] [-t…] [-x] [-c N] FILE [expression]`` is
``tcpdump -nn -r FILE`` with the same options and filter language
(:mod:`netstack.userspace.tcpdump.tcpdump`), so captures — netstack's own or the
ones people bring: Ethernet, Linux cooked v1/v2 (``tcpdump -i any``), raw IP,
pcap or pcapng — can be read without Wireshark, tunnels included (GRE, PPTP,
gretap, IPIP, 6in4, VXLAN). A file that ends inside a record prints what came
before, then tcpdump's ``pcap_loop: truncated dump file`` message, and exits 1.
"""

from __future__ import annotations

from typing import TextIO

from netstack.errors import ConfigError
from netstack.userspace.tcpdump.tcpdump import TCPDUMP_USAGE, parse_tcpdump_args, read_file

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
        return read_file(opts, lambda s: print(s, file=out), lambda s: print(s, file=err))
    except ConfigError as e:
        print(e, file=err)
        return 1
    except BrokenPipeError:  # `netstack decode x.pcap | head`
        return 0
