"""Fuzz the forwarding path: ``ip_rcv`` → ``ip_forward`` → ``ip_output`` on a router.

Router ``r`` has two Python-driven NICs: ``eth0`` (10.0.0.2/24, towards the
sender 10.0.0.1) and ``eth1`` (10.0.1.2/24, MTU 1000, towards 10.0.1.1), with
``net.ipv4.ip_forward=1`` and both neighbours already resolved. Hypothesis
sends mostly-valid datagrams, with a few things wrong, into ``eth0`` and checks
what comes out of either side:

* a datagram leaves by ``eth1`` only if it deserved to (header valid, TTL > 1,
  not a martian, unicast destination), with its TTL decremented, a valid
  header checksum and its payload intact — reassembling the fragments when it
  was bigger than ``eth1``'s MTU and had no DF;
* every ICMP error sent back is well formed (IP and ICMP checksums), quotes
  the offending datagram and is of the right kind (time exceeded for TTL ≤ 1,
  fragmentation needed with the next hop's MTU for a DF datagram that does not
  fit, net unreachable for a destination without a route), and none is sent
  about a broadcast, an ICMP error, a non-first fragment or a martian source
  (replies that are fragmented are checked once reassembled);
* the counters add up: ``ForwDatagrams`` counts what was forwarded, and no
  datagram disappears without a counter or a drop reason.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, TypeVar

import dpkt
import pytest
import trio
from helpers import IPV4_ONLY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import Host, Port, open_lab, run
from netstack.ipv4 import ipv4_of
from netstack.neigh.nud import NUD_INCOMPLETE
from netstack.wire.ipv4 import aton

LEFT_IP: Final = "10.0.0.2"
RIGHT_IP: Final = "10.0.1.2"
SENDER: Final = "10.0.0.1"
RECEIVER: Final = "10.0.1.1"
SENDER_MAC: Final = bytes.fromhex("020000000001")
RECEIVER_MAC: Final = bytes.fromhex("020000000002")
OUT_MTU: Final = 1000
ETH_P_IP: Final = 0x0800
ETH_P_ARP: Final = 0x0806
ICMP_ERRORS: Final = frozenset({3, 4, 5, 11, 12})
SETTLE: Final = 0.001

T = TypeVar("T")


def ip4(text: str) -> bytes:
    return aton(text).to_bytes(4, "big")


def martian(raw: bytes) -> bool:
    return raw[0] in (0, 127) or raw[0] >= 224


def ether(dst: bytes, src: bytes, etype: int, payload: bytes) -> bytes:
    return dst + src + struct.pack("!H", etype) + payload


def arp_request(sha: bytes, spa: str, tpa: str) -> bytes:
    arp = dpkt.arp.ARP(op=1, sha=sha, spa=ip4(spa), tha=bytes(6), tpa=ip4(tpa))
    return ether(b"\xff" * 6, sha, ETH_P_ARP, bytes(arp))


def ip_packet(
    src: str,
    dst: str,
    proto: int,
    payload: bytes,
    *,
    ttl: int,
    tos: int,
    ident: int,
    frag: int,
    opts: bytes,
) -> bytes:
    ihl = 5 + len(opts) // 4
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x40 | ihl,
            tos,
            ihl * 4 + len(payload),
            ident,
            frag,
            ttl,
            proto,
            0,
            ip4(src),
            ip4(dst),
        )
        + opts
    )
    struct.pack_into("!H", hdr, 10, dpkt.in_cksum(bytes(hdr)))
    return bytes(hdr) + payload


def icmp_message(icmp_type: int, code: int, data: bytes) -> bytes:
    msg = bytearray(struct.pack("!BBHI", icmp_type, code, 0, 0x00010001) + data)
    struct.pack_into("!H", msg, 2, dpkt.in_cksum(bytes(msg)))
    return bytes(msg)


@dataclass
class Sent:
    """A datagram sent into eth0, as the test built it."""

    frame: bytes
    ip: bytes  # the IPv4 datagram (tot_len bytes)
    valid: bool  # would ip_rcv accept the header?


def view(frame: bytes) -> Sent:
    ip = frame[14:]
    ok = len(ip) >= 20 and ip[0] >> 4 == 4 and (ip[0] & 0xF) >= 5
    if ok:
        ihl = (ip[0] & 0xF) * 4
        tot = struct.unpack_from("!H", ip, 2)[0]
        ok = len(ip) >= ihl and dpkt.in_cksum(ip[:ihl]) == 0 and ihl <= tot <= len(ip)
        if ok:
            ip = ip[:tot]
    return Sent(frame, ip, ok)


@dataclass
class Router:
    host: Host
    left: Port
    right: Port
    left_mac: bytes
    right_mac: bytes

    def counters(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for mib, snap in self.host.snmp().items():
            for key, value in snap.values:
                out[f"{mib}:{key}"] = value
        for reason, n in self.host.drops().items():
            out[f"drop:{reason}"] = n
        out["frag_queues"] = len(ipv4_of(self.host.net).frags.queues)
        return out


def forward_run(frames: list[Spec]) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            r = lab.add_host("r", sysctls={"net.ipv4.ip_forward": 1, **IPV4_ONLY})
            left = lab.add_port("r:eth0")
            right = lab.add_port("r:eth1", mtu=OUT_MTU)
            ipv4 = ipv4_of(r.net)
            ipv4.add_address(r.dev("eth0"), aton(LEFT_IP), 24, broadcast=aton("10.0.0.255"))
            ipv4.add_address(r.dev("eth1"), aton(RIGHT_IP), 24, broadcast=aton("10.0.1.255"))
            await trio.sleep(1.0)  # a router that has been up for a while
            router = Router(r, left, right, r.dev("eth0").dev_addr, r.dev("eth1").dev_addr)
            await left.send(arp_request(SENDER_MAC, SENDER, LEFT_IP))
            await right.send(arp_request(RECEIVER_MAC, RECEIVER, RIGHT_IP))
            await trio.sleep(SETTLE)
            left.drain()
            right.drain()
            for spec in frames:
                await check_one(router, spec.build(router.left_mac))
                await trio.sleep(0.2)  # refill the per-destination ICMP token bucket

    run(main)


async def check_one(router: Router, frame: bytes) -> None:
    sent = view(frame)
    before = router.counters()
    await router.left.send(frame)
    await trio.sleep(SETTLE)
    after = router.counters()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    back = router.left.drain()
    right = router.right.drain()
    fwd = delta.get("Ip:ForwDatagrams", 0)
    drops = sum(v for k, v in delta.items() if k.startswith("drop:"))

    # Forwarded copies keep the sender's addresses; out of eth0 they are redirected ones.
    def forwarded(f: bytes) -> bool:
        return f[12:14] == b"\x08\x00" and sent.valid and f[26:34] == sent.ip[12:20]

    out = [f for f in right if f[12:14] == b"\x08\x00"]
    # an ICMP error to a (spoofed) source on the right subnet leaves by eth1: a reply
    for f in [f for f in out if f[26:30] == ip4(RIGHT_IP) and f[23] == 1]:
        out.remove(f)
        assert sent.valid and f[30:34] == sent.ip[12:16], "a reply to someone else"
        assert dpkt.in_cksum(f[14:34]) == 0 and f[34] in ICMP_ERRORS
    out_left = [f for f in back if forwarded(f)]
    back = [f for f in back if not forwarded(f)]
    if frame[:6] != router.left_mac and not frame[0] & 1:  # for another host on the link
        assert delta.get("Ip:InReceives", 0) == 0, delta
        assert delta.get("drop:OTHERHOST", 0) == 1, delta
        assert not out, "forwarded a frame for another MAC"
        assert not back, "answered a frame for another MAC"
        return
    # (an ICMP error to a spoofed source that is one of the router's own addresses is
    # delivered through lo, and received a second time)
    assert 1 <= delta.get("Ip:InReceives", 0) <= 1 + delta.get("Icmp:OutMsgs", 0), delta
    accounted = fwd + delta.get("Ip:InDelivers", 0) + delta.get("Ip:ReasmReqds", 0) + drops
    assert accounted >= 1, f"datagram silently lost: {frame.hex()} {delta}"
    assert not (out and out_left), "forwarded out of both interfaces"
    if out or out_left:
        check_forwarded(router, sent, out or out_left, router.right_mac if out else router.left_mac)
        assert fwd == 1, delta
    elif fwd:  # forwarded to a neighbour still being resolved: queued behind ARP
        dst = sent.ip[16:20]
        dev = router.host.dev("eth1" if dst[:3] == ip4(RIGHT_IP)[:3] else "eth0")
        n = ipv4_of(router.host.net).arp_tbl.lookup(int.from_bytes(dst, "big"), dev)
        assert n is not None, delta
        assert n.nud_state == NUD_INCOMPLETE, delta
    for reply in merge_fragments(back):
        check_back(router, sent, reply)


def check_forwarded(router: Router, sent: Sent, out: list[bytes], mac: bytes) -> None:
    assert sent.valid, "forwarded a datagram with a damaged header"
    src, dst, ttl = sent.ip[12:16], sent.ip[16:20], sent.ip[8]
    assert ttl > 1, "forwarded a datagram whose TTL ran out"
    assert not martian(src), "forwarded a martian source"
    assert not martian(dst), "forwarded to a multicast/loopback destination"
    expected = RIGHT_IP if mac == router.right_mac else LEFT_IP
    assert dst[:3] == ip4(expected)[:3], "forwarded off the route"
    assert dst[3] != 255, "forwarded to a broadcast address"
    ihl = (sent.ip[0] & 0xF) * 4
    payload = sent.ip[ihl:]
    pieces: dict[int, bytes] = {}
    last_seen = False
    for frame in out:
        assert frame[6:12] == mac
        ip = frame[14:]
        fihl = (ip[0] & 0xF) * 4
        tot = struct.unpack_from("!H", ip, 2)[0]
        assert tot <= (OUT_MTU if mac == router.right_mac else 1500), "bigger than the MTU"
        assert dpkt.in_cksum(ip[:fihl]) == 0, f"bad header checksum: {frame.hex()}"
        assert ip[12:16] == src
        assert ip[16:20] == dst
        assert ip[9] == sent.ip[9]
        assert ip[8] == ttl - 1, "TTL not decremented by one"
        field = struct.unpack_from("!H", ip, 6)[0]
        in_field = struct.unpack_from("!H", sent.ip, 6)[0]
        if len(out) == 1:
            assert ip[4:6] == sent.ip[4:6], "the IP ID changed"
            assert field == in_field, "flags/offset changed on a datagram that fit"
        else:
            assert ip[4:6] == sent.ip[4:6], "a fragment lost the datagram's IP ID"
            assert not in_field & 0x4000, "fragmented a DF datagram"
        pieces[((field & 0x1FFF) - (in_field & 0x1FFF)) * 8] = ip[fihl:tot]
        last_seen = last_seen or not field & 0x2000
    rebuilt = b"".join(pieces[k] for k in sorted(pieces))
    assert rebuilt == payload, "the forwarded payload differs from what was sent"
    assert last_seen == (not struct.unpack_from("!H", sent.ip, 6)[0] & 0x2000)


def merge_fragments(frames: list[bytes]) -> list[bytes]:
    """Frames with the IPv4 fragments of one reply joined back into a whole datagram.

    (The router answers one datagram at a time, so all fragments belong together.)
    """
    whole: list[bytes] = []
    pieces: list[tuple[int, bytes, bytes]] = []
    for frame in frames:
        field = struct.unpack_from("!H", frame, 20)[0] if frame[12:14] == b"\x08\x00" else 0
        if not field & 0x3FFF:
            whole.append(frame)
            continue
        ihl = (frame[14] & 0xF) * 4
        tot = struct.unpack_from("!H", frame, 16)[0]
        pieces.append(((field & 0x1FFF) * 8, frame[: 14 + ihl], frame[14 + ihl : 14 + tot]))
    if pieces:
        pieces.sort()
        data = b""
        for off, _, chunk in pieces:
            assert off == len(data), "the reply's fragments leave a hole"
            data += chunk
        head = bytearray(pieces[0][1])
        struct.pack_into("!HHH", head, 16, len(head) - 14 + len(data), 0, 0)
        head[24:26] = b"\0\0"
        struct.pack_into("!H", head, 24, dpkt.in_cksum(bytes(head[14:])))
        whole.append(bytes(head) + data)
    return whole


def check_back(router: Router, sent: Sent, reply: bytes) -> None:
    eth = dpkt.ethernet.Ethernet(reply)
    assert eth.src == router.left_mac
    if eth.type == ETH_P_ARP:
        assert eth.data.op == 1, "unexpected ARP reply"
        return
    raw = reply[14:]
    assert raw[0] == 0x45, reply.hex()
    assert dpkt.in_cksum(raw[:20]) == 0, "bad IP header checksum"
    tot = struct.unpack_from("!H", raw, 2)[0]
    assert raw[9] == 1, "only ICMP goes back to the sender"
    icmp = raw[20:tot]
    assert dpkt.in_cksum(icmp) == 0, "bad ICMP checksum"
    assert sent.valid, "a reply to a damaged header"
    src = sent.ip[12:16]
    assert not martian(src), "a reply to a martian source"
    assert raw[16:20] == src, "a reply to someone else"
    in_field = struct.unpack_from("!H", sent.ip, 6)[0]
    if icmp[0] == 0:  # echo reply: the datagram was for the router
        assert sent.ip[16:20] in (ip4(LEFT_IP), ip4(RIGHT_IP))
        return
    assert icmp[0] in ICMP_ERRORS, f"unexpected ICMP type {icmp[0]}"
    # (a unicast datagram in a link-layer broadcast is answered, but never with an error)
    assert sent.frame[0] & 1 == 0, "an ICMP error about a link-layer broadcast"
    assert len(raw) <= 576
    assert in_field & 0x1FFF == 0, "an ICMP error about a non-first fragment"
    ihl = (sent.ip[0] & 0xF) * 4
    if sent.ip[9] == 1 and len(sent.ip) > ihl:
        assert sent.ip[ihl] not in ICMP_ERRORS, "an ICMP error about an ICMP error"
    assert icmp[8:28] == sent.ip[:20] or icmp[0] == 5, "the quote is not the datagram's header"
    ttl = sent.ip[8]
    if icmp[0] == 11:
        assert (icmp[1], ttl) in ((0, 0), (0, 1)), "time exceeded for a live TTL"
    if icmp[:2] == b"\x03\x04":
        egress_mtu = OUT_MTU if sent.ip[16:19] == ip4(RIGHT_IP)[:3] else 1500
        assert struct.unpack_from("!H", icmp, 6)[0] == egress_mtu
        assert in_field & 0x4000, "frag-needed for a datagram without DF"
        assert len(sent.ip) > egress_mtu


# -- strategies ------------------------------------------------------------------------------


def mostly(default: T, *others: T) -> st.SearchStrategy[T]:
    return st.sampled_from([default] * (len(others) * 5) + list(others))


@dataclass
class Spec:
    dst_mac: str
    packet: bytes
    flips: list[tuple[int, int]]
    fix_csum: bool
    cut: int | None

    def build(self, router_mac: bytes) -> bytes:
        mac = {"router": router_mac, "bcast": b"\xff" * 6, "other": bytes.fromhex("020000000099")}
        buf = bytearray(ether(mac[self.dst_mac], SENDER_MAC, ETH_P_IP, self.packet))
        for pos, bit in self.flips:
            buf[14 + pos % len(self.packet)] ^= 1 << bit
        if self.fix_csum:
            ihl = (buf[14] & 0xF) * 4
            if ihl >= 20 and len(buf) >= 14 + ihl:
                buf[24:26] = b"\0\0"
                struct.pack_into("!H", buf, 24, dpkt.in_cksum(bytes(buf[14 : 14 + ihl])))
        if self.cut is not None:
            del buf[14 + self.cut % len(self.packet) :]
        return bytes(buf)


@st.composite
def forward_specs(draw: st.DrawFn) -> Spec:
    dst = draw(
        mostly(RECEIVER, "10.0.1.77", "10.0.1.255", "10.0.0.3", "192.0.2.1", LEFT_IP, "224.0.0.1")
    )
    src = draw(mostly(SENDER, "10.0.0.99", "127.0.0.1", "0.0.0.0", "224.0.0.5", RIGHT_IP))
    proto = draw(st.sampled_from([17, 17, 1, 1, 6, 99]))
    size = draw(
        st.one_of(
            st.integers(0, 64),
            st.integers(900, 1600),
            st.integers(900, 1600),
            st.sampled_from([OUT_MTU - 20, OUT_MTU - 19, OUT_MTU - 28, OUT_MTU - 27]),
        )
    )
    if proto == 1:
        icmp_type = draw(mostly(8, 0, 3, 11))
        payload = icmp_message(icmp_type, 0, draw(st.binary(min_size=size, max_size=size)))
    else:
        payload = draw(st.binary(min_size=size, max_size=size))
    opts = draw(mostly(b"", b"\x01\x01\x01\x00", b"\x07\x07\x04" + bytes(5), b"\x94\x04\x00\x00"))
    packet = ip_packet(
        src,
        dst,
        proto,
        payload,
        ttl=draw(mostly(64, 2, 1, 0)),
        tos=draw(mostly(0, 0xB8, 3)),
        ident=draw(st.integers(0, 0xFFFF)),
        frag=draw(st.sampled_from([0x4000, 0x4000, 0, 0, 0, 0x2000, 0x2000 | 3, 7])),
        opts=opts,
    )
    flips = draw(
        st.one_of(
            st.just([]),
            st.just([]),
            st.lists(st.tuples(st.integers(0, 40), st.integers(0, 7)), min_size=1, max_size=2),
        )
    )
    return Spec(
        draw(mostly("router", "bcast", "other")),
        packet,
        flips,
        draw(st.booleans()),
        draw(mostly(None, 0, 10, 19, 20, 30)),
    )


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(forward_specs(), min_size=1, max_size=6))
@pytest.mark.slow
def test_forwarding_survives_fuzzed_datagrams(specs: list[Spec]) -> None:
    forward_run(specs)


def test_forwarded_fragments_keep_the_datagram_id() -> None:
    """Regression: ip_do_fragment packed tot_len with '!HH' and zeroed every fragment's ID."""
    packet = ip_packet(
        SENDER, RECEIVER, 17, bytes(1400), ttl=64, tos=0, ident=0xABCD, frag=0, opts=b""
    )
    ids: list[bytes] = []

    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            r = lab.add_host("r", sysctls={"net.ipv4.ip_forward": 1, **IPV4_ONLY})
            left = lab.add_port("r:eth0")
            right = lab.add_port("r:eth1", mtu=OUT_MTU)
            ipv4 = ipv4_of(r.net)
            ipv4.add_address(r.dev("eth0"), aton(LEFT_IP), 24)
            ipv4.add_address(r.dev("eth1"), aton(RIGHT_IP), 24)
            await right.send(arp_request(RECEIVER_MAC, RECEIVER, RIGHT_IP))
            await left.send(ether(r.dev("eth0").dev_addr, SENDER_MAC, ETH_P_IP, packet))
            await trio.sleep(SETTLE)
            ids.extend(f[18:20] for f in right.drain() if f[12:14] == b"\x08\x00")

    run(main)
    assert len(ids) == 2
    assert ids == [b"\xab\xcd", b"\xab\xcd"]
