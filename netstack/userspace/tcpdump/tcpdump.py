"""``tcpdump``: the command line, the filter and the printer, over pcap files or live frames.

Theory of operation: :func:`parse_tcpdump_args` reads tcpdump's argv with
tcpdump's own getopt rules and messages (``tcpdump: invalid option -- 'k'``,
``tcpdump: invalid packet count x``…) into :class:`TcpdumpOptions`, including
the filter expression (:mod:`.tcpdump_filter`). :class:`Dumper` applies the
filter and the printer (:mod:`.tcpdump_print`) to each frame and keeps the
counts tcpdump reports at the end (``3 packets captured``). :func:`read_pcap`
yields the frames of a capture file; ``netstack decode`` is ``tcpdump -r``.

The live form (``tcpdump -i eth0`` on an emulated host) is the same
:class:`Dumper` fed by a packet tap the host opens (``host.capture``, the
``AF_PACKET`` socket of this emulation); :func:`main` is the command, both forms.

Deviations from tcpdump, on purpose: addresses and ports are always numeric
(``-n``/``-nn`` are accepted and change nothing), timestamps are virtual time
printed in UTC, and application protocols (DNS, HTTP…) are not decoded.
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final

import attrs
import dpkt
import trio

from netstack.errors import ConfigError
from netstack.userspace.tcpdump.tcpdump_filter import Predicate, compile_filter, dissect
from netstack.userspace.tcpdump.tcpdump_print import Printer
from netstack.wire.arp import ARPHRD_LOOPBACK

if TYPE_CHECKING:
    from netstack.userspace.process import Machine, Process

__all__ = [
    "TCPDUMP_USAGE",
    "Dumper",
    "TcpdumpOptions",
    "main",
    "parse_tcpdump_args",
    "read_pcap",
]

TCPDUMP_VERSION: Final = "tcpdump version 4.99.3 (netstack)\nlibpcap version 1.10.3 (netstack)"
TCPDUMP_USAGE: Final = (
    TCPDUMP_VERSION
    + "\n"
    + "Usage: tcpdump [-AbdDefhHIJKlLnNOpqStuUvxX#] [ -B size ] [ -c count ] [--count]\n"
    "\t\t[ -C file_size ] [ -E algo:secret ] [ -F file ] [ -G seconds ]\n"
    "\t\t[ -i interface ] [ --immediate-mode ] [ -j tstamptype ]\n"
    "\t\t[ -M secret ] [ --number ] [ --print ] [ -Q in|out|inout ]\n"
    "\t\t[ -r file ] [ -s snaplen ] [ -T type ] [ --version ]\n"
    "\t\t[ -V file ] [ -w file ] [ -W filecount ] [ -y datalinktype ]\n"
    "\t\t[ --time-stamp-precision precision ] [ --micro ] [ --nano ]\n"
    "\t\t[ -z postrotate-command ] [ -Z user ] [ expression ]"
)

# getopt(3) string of tcpdump 4.99 (options with an argument are followed by ':')
_GETOPT: Final = "aAbB:c:C:dDeE:fF:G:hHi:IjJ:KlLm:M:nNOpqQ:r:s:StT:uUvV:w:W:xXy:Yz:Z:#"
_WITH_ARG: Final = frozenset(c for i, c in enumerate(_GETOPT) if _GETOPT[i + 1 : i + 2] == ":")
_FLAGS: Final = frozenset(c for c in _GETOPT if c != ":")
_IGNORED: Final = frozenset("aAbdDfHIjJKlLNOpuUY#BCEFGMmTVWyzZ")  # accepted, no effect here

LINKTYPES: Final = {1: "EN10MB (Ethernet)", 101: "RAW (Raw IP)", 12: "RAW (Raw IP)"}


@attrs.define
class TcpdumpOptions:
    """What a ``tcpdump`` command line asked for."""

    interface: str | None = None
    count: int | None = None
    verbose: int = 0
    eflag: bool = False
    qflag: bool = False
    tstyle: int = 0
    xflag: int = 0
    big_xflag: int = 0
    absolute_seq: bool = False
    read_file: str | None = None
    write_file: str | None = None
    snaplen: int = 262144
    direction: str = "inout"
    print_anyway: bool = False
    number: bool = False
    expression: list[str] = attrs.Factory(list)
    show_version: bool = False
    show_help: bool = False

    def printer(self) -> Printer:
        return Printer(
            verbose=self.verbose,
            eflag=self.eflag,
            qflag=self.qflag,
            tstyle=self.tstyle,
            xflag=self.big_xflag or self.xflag,
            ascii_dump=self.big_xflag > 0,
            absolute_seq=self.absolute_seq,
        )


def _err(msg: str, code: int = errno.EINVAL) -> ConfigError:
    return ConfigError(f"tcpdump: {msg}", code)


def parse_tcpdump_args(argv: list[str]) -> TcpdumpOptions:
    """Parse tcpdump's argv (without ``tcpdump``) as getopt does; the rest is the filter.

    Raises:
        ConfigError: with tcpdump's message (usage text included where tcpdump prints it).
    """
    opts = TcpdumpOptions()
    operands: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            operands.extend(argv[i + 1 :])
            break
        if arg.startswith("--"):
            name = arg[2:]
            if name == "version":
                opts.show_version = True
            elif name == "help":
                opts.show_help = True
            elif name == "number":
                opts.number = True
            elif name == "print":
                opts.print_anyway = True
            elif name in ("count", "immediate-mode", "micro", "nano"):
                pass
            else:
                raise _err(f"unrecognized option '{arg}'\n{TCPDUMP_USAGE}")
            i += 1
            continue
        if not arg.startswith("-") or arg == "-":
            operands.append(arg)  # GNU getopt permutes: options may follow the expression
            i += 1
            continue
        j = 1
        i += 1
        while j < len(arg):
            c = arg[j]
            j += 1
            if c not in _FLAGS:
                raise _err(f"invalid option -- '{c}'\n{TCPDUMP_USAGE}")
            value = ""
            if c in _WITH_ARG:
                if j < len(arg):
                    value, j = arg[j:], len(arg)
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    raise _err(f"option requires an argument -- '{c}'\n{TCPDUMP_USAGE}")
            _apply(opts, c, value)
    opts.expression = operands
    return opts


def _apply(opts: TcpdumpOptions, c: str, value: str) -> None:
    if c == "c":
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n <= 0:
            raise _err(f"invalid packet count {value}")
        opts.count = n
    elif c == "e":
        opts.eflag = True
    elif c == "h":
        opts.show_help = True
    elif c == "i":
        opts.interface = value
    elif c == "n":
        pass
    elif c == "q":
        opts.qflag = True
    elif c == "Q":
        if value not in ("in", "out", "inout"):
            raise _err(f"unknown capture direction '{value}'")
        opts.direction = value
    elif c == "r":
        opts.read_file = value
    elif c == "s":
        try:
            n = int(value)
        except ValueError:
            n = -1
        if n < 0 or n > 262144:
            raise _err(f"invalid snaplen {value}")
        opts.snaplen = n or 262144
    elif c == "S":
        opts.absolute_seq = True
    elif c == "t":
        opts.tstyle += 1
    elif c == "v":
        opts.verbose += 1
    elif c == "w":
        opts.write_file = value
    elif c == "x":
        opts.xflag += 1
    elif c == "X":
        opts.big_xflag += 1
    elif c in _IGNORED:
        pass


@attrs.define
class Dumper:
    """Filter and print frames as one ``tcpdump`` run does; counts what it saw."""

    opts: TcpdumpOptions
    write: Callable[[str], None]
    resolve: Callable[[str], str | None] | None = None
    raw: bool = False  # frames carry an empty Ethernet header over raw IP (gre, ipip, sit)
    captured: int = 0
    received: int = 0
    _printer: Printer = attrs.field(init=False)
    _filter: Predicate | None = attrs.field(init=False)
    _writer: dpkt.pcap.Writer | None = attrs.field(init=False, default=None)
    _file: BinaryIO | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._printer = self.opts.printer()
        try:
            self._filter = compile_filter(self.opts.expression, self.resolve)
        except ConfigError as e:
            raise _err(str(e)) from None
        if self.opts.write_file is not None:
            try:
                self._file = Path(self.opts.write_file).open("wb")  # noqa: SIM115 - closed in close()
            except OSError as e:
                raise _err(f"{self.opts.write_file}: {e.strerror}", e.errno or errno.EIO) from None
            linktype = 101 if self.raw else 1  # LINKTYPE_RAW, as their captures are written
            self._writer = dpkt.pcap.Writer(
                self._file, snaplen=self.opts.snaplen, linktype=linktype
            )

    @property
    def done(self) -> bool:
        """True once ``-c COUNT`` frames were captured."""
        return self.opts.count is not None and self.captured >= self.opts.count

    def frame(self, ts: float, frame: bytes, wirelen: int | None = None) -> bool:
        """Offer one frame; returns True if it matched the filter (and was printed or saved)."""
        if self.done:
            return False
        self.received += 1
        if self._filter is not None and not self._filter(dissect(frame, wirelen)):
            return False
        self.captured += 1
        data = frame[: self.opts.snaplen]
        if self._writer is not None:
            self._writer.writepkt(frame[14:][: self.opts.snaplen] if self.raw else data, ts=ts)
            if not self.opts.print_anyway:
                return True
        text = self._printer.packet(ts, data, wirelen if wirelen is not None else len(frame))
        if self.opts.number:
            text = f"{self.captured:5d}  {text}"
        self.write(text)
        return True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._writer = None

    def summary(self, dropped: int = 0) -> str:
        """The three lines tcpdump prints on stderr when a live capture ends."""
        return (
            f"{self.captured} packet{'' if self.captured == 1 else 's'} captured\n"
            f"{self.received} packet{'' if self.received == 1 else 's'} received by filter\n"
            f"{dropped} packet{'' if dropped == 1 else 's'} dropped by kernel"
        )


_PCAP_MAGIC: Final = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}


def read_pcap(path: str | Path) -> tuple[str, Generator[tuple[float, bytes, int], None, None]]:
    """Open a pcap (or pcapng) file: (tcpdump's "reading from file" line, frames).

    Frames are ``(timestamp, captured bytes, length on the wire)``; raw-IP
    captures get an Ethernet header added so one printer serves both.

    Raises:
        ConfigError: ``tcpdump: FILE: No such file or directory`` and the like.
    """
    try:
        f = Path(path).open("rb")  # noqa: SIM115 - closed by the generator
    except OSError as e:
        raise _err(f"{path}: {e.strerror}", e.errno or errno.EIO) from None
    magic = f.read(4)
    f.seek(0)
    records: Iterator[tuple[float, bytes, int]]
    if magic in _PCAP_MAGIC:
        order, unit = _PCAP_MAGIC[magic]
        head = f.read(24)
        if len(head) < 24:
            f.close()
            raise _err(
                f"{path}: truncated dump file; tried to read 24 file header bytes, "
                f"only got {len(head)}"
            )
        _maj, _min, _tz, _sig, snaplen, linktype = struct.unpack(order + "HHiIII", head[4:])
        records = _pcap_records(f, order, unit)
    elif magic == b"\x0a\x0d\x0d\x0a":
        try:
            ng = dpkt.pcapng.Reader(f)
        except (ValueError, dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError):
            f.close()
            raise _err(f"{path}: unknown file format") from None
        linktype, snaplen = ng.datalink(), ng.snaplen
        records = ((float(ts), bytes(buf), len(buf)) for ts, buf in ng)
    else:
        f.close()
        raise _err(f"{path}: unknown file format")
    linktype &= 0x0FFFFFFF
    if linktype not in LINKTYPES:
        f.close()
        raise _err(f"{path}: unsupported link-layer type {linktype}")
    line = f"reading from file {path}, link-type {LINKTYPES[linktype]}, snapshot length {snaplen}"

    def frames() -> Generator[tuple[float, bytes, int], None, None]:
        try:
            for ts, data, wirelen in records:
                if linktype != 1:
                    etype = b"\x86\xdd" if data[:1] and data[0] >> 4 == 6 else b"\x08\x00"
                    yield ts, b"\0" * 12 + etype + data, wirelen + 14
                else:
                    yield ts, data, wirelen
        finally:
            f.close()

    return line, frames()


def _pcap_records(f: BinaryIO, order: str, unit: float) -> Iterator[tuple[float, bytes, int]]:
    rec = struct.Struct(order + "IIII")
    while True:
        hdr = f.read(16)
        if len(hdr) < 16:
            return
        sec, frac, caplen, wirelen = rec.unpack(hdr)
        data = f.read(caplen)
        if len(data) < caplen:
            return
        yield sec + frac * unit, data, wirelen


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``tcpdump`` command: ``-r FILE``, or a live capture on *host* until ``-c`` or Ctrl-C."""
    opts = parse_tcpdump_args(argv)
    if opts.show_version:
        proc.out(TCPDUMP_VERSION)
        return 0
    if opts.show_help:
        proc.err(TCPDUMP_USAGE)
        return 0
    if opts.read_file is not None:
        head, frames = read_pcap(opts.read_file)
        dumper = Dumper(opts, proc.out, proc.resolve)
        proc.err(head)
        try:
            for ts, data, wirelen in frames:
                dumper.frame(ts, data, wirelen)
                if dumper.done:
                    break
        finally:
            dumper.close()
            frames.close()
        return 0
    net = host.net
    name = opts.interface
    if name is None:
        up = [d for d in net.devices.values() if d.name != "lo" and d.is_up()]
        if not up:
            proc.err("tcpdump: no suitable device found")
            return 1
        name = up[0].name
    dev = net.dev_get_by_name(name)
    if dev is None:
        proc.err(f"tcpdump: {name}: No such device exists\n(No such device exists)")
        return 1
    if not dev.is_up():
        proc.err(f"tcpdump: {name}: That device is not up")
        return 1
    # devices without a link-layer header (gre, ipip, sit) capture raw IP, as in their pcaps
    raw = dev.header_ops is None and dev.type != ARPHRD_LOOPBACK
    dumper = Dumper(opts, proc.out, proc.resolve, raw=raw)
    link = "RAW (Raw IP)" if raw else "EN10MB (Ethernet)"
    if opts.verbose or opts.write_file is not None:
        proc.err(
            f"tcpdump: listening on {name}, link-type {link}, snapshot length {opts.snaplen} bytes"
        )
    else:
        proc.err("tcpdump: verbose output suppressed, use -v[v]... for full protocol decode")
        proc.err(f"listening on {name}, link-type {link}, snapshot length {opts.snaplen} bytes")
    done = trio.Event()

    def on_frame(ts: float, frame: bytes, outgoing: bool) -> None:
        if (opts.direction == "in" and outgoing) or (opts.direction == "out" and not outgoing):
            return
        if raw:  # the printer and filter read Ethernet: give the packet an empty header
            etype = b"\x86\xdd" if frame[:1] and frame[0] >> 4 == 6 else b"\x08\x00"
            frame = bytes(12) + etype + frame
        dumper.frame(ts, frame)
        if dumper.done:
            done.set()

    cap = host.capture(name, snaplen=opts.snaplen, callback=on_frame)
    interrupted = False
    try:
        with proc.interrupt:
            await done.wait()
        interrupted = proc.interrupt.cancelled_caught
    finally:
        cap.stop()
        host.captures.remove(cap)
        dumper.close()
    proc.err(("\n" if interrupted and not proc.background else "") + dumper.summary())
    return 0
