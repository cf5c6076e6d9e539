"""``arping``: ARP requests to a neighbour and its replies, as iputils' arping prints them.

Theory of operation: arping talks ARP itself through a packet socket: it
builds who-has requests on the device (``-I``, or the one the route to the
target leaves by) from the device's address (``-s``, or the source the
kernel would pick), broadcast at first and unicast to the MAC that answered
once one did (``-b`` keeps broadcasting), one every ``-i`` (1) second; it
reads the replies the device receives (the tap ``tcpdump`` uses is the
packet socket here) and prints each as ``Unicast reply from IP [MAC]
0.529ms``. It stops after ``-c`` requests (and one more interval for the
last reply), at ``-w`` seconds, at the first reply with ``-f``, or on
Ctrl-C, and prints how many probes and replies there were. ``-D``
(duplicate address detection) asks from 0.0.0.0 and succeeds when nobody
answers; ``-U``/``-A`` announce the source address (gratuitous ARP request
or reply) and expect no answer. The kernel's ARP cache is not touched.

iputils: arping.c (send_pack(), recv_pack(), finish()).
"""

from __future__ import annotations

import math
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
    sent = broadcasts = received = 0
    unicast_to: bytes | None = None
    last_sent = [0.0]
    got_reply = trio.Event()

    def on_frame(_t: float, frame: bytes, outgoing: bool) -> None:
        nonlocal received, unicast_to
        if outgoing or len(frame) < 42 or int.from_bytes(frame[12:14], "big") != ETH_P_ARP:
            return
        arp = frame[14:42]
        if int.from_bytes(arp[6:8], "big") != ARPOP_REPLY and not a.dad:
            return
        sender_hw, sender_ip = arp[8:14], int.from_bytes(arp[14:18], "big")
        target_ip = int.from_bytes(arp[24:28], "big")
        if sender_ip != dst_ip or (not a.dad and target_ip != src_ip):
            return
        received += 1
        if not a.broadcast_only:
            unicast_to = bytes(sender_hw)
        if not a.quiet:
            kind = "Unicast" if frame[0:6] == bytes(dev.dev_addr) else "Broadcast"
            mac = ":".join(f"{b:02X}" for b in sender_hw)
            ms = (clock.now() - last_sent[0]) * 1000
            proc.out(f"{kind} reply from {target} [{mac}]  {ms:.3f}ms")
        got_reply.set()

    tap = host.capture(dev.name, callback=on_frame)
    start = clock.now()
    count = a.count if a.count is not None else math.inf
    try:
        with (
            proc.interrupt,
            trio.move_on_at(start + a.deadline if a.deadline is not None else math.inf),
        ):
            while sent < count:
                op = ARPOP_REPLY if a.answer else ARPOP_REQUEST
                dest_hw = None if unicast_to is None or announce else unicast_to
                skb = arp_create(
                    op, ETH_P_ARP, dst_ip, dev, src_ip, dest_hw, None,
                    None if not a.answer else bytes(dev.dev_addr),
                )  # fmt: skip
                dev_queue_xmit(skb)
                sent += 1
                broadcasts += dest_hw is None
                last_sent[0] = clock.now()
                with trio.move_on_after(a.interval):
                    if a.first:
                        await got_reply.wait()
                        break
                    await trio.sleep_forever()
    finally:
        tap.stop()
        host.captures.remove(tap)
    if not a.quiet:
        proc.out(f"Sent {sent} probes ({broadcasts} broadcast(s))")
        proc.out(f"Received {received} response(s)")
    if a.dad:
        return 1 if received else 0
    if announce:
        return 0
    return 0 if received else 1
