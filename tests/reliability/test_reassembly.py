"""Issue 13, item 8: reassembly places each fragment in O(log n), with the kernel's rules.

The queue keeps runs of contiguous fragments (``inet_frag_queue_insert``): an
in-order fragment joins the last run, any other is placed by a binary
search. A fragment wholly inside a run is a duplicate, dropped alone; one
that straddles is an overlap, the whole datagram goes. Before, every
fragment re-sorted the queue and compared itself with every queued one (a
datagram of 8,191 fragments sent backwards took ~1.5 s of CPU), and a
fragment inside a run but not equal to one fragment killed the datagram.

    h (10.0.0.2/24, 2001:db8::2/64, UDP port 5000) ── Port (the sender)
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio

from netstack.host import Host, Lab, Port
from netstack.ipv4 import ipv4_of
from netstack.ipv6.af_inet6 import ipv6_of
from netstack.socket import AF_INET, AF_INET6, SOCK_DGRAM, Socket
from netstack.testing import floods
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

SRC4, DST4 = aton("10.0.0.1"), aton("10.0.0.2")
SRC6, DST6 = aton6("2001:db8::1"), aton6("2001:db8::2")
PEER_MAC = bytes.fromhex("020000000001")


async def rig(lab: Lab, family: int) -> tuple[Host, Port, Socket]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    h.ip("addr add 10.0.0.2/24 dev eth0")
    h.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
    h.ip("neigh add 10.0.0.1 lladdr 02:00:00:00:00:01 dev eth0")
    h.ip("-6 neigh add 2001:db8::1 lladdr 02:00:00:00:00:01 dev eth0")
    sock = h.socket(family, SOCK_DGRAM)
    await sock.bind(("", 5000))
    await trio.sleep(1)
    return h, port, sock


def datagram(family: int, size: int) -> bytes:
    """A UDP datagram (header + payload) to fragment: what follows the IP header."""
    payload = bytes(random.Random(size).getrandbits(8) for _ in range(size))
    if family == AF_INET:
        return floods.udp4(SRC4, DST4, 1000, 5000, payload)[20:]
    return floods.udp6(SRC6, DST6, 1000, 5000, payload)[40:]


def fragment(h: Host, family: int, data: bytes, offset: int, end: int, more: bool) -> bytes:
    mac = bytes(h.dev("eth0").dev_addr)
    if family == AF_INET:
        pkt = floods.ipv4_fragment(SRC4, DST4, 77, offset, more, data[offset:end])
        return floods.eth(mac, PEER_MAC, 0x0800, pkt)
    pkt = floods.ipv6_fragment(SRC6, DST6, 77, offset, more, data[offset:end])
    return floods.eth(mac, PEER_MAC, 0x86DD, pkt)


def new_drops(h: Host, before: dict[str, int]) -> dict[str, int]:
    """Drops since *before* (the boot's own, such as a looped DAD probe, left out)."""
    now = h.drops()
    return {k: v - before.get(k, 0) for k, v in now.items() if v != before.get(k, 0)}


def mib(h: Host, family: int) -> Any:
    return ipv4_of(h.net).ip if family == AF_INET else ipv6_of(h.net).ip6_mib


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
async def test_a_fragment_inside_a_run_is_a_duplicate(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    h, port, sock = await rig(lab, family)
    boot = h.drops()
    data = datagram(family, 64 - 8)  # 64 bytes after the IP header
    for offset, end, more in ((0, 16, True), (16, 32, True), (32, 48, True)):
        await port.send(fragment(h, family, data, offset, end, more))  # one run, 0-48
    await port.send(fragment(h, family, data, 8, 24, True))  # inside the run: duplicate
    await trio.sleep(0.01)
    assert new_drops(h, boot) == {"DUP_FRAG": 1}
    await port.send(fragment(h, family, data, 40, 56, True))  # straddles its end: overlap
    await trio.sleep(0.01)
    assert new_drops(h, boot) == {"DUP_FRAG": 1, "FRAG_OVERLAP": 4}  # the 3 queued, itself
    for offset, end, more in ((0, 32, True), (32, 64, False)):
        await port.send(fragment(h, family, data, offset, end, more))
    with trio.fail_after(1):
        got, _ = await sock.recvfrom(100)
    assert got == data[8:]


@pytest.mark.parametrize(
    ("family", "order"), [(AF_INET, "backwards"), (AF_INET, "shuffled"), (AF_INET6, "backwards")]
)
@pytest.mark.slow
async def test_8191_fragments_reassemble(
    lab: Lab, autojump_clock: object, family: int, order: str
) -> None:
    """The largest datagram in the smallest fragments, in the worst order."""
    h, port, sock = await rig(lab, family)
    # 8,190 queued skbs are more than the default 4 MB of ipfrag_high_thresh (as on Linux)
    v, key = ("ipv4", "ipfrag") if family == AF_INET else ("ipv6", "ip6frag")
    h.sysctl(f"net.{v}.{key}_high_thresh={64 << 20}")
    boot = h.drops()
    size = 65535 - 20 - 8 if family == AF_INET else 65535 - 8 - 8
    data = datagram(family, size)
    total = len(data)
    pieces = [(o, min(o + 8, total), o + 8 < total) for o in range(0, total, 8)]
    if order == "backwards":
        pieces.reverse()
    else:
        random.Random(1).shuffle(pieces)
    for i, (offset, end, more) in enumerate(pieces):
        port.send_nowait(fragment(h, family, data, offset, end, more))
        if i % 256 == 255:
            await trio.sleep(0.001)
    with trio.fail_after(1):
        got, _ = await sock.recvfrom(70000)
    assert got == data[8:]
    assert mib(h, family).ReasmReqds == len(pieces) == (total + 7) // 8
    assert mib(h, family).ReasmOKs == 1
    assert not new_drops(h, boot)


@pytest.mark.parametrize("family", [AF_INET, AF_INET6])
async def test_above_the_high_threshold_fragments_are_refused_not_timed_out(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    h, port, _ = await rig(lab, family)
    boot = h.drops()
    v = "ipv4" if family == AF_INET else "ipv6"
    key = "ipfrag" if family == AF_INET else "ip6frag"
    h.sysctl(f"net.{v}.{key}_high_thresh=20000")
    mac = bytes(h.dev("eth0").dev_addr)
    if family == AF_INET:
        frames = floods.frag_flood(100, mac, PEER_MAC, aton("10.0.0.0"), DST4, size=1000)
    else:
        frames = floods.frag_flood6(100, mac, PEER_MAC, aton6("2001:db8::"), DST6, size=1000)
    for frame in frames:
        port.send_nowait(frame)
    await trio.sleep(0.01)
    frags = ipv4_of(h.net).frags if family == AF_INET else ipv6_of(h.net).frags
    queued = len(frags.queues)
    assert frags.mem <= 20000 + 2048  # one fragment's truesize past the threshold, at most
    assert new_drops(h, boot) == {"NOT_SPECIFIED": 100 - queued}
    assert mib(h, family).ReasmFails == 100 - queued
    await trio.sleep(61)  # the queues time out: reported as such
    assert new_drops(h, boot) == {"NOT_SPECIFIED": 100 - queued, "FRAG_REASM_TIMEOUT": queued}
    assert frags.mem == 0 and not frags.queues
