"""``arping``: ARP requests to a neighbour and its replies, as iputils' arping prints them.

Theory of operation: arping talks ARP itself through a packet socket: it
builds who-has requests on the device (``-I``, or the one the route to the
target leaves by) from the device's address (``-s``, or the source the
kernel would pick), broadcast at first and unicast to the MAC that answered
once one did (``-b`` keeps broadcasting), one every ``-i`` (1) second; it
reads the replies the device receives (the tap ``tcpdump`` uses is the
packet socket here: the frames queue on it and are read after the send,
as arping's event loop reads them) and prints each as ``Unicast reply from
IP [MAC]  0.529ms``: the time since the send's stamp, taken before
``sendto``, in iputils' arithmetic, which adds half a millisecond (a reply
received inside the request's transmit, at the peer's poll at its
``local_bh_enable``, prints ``0.500ms``). It stops after ``-c`` requests
(and one more interval for the last reply), at ``-w`` seconds, at the first
reply with ``-f``, or on Ctrl-C, and prints how many probes and replies there were. ``-D``
(duplicate address detection) asks from 0.0.0.0 and succeeds when nobody
answers; ``-U``/``-A`` announce the source address (gratuitous ARP request
or reply) and expect no answer. The kernel's ARP cache is not touched.

iputils: arping.c (send_pack(), recv_pack(), finish()).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs
import trio

from netstack.core.dev import dev_queue_xmit
from netstack.core.sock import SOCK_DGRAM
from netstack.ipv4.arp import arp_create
from netstack.userspace import netdb
from netstack.userspace.netdb import AF_INET
from netstack.wire.ipv4 import aton, ntoa

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.userspace.process import Machine, Process

__all__ = ["ARPING_USAGE", "main"]

ETH_P_ARP: Final = 0x0806
ARPOP_REQUEST: Final = 1
ARPOP_REPLY: Final = 2

ARPING_USAGE: Final = (
    "\n"
    "Usage:\n"
    "  arping [options] <destination>\n"
    "\n"
    "Options:\n"
    "  -f            quit on first reply\n"
    "  -q            be quiet\n"
    "  -b            keep on broadcasting, do not unicast\n"
    "  -D            duplicate address detection mode\n"
    "  -U            unsolicited ARP mode, update your neighbours\n"
    "  -A            ARP answer mode, update your neighbours\n"
    "  -V            print version and exit\n"
    "  -c <count>    how many packets to send\n"
    "  -w <timeout>  how long to wait for a reply\n"
    "  -i <interval> set interval between packets (default: 1 second)\n"
    "  -I <device>   which ethernet device to use\n"
    "  -s <source>   source ip address\n"
    "  <destination> dns name or ip address\n"
    "\n"
    "For more details see arping(8)."
)


@attrs.define
class _Args:
    count: int | None = None
    deadline: float | None = None
    interval: float = 1.0
    device: str | None = None
    source: str | None = None
    first: bool = False
    quiet: bool = False
    broadcast_only: bool = False
    dad: bool = False
    unsolicited: bool = False
    answer: bool = False
    target: str | None = None


def _parse(proc: Process, argv: list[str]) -> _Args | int:
    a = _Args()
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or len(word) == 1:
            a.target = word
            continue
        j = 1
        while j < len(word):
            c = word[j]
            j += 1
            if c in "fqbDUAV":
                if c == "V":
                    proc.out("arping from iputils 20221126")
                    return 0
                a.first |= c == "f"
                a.quiet |= c == "q"
                a.broadcast_only |= c == "b"
                a.dad |= c == "D"
                a.unsolicited |= c == "U"
                a.answer |= c == "A"
                continue
            if c not in "cwiIs":
                proc.err(f"arping: invalid option -- '{c}'{ARPING_USAGE}")
                return 2
            if j < len(word):
                value, j = word[j:], len(word)
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                proc.err(f"arping: option requires an argument -- '{c}'{ARPING_USAGE}")
                return 2
            try:
                if c == "c":
                    a.count = int(value)
                elif c == "w":
                    a.deadline = float(value)
                elif c == "i":
                    a.interval = float(value)
            except ValueError:
                proc.err(f"arping: invalid argument: '{value}'")
                return 2
            if c == "I":
                a.device = value
            elif c == "s":
                a.source = value
    if a.target is None:
        proc.err(ARPING_USAGE)
        return 2
    return a


async def _route(host: Machine, target: str) -> tuple[str, str] | None:
    """(device, source) the kernel would use for *target*: a connected UDP socket's answer."""
    sock = host.socket(AF_INET, SOCK_DGRAM, 0)
    try:
        await sock.connect((target, 1025))
        src = str(sock.getsockname()[0])
    except OSError:
        return None
    finally:
        sock.close()
    for dev in host.net.devices.values():
        in_dev = dev.ip_ptr
        if in_dev is not None and any(ntoa(ifa.ifa_local) == src for ifa in in_dev.ifa_list):
            return dev.name, src
    return None


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``arping`` command (see the module docstring)."""
    a = _parse(proc, argv)
    if isinstance(a, int):
        return a
    assert a.target is not None
    try:
        _fam, target = netdb.getaddrinfo(proc, a.target, AF_INET)[0]
    except netdb.GaiError as e:
        proc.err(f"arping: {a.target}: {e}")
        return 2
    routed = await _route(host, target)
    device = a.device or (routed[0] if routed is not None else None)
    if device is None:
        proc.err("arping: no suitable device found, please use -I option")
        return 2
    dev = host.net.dev_get_by_name(device)
    if dev is None:
        proc.err(f"arping: {device}: No such device")
        return 2
    if a.dad:
        source = "0.0.0.0"
    elif a.source is not None:
        source = a.source
    elif a.unsolicited or a.answer:
        source = target
    elif routed is not None:
        source = routed[1]
    else:
        proc.err("arping: no source address in not-DAD mode")
        return 2
    src_ip, dst_ip = aton(source), aton(target)
    announce = a.unsolicited or a.answer
    if not a.quiet:
        proc.out(f"ARPING {target} from {source} {dev.name}")
    clock = host.net.clock
    st = _Arping(a, dev, src_ip, dst_ip, proc, clock.now)
    tap = host.capture(dev.name, callback=st.queue)
    start = clock.now()
    count = a.count if a.count is not None else math.inf
    try:
        with (
            proc.interrupt,
            trio.move_on_at(start + a.deadline if a.deadline is not None else math.inf),
        ):
            while st.sent < count:
                op = ARPOP_REPLY if a.answer else ARPOP_REQUEST
                dest_hw = None if st.unicast_to is None or announce else st.unicast_to
                skb = arp_create(
                    op, ETH_P_ARP, dst_ip, dev, src_ip, dest_hw, None,
                    None if not a.answer else bytes(dev.dev_addr),
                )  # fmt: skip
                # send_pack(): the time is taken before sendto() and kept as the
                # last send once it returns; a reply received inside the transmit
                # (the peer's poll at its local_bh_enable) waits in the packet
                # socket's queue until the event loop reads it, after the send
                now = clock.now()
                dev_queue_xmit(skb)
                st.last = now
                st.sent += 1
                st.broadcasts += dest_hw is None
                if st.recv_all():
                    break
                with trio.move_on_after(a.interval):
                    while True:
                        await st.readable.wait()
                        st.readable = trio.Event()
                        if st.recv_all():
                            break
                if st.done:
                    break
    finally:
        tap.stop()
        host.captures.remove(tap)
    sent, broadcasts, received = st.sent, st.broadcasts, st.received
    if not a.quiet:
        proc.out(f"Sent {sent} probes ({broadcasts} broadcast(s))")
        proc.out(f"Received {received} response(s)")
    if a.dad:
        return 1 if received else 0
    if announce:
        return 0
    return 0 if received else 1


class _Arping:
    """One run's state and its packet socket's queue (iputils' ``struct run_state``)."""

    def __init__(
        self,
        a: _Args,
        dev: NetDevice,
        src_ip: int,
        dst_ip: int,
        proc: Process,
        now: Callable[[], float],
    ) -> None:
        self.a = a
        self.dev = dev
        self.src_ip = src_ip
        self.dst_ip = dst_ip
        self.proc = proc
        self.now = now
        self.sent = 0
        self.broadcasts = 0
        self.received = 0
        self.last: float | None = None  # ctl->last: when the last probe was sent
        self.unicast_to: bytes | None = None
        self.done = False  # recv_pack() returned FINAL_PACKS
        self.frames: deque[bytes] = deque()  # the packet socket's receive queue
        self.readable = trio.Event()

    def queue(self, _t: float, frame: bytes, outgoing: bool) -> None:
        """The tap: a frame the device received joins the socket's queue."""
        if not outgoing:
            self.frames.append(frame)
            self.readable.set()

    def recv_all(self) -> bool:
        """recvfrom() until the queue is empty, each frame through :meth:`recv_pack`;
        True when one of them ends the run."""
        frames = self.frames
        while frames and not self.done:
            self.done = self.recv_pack(frames.popleft())
        frames.clear()
        return self.done

    def recv_pack(self, frame: bytes) -> bool:
        """iputils: arping.c, recv_pack(); True for FINAL_PACKS."""
        a = self.a
        if len(frame) < 42 or int.from_bytes(frame[12:14], "big") != ETH_P_ARP:
            return False
        arp = frame[14:42]
        if int.from_bytes(arp[6:8], "big") != ARPOP_REPLY and not a.dad:
            return False
        sender_hw, sender_ip = arp[8:14], int.from_bytes(arp[14:18], "big")
        target_ip = int.from_bytes(arp[24:28], "big")
        if sender_ip != self.dst_ip or (not a.dad and target_ip != self.src_ip):
            return False
        if not a.quiet:
            dev = self.dev
            kind = "Unicast" if frame[0:6] == bytes(dev.dev_addr) else "Broadcast"
            mac = ":".join(f"{b:02X}" for b in sender_hw)
            # (iputils tests ctl->last.tv_sec, never 0 on CLOCK_MONOTONIC after
            # boot; a lab's clock starts at 0: whether a probe was sent says it)
            when = " UNSOLICITED?" if self.last is None else _elapsed(self.last, self.now())
            self.proc.out(f"{kind} reply from {ntoa(self.dst_ip)} [{mac}] {when}")
        self.received += 1
        if a.first:
            return True
        if not a.broadcast_only:
            self.unicast_to = bytes(sender_hw)
        return False


def _elapsed(last: float, now: float) -> str:
    """The time recv_pack() prints, with its arithmetic: microseconds rounded,
    then ``msecs = (usecs + 500) / 1000; usecs -= msecs * 1000 - 500`` (which adds
    half a millisecond: a reply 29 µs after the request prints `` 0.529ms``, as
    this machine's arping printed over a veth).

    iputils: arping.c, recv_pack().
    """
    t0, t1 = round(last * 1e9), round(now * 1e9)
    dsec = t1 // 1_000_000_000 - t0 // 1_000_000_000
    dnsec = t1 % 1_000_000_000 - t0 % 1_000_000_000 + 500
    usecs = dsec * 1_000_000 + (dnsec // 1000 if dnsec >= 0 else -(-dnsec // 1000))
    msecs = (usecs + 500) // 1000
    usecs -= msecs * 1000 - 500
    return f" {msecs}.{usecs:03d}ms"
