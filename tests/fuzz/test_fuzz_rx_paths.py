"""Fuzz the receive handlers of one host: ARP, IPv4 (with reassembly), ICMP and UDP.

Every example builds a fresh lab in virtual time: host ``b`` (10.0.0.2/24, a UDP
socket bound to port 5000 and a ping socket, both with IP_RECVERR) whose ``eth0``
cable ends in a :class:`Port`, so the test writes raw Ethernet frames into the
host and reads what it sends back; the NIC reports each of its three RX checksum
modes (unnecessary, complete, none) in turn.
Frames are built valid with struct and dpkt, then mutated by hypothesis
(truncations, bit flips, byte overwrites, link padding, wrong checksums, wrong
lengths, bad version/IHL, options, fragments, broadcast and multicast
destinations, TTL 0 and 1).

For every frame the test checks that

* nothing escapes the stack (an exception in a NAPI task ends the lab, and so
  the example);
* the frame is accounted: the NIC counts it (``rx_packets`` or
  ``rx_length_errors``), ``IpInReceives`` moves by exactly one for an IPv4
  frame addressed to the host, and an IPv4 datagram is then delivered, taken by
  reassembly or dropped with a counted reason — never lost silently;
* what the host sends in reply is well formed (dpkt parses it, IP/ICMP
  checksums are valid, the source is the host's address, the destination the
  sender's, never a martian) and follows RFC 1122's rules (no ICMP error about
  an ICMP error, a broadcast, a non-first fragment or a martian source, nor to
  a non-unicast address; nothing in reply to a frame for another MAC, a
  damaged header or a bad ICMP checksum);

and after the last frame that the host still answers a ping and still delivers
a UDP datagram, that every datagram it delivered had a valid checksum, and that
the reassembly queues are empty once their timer (30 s) has run out.

The bugs found this way (fixed in ca80c27) have their own regression tests at
the end of the file.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Final, TypeVar

import dpkt
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.drivers.nic import RxCsumMode
from netstack.host import Host, Lab, Port, open_lab, run
from netstack.ipv4 import ipv4_of
from netstack.socket import AF_INET, IP_RECVERR, IPPROTO_ICMP, IPPROTO_IP, SOCK_DGRAM, Socket
from netstack.wire.ipv4 import aton

# -- the rig -----------------------------------------------------------------------------

HOST_IP: Final = "10.0.0.2"
PEER_IP: Final = "10.0.0.1"
SUBNET_BCAST: Final = "10.0.0.255"
PEER_MAC: Final = bytes.fromhex("020000000001")
OTHER_MAC: Final = bytes.fromhex("020000000099")
BCAST_MAC: Final = b"\xff" * 6
MCAST_MAC: Final = bytes.fromhex("01005e000001")
UDP_PORT: Final = 5000
PING_IDENT: Final = 0x4321
CLOSED_PORT: Final = 9
SETTLE: Final = 0.001  # virtual seconds for a frame to go up the stack and a reply to come back
ETH_P_IP: Final = 0x0800
ETH_P_ARP: Final = 0x0806
ICMP_ERRORS: Final = frozenset({3, 4, 5, 11, 12})
RX_CSUM_MODES: Final[tuple[RxCsumMode, ...]] = ("unnecessary", "complete", "none")

FUZZ: Final = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def ip4(text: str) -> bytes:
    return aton(text).to_bytes(4, "big")


def ip_str(raw: bytes) -> str:
    return ".".join(str(b) for b in raw)


def is_mc_or_bcast(raw: bytes) -> bool:
    """Multicast (224/4), limited or subnet broadcast: no ICMP error is ever about one."""
    return 224 <= raw[0] < 240 or raw in (b"\xff" * 4, ip4(SUBNET_BCAST))


def is_martian_source(raw: bytes) -> bool:
    """What ``ip_route_input`` refuses as a source: 0/8, 127/8, multicast, 255.255.255.255
    and the host's own address. With rp_filter=0 Linux checks no more (fib_validate_source's
    fast path): a subnet broadcast or class E source is accepted, and a query answered."""
    return raw[0] in (0, 127) or 224 <= raw[0] < 240 or raw in (b"\xff" * 4, ip4(HOST_IP))


def is_unicast_peer(raw: bytes) -> bool:
    """A source an ICMP error may be sent to: not a martian, nor a subnet broadcast."""
    return not is_martian_source(raw) and raw != ip4(SUBNET_BCAST)


@dataclass
class Outcome:
    """What one frame did: counter deltas and the frames the host sent meanwhile."""

    delta: dict[str, int]
    replies: list[bytes]

    def __getitem__(self, key: str) -> int:
        return self.delta.get(key, 0)

    @property
    def drops(self) -> int:
        return sum(v for k, v in self.delta.items() if k.startswith("drop:"))


@dataclass
class Rig:
    lab: Lab
    host: Host
    port: Port
    sock: Socket
    ping: Socket
    mac: bytes
    expected_in_receives: int = 0
    unverifiable_udp: bool = False  # a fuzzed datagram was reassembled: payloads unknown
    valid_udp_payloads: set[bytes] = field(default_factory=set)

    @classmethod
    async def create(cls, lab: Lab, rx_csum: RxCsumMode = "unnecessary") -> Rig:
        host = lab.add_host("b")
        port = lab.add_port("b:eth0", rx_csum=rx_csum)
        dev = host.dev("eth0")
        ipv4_of(host.net).add_address(dev, aton(HOST_IP), 24, broadcast=aton(SUBNET_BCAST))
        sock = host.socket()
        await sock.bind(("0.0.0.0", UDP_PORT))
        ping = host.socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)
        await ping.bind(("0.0.0.0", PING_IDENT))
        for s in (sock, ping):  # ICMP errors about their datagrams are queued, not ignored
            s.setsockopt(IPPROTO_IP, IP_RECVERR, 1)
        await trio.sleep(1.0)  # a host that has been up for a while
        rig = cls(lab, host, port, sock, ping, dev.dev_addr)
        port.drain()
        # Teach the host its peer's MAC, as any real exchange would start.
        out = await rig.inject(arp_frame(1, PEER_MAC, PEER_IP, bytes(6), HOST_IP))
        assert any(arp_op(r) == 2 for r in out.replies)
        return rig

    def counters(self) -> dict[str, int]:
        host = self.host
        stats = host.dev("eth0").statistics()
        out = {
            f"dev:{name}": getattr(stats, name)
            for name in (
                "rx_packets",
                "rx_bytes",
                "rx_length_errors",
                "rx_nohandler",
                "rx_missed_errors",
            )
        }
        for mib, snap in host.snmp().items():
            for key, value in snap.values:
                out[f"{mib}:{key}"] = value
        for reason, n in host.drops().items():
            out[f"drop:{reason}"] = n
        ipv4 = ipv4_of(host.net)
        out["sockq"] = len(self.sock.sock.receive_queue)
        out["frag_queues"] = len(ipv4.frags.queues)
        out["arp_invalid"] = ipv4.arp_invalid
        return out

    async def inject(self, frame: bytes) -> Outcome:
        if len(frame) >= 14 and frame[12:14] == b"\x08\x00" and l2_to_host(self, frame):
            self.expected_in_receives += 1
        before = self.counters()
        await self.port.send(frame)
        await trio.sleep(SETTLE)
        after = self.counters()
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after.keys() | before.keys()}
        self.expected_in_receives += delta.get("IpExt:OutBcastPkts", 0)  # looped back
        return Outcome({k: v for k, v in delta.items() if v}, self.port.drain())

    async def fuzz(self, frame: bytes) -> Outcome:
        """Inject one arbitrary frame and check every per-frame property."""
        out = await self.inject(frame)
        if out["Ip:ReasmOKs"]:
            self.unverifiable_udp = True
        check_accounting(self, frame, out)
        for reply in out.replies:
            check_reply(self, frame, out, reply)
        return out

    async def assert_alive(self) -> None:
        """The host still answers an echo request and still delivers a UDP datagram."""
        payload = b"still-alive"
        udp = udp_datagram(PEER_IP, HOST_IP, 40000, UDP_PORT, payload)
        await self.inject(ether(self.mac, ETH_P_IP, ip_packet(PEER_IP, HOST_IP, 17, udp)))
        got = drain_socket(self.sock)
        assert (payload, (PEER_IP, 40000)) in got, got
        drain_socket(self.ping)
        for data, _ in got:
            if self.unverifiable_udp:
                break
            assert data in self.valid_udp_payloads or data == payload, (
                f"delivered a datagram whose checksum was wrong: {data!r}"
            )
        echo = icmp_message(8, 0, struct.pack("!HH", 0x4242, 7), b"ping after fuzz")
        frame = ether(self.mac, ETH_P_IP, ip_packet(PEER_IP, HOST_IP, 1, echo))
        for _ in range(5):  # the peer's neighbour entry may have been damaged: answer ARP
            out = await self.inject(frame)
            for reply in out.replies:
                if arp_op(reply) == 1:
                    req = dpkt.ethernet.Ethernet(reply).data
                    if req.tpa == ip4(PEER_IP):
                        await self.inject(arp_frame(2, PEER_MAC, PEER_IP, self.mac, HOST_IP))
                icmp = parse_icmp(reply)
                if icmp is not None and icmp.type == 0 and bytes(icmp.data)[:4] == echo[4:8]:
                    return
            await trio.sleep(1.0)
        raise AssertionError("the host no longer answers an echo request")

    async def finish(self) -> None:
        """Totals, liveness, then let reassembly time out and check nothing is left queued."""
        # (checked now: later, a reply queued behind a failing ARP resolution comes back
        # to the host itself as ICMP host unreachable, through lo)
        assert self.counters()["Ip:InReceives"] == self.expected_in_receives
        await self.assert_alive()
        await trio.sleep(31.0)
        ipv4 = ipv4_of(self.host.net)
        assert not ipv4.frags.queues
        assert ipv4.frags.mem == 0


def drain_socket(sock: Socket) -> list[tuple[bytes, tuple[str, int]]]:
    """Every queued datagram; pending ICMP errors (IP_RECVERR) are read and skipped."""
    got = []
    for _ in range(10_000):
        try:
            got.append(sock.recvfrom_nowait(65536))
        except BlockingIOError:
            return got
        except OSError:
            continue  # a pending error, reported once
    raise AssertionError("the socket never ran dry")


def unwrap(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member ExceptionGroups (from the lab's nursery)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def run_unwrapped(main: Callable[[], Awaitable[None]]) -> None:
    """``netstack.host.run``, re-raising what escaped the stack as itself."""
    try:
        run(main)
    except BaseExceptionGroup as eg:
        raise unwrap(eg) from eg


def fuzz_run(rx_csum: RxCsumMode, body: Callable[[Rig], Awaitable[None]]) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            rig = await Rig.create(lab, rx_csum)
            await body(rig)
            await rig.finish()

    run_unwrapped(main)


# -- the oracles ---------------------------------------------------------------------------


@dataclass
class IpView:
    """The fields of a received IPv4 header, if ``ip_rcv`` would accept it."""

    ihl: int
    tot_len: int
    src: bytes
    dst: bytes
    proto: int
    frag: int
    ttl: int
    payload: bytes


def ip_view(frame: bytes) -> IpView | None:
    """Parse the frame's IPv4 header the way ``ip_rcv`` validates it (independently)."""
    ip = frame[14:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or (ip[0] & 0xF) < 5:
        return None
    ihl = (ip[0] & 0xF) * 4
    if len(ip) < ihl or dpkt.in_cksum(ip[:ihl]) != 0:
        return None
    tot_len = struct.unpack_from("!H", ip, 2)[0]
    if tot_len < ihl or len(ip) < tot_len:
        return None
    frag = struct.unpack_from("!H", ip, 6)[0]
    return IpView(ihl, tot_len, ip[12:16], ip[16:20], ip[9], frag, ip[8], ip[ihl:tot_len])


def l2_to_host(rig: Rig, frame: bytes) -> bool:
    return frame[:6] == rig.mac or bool(frame[0] & 1)


def check_accounting(rig: Rig, frame: bytes, out: Outcome) -> None:
    n = len(frame)
    if n < 14:
        assert out["dev:rx_length_errors"] == 1, out.delta
        assert out["dev:rx_packets"] == 0, out.delta
        return
    assert out["dev:rx_packets"] == 1, out.delta
    assert out["dev:rx_bytes"] == n, out.delta
    etype = struct.unpack_from("!H", frame, 12)[0]
    if etype == ETH_P_IP:
        if not l2_to_host(rig, frame):
            assert out["Ip:InReceives"] == 0, out.delta
            assert out["drop:OTHERHOST"] == 1, out.delta
            return
        # (a reply to a broadcast source is looped back and received again)
        assert out["Ip:InReceives"] == 1 + out["IpExt:OutBcastPkts"], out.delta
        # delivered to a protocol, taken by reassembly, or dropped with a reason
        handled = out["Ip:InDelivers"] + out["Ip:InUnknownProtos"]
        assert handled <= 1 + out["IpExt:OutBcastPkts"], out.delta  # (+ looped-back replies)
        assert handled + out["Ip:ReasmReqds"] + out.drops >= 1, (
            f"IPv4 frame silently lost: {frame.hex()} {out.delta}"
        )
        view = ip_view(frame)
        if view is None:
            assert out["Ip:InDelivers"] == 0, out.delta
            assert out["Ip:InHdrErrors"] + out["IpExt:InTruncatedPkts"] == 1, out.delta
        elif out["Ip:InDelivers"] and view.proto == 1:
            assert out["Icmp:InMsgs"] >= 1, out.delta
        elif out["Ip:InDelivers"] and view.proto == 17:
            udp_fate = (
                out["sockq"]
                + out["Udp:NoPorts"]
                + out["Udp:InErrors"]
                + out["Udp:IgnoredMulti"]
                + out.drops
            )
            assert udp_fate >= 1, f"UDP datagram silently lost: {out.delta}"
    elif etype == ETH_P_ARP:
        assert out["Ip:InReceives"] == 0, out.delta
    elif etype != 0x86DD:
        assert out["dev:rx_nohandler"] == 1, out.delta
        assert out["drop:UNHANDLED_PROTO"] == 1, out.delta


def arp_op(frame: bytes) -> int | None:
    if len(frame) < 42 or struct.unpack_from("!H", frame, 12)[0] != ETH_P_ARP:
        return None
    return int(struct.unpack_from("!H", frame, 20)[0])


def parse_icmp(frame: bytes) -> dpkt.icmp.ICMP | None:
    if len(frame) < 34 or struct.unpack_from("!H", frame, 12)[0] != ETH_P_IP:
        return None
    ip = dpkt.ip.IP(frame[14:])
    if ip.p != 1 or not isinstance(ip.data, dpkt.icmp.ICMP):
        return None
    return ip.data


def check_reply(rig: Rig, frame: bytes, out: Outcome, reply: bytes) -> None:
    eth = dpkt.ethernet.Ethernet(reply)
    assert eth.src == rig.mac, reply.hex()
    if eth.type == ETH_P_ARP:
        arp = eth.data
        assert (arp.hrd, arp.pro, arp.hln, arp.pln) == (1, ETH_P_IP, 6, 4), reply.hex()
        assert arp.op in (1, 2), reply.hex()
        assert arp.sha == rig.mac, reply.hex()
        assert arp.spa == ip4(HOST_IP), reply.hex()
        if arp.op == 2:  # a reply answers this frame's request
            assert arp_op(frame) == 1, reply.hex()
            req = dpkt.ethernet.Ethernet(frame).data
            assert req.tpa == ip4(HOST_IP), reply.hex()
            assert eth.dst == req.sha, reply.hex()
            assert arp.tha == req.sha, reply.hex()
            assert arp.tpa == req.spa, reply.hex()
        return
    assert eth.type == ETH_P_IP, reply.hex()
    raw = reply[14:]
    assert raw[0] == 0x45, reply.hex()  # the host never sends options
    assert dpkt.in_cksum(raw[:20]) == 0, f"bad IP header checksum: {reply.hex()}"
    tot_len = struct.unpack_from("!H", raw, 2)[0]
    assert 28 <= tot_len <= len(raw), reply.hex()
    src, dst, proto = raw[12:16], raw[16:20], raw[9]
    assert src == ip4(HOST_IP), reply.hex()
    assert not is_martian_source(dst), f"reply to a non-unicast address: {reply.hex()}"
    assert proto == 1, f"unexpected reply protocol {proto}: {reply.hex()}"
    icmp = raw[20:tot_len]
    assert dpkt.in_cksum(icmp) == 0, f"bad ICMP checksum: {reply.hex()}"
    # Rules about the frame that caused it.
    assert l2_to_host(rig, frame), "a reply to a frame for another MAC"
    view = ip_view(frame)
    assert view is not None, f"a reply to a damaged IPv4 header: {frame.hex()}"
    # Only datagrams for the host are answered — except that, as in Linux, a damaged
    # option gets a parameter problem whatever the (unicast) destination.
    assert view.dst == ip4(HOST_IP) or (icmp[0] == 12 and not is_mc_or_bcast(view.dst)), (
        f"a reply to a datagram for someone else: {frame.hex()}"
    )
    assert not is_martian_source(view.src), f"a reply to a martian source: {frame.hex()}"
    assert dst == view.src, reply.hex()
    if icmp[0] in ICMP_ERRORS:
        assert is_unicast_peer(dst), f"an ICMP error to a non-unicast address: {reply.hex()}"
        # (a unicast datagram in a link-layer broadcast is answered, but never with an error)
        assert frame[0] & 1 == 0, f"an ICMP error about a link-layer broadcast: {frame.hex()}"
        assert len(raw) <= 576, reply.hex()
        if view.frag & 0x1FFF:
            assert out["Ip:ReasmOKs"] == 1, f"ICMP error about a non-first fragment: {frame.hex()}"
        if view.proto == 1 and view.payload and view.frag & 0x1FFF == 0:
            assert view.payload[0] not in ICMP_ERRORS, "ICMP error about an ICMP error"
            assert view.payload[0] <= 18, "ICMP error about an unknown ICMP type"
        quoted = icmp[8:]
        assert quoted[12:16] == view.src, reply.hex()
        assert quoted[16:20] == view.dst, reply.hex()
    else:
        assert icmp[0] in (0, 14), reply.hex()  # echo reply, timestamp reply
        assert view.proto == 1, reply.hex()
        assert view.frag & 0x3FFF == 0 or out["Ip:ReasmOKs"], reply.hex()
        if view.frag & 0x3FFF == 0:
            assert dpkt.in_cksum(view.payload) == 0, (
                f"answered an ICMP message with a bad checksum: {frame.hex()}"
            )
            assert icmp[4:8] == view.payload[4:8], reply.hex()  # identifier and sequence


# -- frame builders --------------------------------------------------------------------------


def ether(dst: bytes, etype: int, payload: bytes, src: bytes = PEER_MAC) -> bytes:
    return dst + src + struct.pack("!H", etype) + payload


def arp_frame(
    op: int,
    sha: bytes,
    spa: str,
    tha: bytes,
    tpa: str,
    *,
    dst: bytes = BCAST_MAC,
) -> bytes:
    arp = dpkt.arp.ARP(op=op, sha=sha, spa=ip4(spa), tha=tha, tpa=ip4(tpa))
    return ether(dst, ETH_P_ARP, bytes(arp), src=sha)


def ip_header(
    src: str,
    dst: str,
    proto: int,
    payload_len: int,
    *,
    ttl: int = 64,
    tos: int = 0,
    ident: int = 0x1234,
    frag: int = 0,
    opts: bytes = b"",
) -> bytes:
    assert len(opts) % 4 == 0
    ihl = 5 + len(opts) // 4
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x40 | ihl,
            tos,
            20 + len(opts) + payload_len,
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
    return bytes(hdr)


def ip_packet(
    src: str,
    dst: str,
    proto: int,
    payload: bytes,
    *,
    ttl: int = 64,
    tos: int = 0,
    ident: int = 0x1234,
    frag: int = 0,
    opts: bytes = b"",
) -> bytes:
    hdr = ip_header(
        src, dst, proto, len(payload), ttl=ttl, tos=tos, ident=ident, frag=frag, opts=opts
    )
    return hdr + payload


def fix_ip_checksum(frame: bytes) -> bytes:
    """Recompute the header checksum of a (possibly mutated) IPv4 header, if there is one."""
    if len(frame) < 34:
        return frame
    ihl = (frame[14] & 0xF) * 4
    if ihl < 20 or len(frame) < 14 + ihl:
        return frame
    buf = bytearray(frame)
    buf[24:26] = b"\0\0"
    struct.pack_into("!H", buf, 24, dpkt.in_cksum(bytes(buf[14 : 14 + ihl])))
    return bytes(buf)


def udp_checksum(src: str, dst: str, segment: bytes, length: int | None = None) -> int:
    pseudo = (
        ip4(src) + ip4(dst) + struct.pack("!BBH", 0, 17, len(segment) if length is None else length)
    )
    c = dpkt.in_cksum(pseudo + segment)
    return c or 0xFFFF


def udp_datagram(
    src: str,
    dst: str,
    sport: int,
    dport: int,
    payload: bytes,
    *,
    checksum: str = "good",
    ulen: int | None = None,
) -> bytes:
    length = 8 + len(payload) if ulen is None else ulen
    seg = bytearray(struct.pack("!HHHH", sport, dport, length & 0xFFFF, 0) + payload)
    if checksum == "good":
        struct.pack_into("!H", seg, 6, udp_checksum(src, dst, bytes(seg[: max(length, 8)]), length))
    elif checksum == "bad":
        good = udp_checksum(src, dst, bytes(seg[: max(length, 8)]), length)
        struct.pack_into("!H", seg, 6, good ^ 0x0101)
    return bytes(seg)


def icmp_message(
    icmp_type: int, code: int, rest: bytes, data: bytes, *, good: bool = True
) -> bytes:
    msg = bytearray(struct.pack("!BBH", icmp_type, code, 0) + rest[:4].ljust(4, b"\0") + data)
    c = dpkt.in_cksum(bytes(msg))
    struct.pack_into("!H", msg, 2, c if good else c ^ 0x8001)
    return bytes(msg)


# -- strategies ----------------------------------------------------------------------------
#
# Frames are mostly valid with a few things wrong, so that they get past the
# first checks and reach the deeper handlers: every field is drawn by
# ``mostly(default, *others)``, which picks the default six times out of seven.

T = TypeVar("T")


def mostly(default: T, *others: T) -> st.SearchStrategy[T]:
    return st.sampled_from([default] * (len(others) * 6) + list(others))


SOURCES: Final = (
    "10.0.0.77",  # on link, unknown to the host
    "192.0.2.1",  # off link, no route back
    HOST_IP,  # our own address as source
    SUBNET_BCAST,
    "255.255.255.255",
    "0.0.0.0",
    "127.0.0.1",
    "224.0.0.1",
    "240.0.0.1",
)
DESTINATIONS: Final = (
    SUBNET_BCAST,
    "255.255.255.255",
    "224.0.0.1",
    "10.0.0.3",  # another host on the link
    "198.51.100.7",  # off link
    "127.0.0.1",
    "0.0.0.0",
)
OPTION_SETS: Final = (
    b"\x01\x01\x01\x00",  # NOP NOP NOP END
    b"\x00\x00\x00\x00",  # END
    b"\x07\x07\x04" + ip4("10.0.0.1") + b"\x00",  # record route
    b"\x83\x07\x04" + ip4("10.0.0.9") + b"\x00",  # loose source route
    b"\x89\x07\x04" + ip4("10.0.0.9") + b"\x00",  # strict source route
    b"\x44\x0c\x05\x00" + bytes(8),  # timestamp
    b"\x94\x04\x00\x00",  # router alert
    b"\x07\x00\x00\x00",  # option length 0
    b"\x07\x01\x00\x00",  # option length 1
    b"\x07\x28\x04\x00",  # option longer than the header
    b"\x01\x01\x01\x07",  # an option cut by the end of the header
)
FRAG_FIELDS: Final = (0x4000, 0x2000, 0x2000 | 1, 1, 185, 0x1FFF, 0x8000, 0x6000)
ICMP_TYPES: Final = (0, 3, 3, 3, 4, 5, 8, 8, 11, 11, 12, 13, 14, 15, 16, 17, 18, 19, 40, 255)

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)


def l2_dst(rig_mac: bytes, kind: str) -> bytes:
    return {"host": rig_mac, "bcast": BCAST_MAC, "mcast": MCAST_MAC, "other": OTHER_MAC}[kind]


@dataclass
class Mutation:
    """A change to a frame, applied at build time (the host's MAC is known only then)."""

    kind: str
    pos: int = 0
    value: int = 0
    extra: bytes = b""
    fix_csum: bool = False

    def apply(self, frame: bytes, start: int) -> bytes:
        span = len(frame) - start
        if span <= 0:
            out = frame
        elif self.kind == "truncate":
            out = frame[: start + self.pos % (span + 1)]
        elif self.kind == "flip":
            buf = bytearray(frame)
            buf[start + self.pos % span] ^= 1 << (self.value % 8)
            out = bytes(buf)
        elif self.kind == "set":
            buf = bytearray(frame)
            buf[start + self.pos % span] = self.value & 0xFF
            out = bytes(buf)
        elif self.kind == "pad":
            out = frame + self.extra
        else:
            raise AssertionError(self.kind)
        return fix_ip_checksum(out) if self.fix_csum else out


mutation_lists: st.SearchStrategy[list[Mutation]] = st.one_of(
    st.just([]),
    st.just([]),
    st.lists(
        st.builds(
            Mutation,
            kind=st.sampled_from(["truncate", "flip", "flip", "set", "set", "pad"]),
            pos=st.integers(0, 1500),
            value=u8,
            extra=st.binary(min_size=1, max_size=24),
            fix_csum=st.booleans(),
        ),
        min_size=1,
        max_size=3,
    ),
)


@dataclass
class Spec:
    """A frame to build once the rig exists."""

    l2: str
    etype: int
    payload: bytes
    mutate_from: int  # offset in the frame where mutations start
    muts: list[Mutation]

    def build(self, rig: Rig) -> bytes:
        frame = ether(l2_dst(rig.mac, self.l2), self.etype, self.payload)
        for m in self.muts:
            frame = m.apply(frame, self.mutate_from)
        return frame


@st.composite
def arp_specs(draw: st.DrawFn) -> Spec:
    sha = draw(mostly(PEER_MAC, OTHER_MAC, bytes(6), BCAST_MAC))
    spa = draw(mostly(PEER_IP, *SOURCES))
    tpa = draw(mostly(HOST_IP, PEER_IP, "10.0.0.3", "224.0.0.1", "127.0.0.1", "0.0.0.0"))
    tha = draw(mostly(bytes(6), OTHER_MAC, BCAST_MAC))
    op = draw(st.one_of(st.sampled_from([1, 1, 1, 2, 2, 0, 3, 8]), u16))
    hrd = draw(mostly(1, 6, 0x1F))
    pro = draw(mostly(ETH_P_IP, 0x86DD))
    hln = draw(mostly(6, 4, 16))
    pln = draw(mostly(4, 6, 16))
    body = struct.pack("!HHBBH", hrd, pro, hln, pln, op) + sha + ip4(spa) + tha + ip4(tpa)
    return Spec(
        draw(st.sampled_from(["bcast", "bcast", "host", "other", "mcast"])),
        ETH_P_ARP,
        body + draw(st.binary(max_size=18)),
        14,
        draw(mutation_lists),
    )


@st.composite
def icmp_payloads(draw: st.DrawFn, src: str, ping_ident: int) -> bytes:
    icmp_type = draw(st.one_of(st.sampled_from(ICMP_TYPES), st.sampled_from(ICMP_TYPES), u8))
    code = draw(st.one_of(st.integers(0, 16), st.sampled_from([0, 1, 3, 4]), u8))
    rest = draw(
        st.one_of(
            st.binary(min_size=4, max_size=4),
            st.sampled_from([0, 68, 552, 576, 1000, 1400, 1500, 9000]).map(
                lambda mtu: struct.pack("!HH", 0, mtu)  # frag-needed's next-hop MTU
            ),
            st.just(struct.pack("!HH", ping_ident, 1)),  # our ping socket's identifier
        )
    )
    kind = draw(st.sampled_from(["random", "quote_udp", "quote_udp", "quote_echo", "timestamp"]))
    if kind == "quote_udp":  # an error about a datagram our bound socket could have sent
        remote = draw(mostly(src, "198.51.100.7", SUBNET_BCAST, "0.0.0.0"))
        inner = ip_packet(
            HOST_IP,
            remote,
            17,
            udp_datagram(HOST_IP, remote, UDP_PORT, draw(mostly(53, 9, 40000)), b"q" * 8),
            ttl=draw(mostly(64, 1)),
        )
        data = inner[: draw(st.one_of(st.just(len(inner)), st.integers(0, len(inner))))]
    elif kind == "quote_echo":  # an error about our ping socket's echo request
        inner = ip_packet(
            HOST_IP, src, 1, icmp_message(8, 0, struct.pack("!HH", ping_ident, 1), b"abcdefgh")
        )
        data = inner[: draw(st.one_of(st.just(len(inner)), st.integers(0, len(inner))))]
    elif kind == "timestamp":
        data = draw(st.binary(min_size=0, max_size=16))
    else:
        data = draw(st.binary(max_size=64))
    return icmp_message(icmp_type, code, rest, data, good=draw(mostly(True, False)))


@st.composite
def udp_payloads(draw: st.DrawFn, src: str, dst: str) -> bytes:
    payload = draw(st.binary(max_size=48))
    sport = draw(st.one_of(mostly(40000, 53, UDP_PORT, 0), u16))
    dport = draw(st.one_of(st.sampled_from([UDP_PORT, UDP_PORT, CLOSED_PORT, 0]), u16))
    checksum = draw(mostly("good", "zero", "bad"))
    ulen = draw(st.one_of(mostly(None, 0, 7, 8), st.integers(0, len(payload) + 16)))
    return udp_datagram(src, dst, sport, dport, payload, checksum=checksum, ulen=ulen)


@st.composite
def ipv4_specs(draw: st.DrawFn, proto_choice: st.SearchStrategy[int] | None = None) -> Spec:
    src = draw(mostly(PEER_IP, *SOURCES))
    dst = draw(mostly(HOST_IP, *DESTINATIONS))
    if proto_choice is None:
        proto_choice = st.one_of(st.sampled_from([1, 17, 6, 47, 0]), u8)
    proto = draw(proto_choice)
    if proto == 1:
        payload = draw(icmp_payloads(src, PING_IDENT))
    elif proto == 17:
        payload = draw(udp_payloads(src, dst))
    else:
        payload = draw(st.binary(max_size=48))
    opts = draw(mostly(b"", *OPTION_SETS))
    packet = ip_packet(
        src,
        dst,
        proto,
        payload,
        ttl=draw(mostly(64, 1, 0, 255)),
        tos=draw(st.one_of(mostly(0, 1, 2, 3, 0xB8), u8)),
        ident=draw(u16),
        frag=draw(st.one_of(mostly(0, *FRAG_FIELDS), u16)),
        opts=opts,
    )
    l2 = draw(mostly("host", "bcast", "mcast", "other"))
    start = draw(st.sampled_from([14, 14 + 20 + len(opts)]))
    return Spec(l2, ETH_P_IP, packet, start, draw(mutation_lists))


@st.composite
def any_frames(draw: st.DrawFn) -> Spec:
    """Raw bytes with a chosen EtherType: runts, other protocols, garbage."""
    return Spec(
        draw(st.sampled_from(["host", "bcast", "mcast", "other"])),
        draw(st.sampled_from([ETH_P_IP, ETH_P_ARP, 0x86DD, 0x88CC, 0x05DC, 0x0000])),
        draw(st.binary(max_size=80)),
        0,
        draw(mutation_lists),
    )


# -- the fuzz tests ----------------------------------------------------------------------------


def fuzz_specs(rx_csum: RxCsumMode, specs: list[Spec]) -> None:
    async def body(rig: Rig) -> None:
        for spec in specs:
            frame = spec.build(rig)
            note_udp(rig, frame)
            await rig.fuzz(frame)

    fuzz_run(rx_csum, body)


def note_udp(rig: Rig, frame: bytes) -> None:
    """Remember which UDP payloads were sent with a valid checksum (the delivery oracle)."""
    view = ip_view(frame)
    if view is None or view.proto != 17 or view.frag & 0x3FFF or len(view.payload) < 8:
        return
    seg = view.payload
    ulen = struct.unpack_from("!H", seg, 4)[0]
    if not 8 <= ulen <= len(seg):
        return
    data = seg[8:ulen]
    check = struct.unpack_from("!H", seg, 6)[0]
    pseudo = view.src + view.dst + struct.pack("!BBH", 0, 17, ulen)
    if check == 0 or dpkt.in_cksum(pseudo + seg[:ulen]) == 0:
        rig.valid_udp_payloads.add(data)


@FUZZ
@given(rx_csum=st.sampled_from(RX_CSUM_MODES), specs=st.lists(arp_specs(), min_size=1, max_size=8))
@pytest.mark.slow
def test_arp_rcv_survives_fuzzed_frames(rx_csum: RxCsumMode, specs: list[Spec]) -> None:
    fuzz_specs(rx_csum, specs)


@FUZZ
@given(
    rx_csum=st.sampled_from(RX_CSUM_MODES),
    specs=st.lists(ipv4_specs() | any_frames(), min_size=1, max_size=8),
)
@pytest.mark.slow
def test_ip_rcv_survives_fuzzed_frames(rx_csum: RxCsumMode, specs: list[Spec]) -> None:
    fuzz_specs(rx_csum, specs)


@FUZZ
@given(
    rx_csum=st.sampled_from(RX_CSUM_MODES),
    specs=st.lists(ipv4_specs(st.just(1)), min_size=1, max_size=8),
)
@pytest.mark.slow
def test_icmp_rcv_survives_fuzzed_messages(rx_csum: RxCsumMode, specs: list[Spec]) -> None:
    fuzz_specs(rx_csum, specs)


@FUZZ
@given(
    rx_csum=st.sampled_from(RX_CSUM_MODES),
    specs=st.lists(ipv4_specs(st.just(17)), min_size=1, max_size=8),
)
@pytest.mark.slow
def test_udp_rcv_survives_fuzzed_datagrams(rx_csum: RxCsumMode, specs: list[Spec]) -> None:
    fuzz_specs(rx_csum, specs)


@dataclass
class FragPlan:
    """Fragments of one UDP datagram: (offset, length, more-fragments) triples."""

    payload: bytes
    pieces: list[tuple[int, int, bool]]
    ident: int
    src: str


@st.composite
def frag_plans(draw: st.DrawFn) -> FragPlan:
    payload = draw(st.binary(min_size=1, max_size=600))
    total = 8 + len(payload)
    # A proper partition in multiples of 8 …
    cuts = sorted(set(draw(st.lists(st.integers(1, max(total // 8, 1)), max_size=5))))
    bounds = [0] + [c * 8 for c in cuts if c * 8 < total] + [total]
    pieces = [(a, b - a, b < total) for a, b in itertools.pairwise(bounds)]
    # … then shuffled, duplicated, overlapped, cut short or given odd sizes.
    pieces = draw(st.permutations(pieces))
    extra = draw(
        st.lists(
            st.tuples(
                st.integers(0, total + 16).map(lambda o: o & ~7 if o % 3 else o),
                st.integers(0, 64),
                st.booleans(),
            ),
            max_size=3,
        )
    )
    pieces = list(pieces)
    for item in extra:
        pieces.insert(draw(st.integers(0, len(pieces))), item)
    if draw(st.booleans()) and len(pieces) > 1:
        pieces.pop(draw(st.integers(0, len(pieces) - 1)))
    return FragPlan(
        payload, pieces, draw(u16), draw(st.sampled_from([PEER_IP, PEER_IP, "10.0.0.77"]))
    )


@FUZZ
@given(rx_csum=st.sampled_from(RX_CSUM_MODES), plans=st.lists(frag_plans(), min_size=1, max_size=3))
@pytest.mark.slow
def test_reassembly_survives_fuzzed_fragments(rx_csum: RxCsumMode, plans: list[FragPlan]) -> None:
    async def body(rig: Rig) -> None:
        for plan in plans:
            dgram = udp_datagram(plan.src, HOST_IP, 40001, UDP_PORT, plan.payload)
            rig.valid_udp_payloads.add(plan.payload)
            reasm_ok = 0
            for offset, length, more in plan.pieces:
                data = dgram[offset : offset + length]
                frag = (0x2000 if more else 0) | (offset >> 3)
                packet = ip_packet(plan.src, HOST_IP, 17, data, ident=plan.ident, frag=frag)
                out = await rig.fuzz(ether(rig.mac, ETH_P_IP, packet))
                if frag & 0x3FFF:
                    assert out["Ip:ReasmReqds"] == 1, out.delta
                    reasm_ok += out["Ip:ReasmOKs"]
                else:  # a whole datagram
                    reasm_ok += out["Ip:InDelivers"]
            got = drain_socket(rig.sock)
            assert len(got) <= reasm_ok
            for data, _ in got:
                assert data == plan.payload, "reassembly delivered a corrupted datagram"

    fuzz_run(rx_csum, body)


# -- regressions: bugs the fuzzers found (fixed in ca80c27), pinned -------------------------------


def rig_run(body: Callable[[Rig], Awaitable[None]], rx_csum: RxCsumMode = "unnecessary") -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            await body(await Rig.create(lab, rx_csum))

    run_unwrapped(main)


def fragments(src: str, ident: int, proto: int, data: bytes, chunk: int) -> Iterator[bytes]:
    for off in range(0, len(data), chunk):
        more = 0x2000 if off + chunk < len(data) else 0
        yield ip_packet(
            src, HOST_IP, proto, data[off : off + chunk], ident=ident, frag=more | off >> 3
        )


def test_oversized_reassembly_is_dropped_not_raised() -> None:
    """The ping of death: fragments adding up to more than 65535 bytes.

    Linux (ip_frag_reasm) drops it ("Oversized IP packet"), counts ReasmFails,
    and the host keeps working. (Regression: IpFrags._reasm packed the total
    length with struct and a struct.error escaped the stack, ending the lab.)
    """

    async def body(rig: Rig) -> None:
        data = icmp_message(8, 0, b"\x00\x01\x00\x01", bytes(65536 - 8))
        for packet in fragments(PEER_IP, 0xDEAD, 1, data, 1480):
            await rig.port.send(ether(rig.mac, ETH_P_IP, packet))
        await trio.sleep(SETTLE)
        assert rig.counters()["Ip:ReasmFails"] >= 1
        assert not ipv4_of(rig.host.net).frags.queues
        await rig.assert_alive()

    rig_run(body)


def test_largest_legal_reassembly_is_delivered() -> None:
    """65535 bytes in all: the largest datagram reassembles and is answered."""

    async def body(rig: Rig) -> None:
        data = icmp_message(8, 0, b"\x00\x01\x00\x01", bytes(65535 - 20 - 8))
        for packet in fragments(PEER_IP, 0xBEEF, 1, data, 1480):
            await rig.port.send(ether(rig.mac, ETH_P_IP, packet))
        await trio.sleep(0.1)
        c = rig.counters()
        assert c["Ip:ReasmOKs"] == 1
        assert c["Icmp:InEchos"] == 1
        assert c["Icmp:OutEchoReps"] == 1

    rig_run(body)


@pytest.mark.parametrize("sender", ["224.0.0.5", "255.255.255.255", "127.0.0.1", HOST_IP])
def test_arp_request_from_a_martian_sender_is_not_answered(sender: str) -> None:
    """Linux routes a request (ip_route_input_noref(tip, sip)) before answering it, so a
    martian sender is neither answered nor learned. (Regression: arp_process answered.)"""

    async def body(rig: Rig) -> None:
        out = await rig.inject(arp_frame(1, OTHER_MAC, sender, bytes(6), HOST_IP))
        assert [r for r in out.replies if arp_op(r) == 2] == []
        tbl = ipv4_of(rig.host.net).arp_tbl
        assert tbl.lookup(aton(sender), rig.host.dev("eth0")) is None

    rig_run(body)


def test_udp_with_a_wrong_checksum_and_trailing_bytes_is_not_delivered() -> None:
    """The NIC's checksum engine covers the UDP length, not the IP payload, so the
    datagram is verified in software when read, and dropped. (Regression: the NIC
    reported CHECKSUM_UNNECESSARY and the corrupt datagram was delivered.)"""

    async def body(rig: Rig) -> None:
        payload, trailer = b"abcd", b"TRAILER!"
        ulen = 8 + len(payload)
        seg = bytearray(struct.pack("!HHHH", 40000, UDP_PORT, ulen, 0) + payload + trailer)
        # The checksum is right for the whole IP payload, wrong for the datagram (ulen).
        struct.pack_into("!H", seg, 6, udp_checksum(PEER_IP, HOST_IP, bytes(seg)))
        pseudo = ip4(PEER_IP) + ip4(HOST_IP) + struct.pack("!BBH", 0, 17, ulen)
        assert dpkt.in_cksum(pseudo + bytes(seg[:ulen])) != 0
        out = await rig.inject(
            ether(rig.mac, ETH_P_IP, ip_packet(PEER_IP, HOST_IP, 17, bytes(seg)))
        )
        assert out["sockq"] <= 1, out.delta  # queued, as Linux does, and checked when read
        with pytest.raises(BlockingIOError):
            rig.sock.recvfrom_nowait(100)
        c = rig.counters()
        assert c["Udp:InCsumErrors"] == 1
        assert c["Udp:InDatagrams"] == 0

    rig_run(body)


def test_icmp_with_a_bad_checksum_and_odd_padding_is_not_answered() -> None:
    """Trimming link padding from a CHECKSUM_COMPLETE sum must account for the pad's
    odd offset (kernel: csum_block_sub). (Regression: a plain csum_sub let a crafted
    corrupt echo request through.)"""

    async def body(rig: Rig) -> None:
        good = icmp_message(8, 0, b"\x00\x01\x00\x01", b"a")  # 9 bytes: odd IP length
        bad = bytearray(good)
        c = struct.unpack_from("!H", bad, 2)[0] + 0xFF  # off by 255 …
        struct.pack_into("!H", bad, 2, (c & 0xFFFF) + (c >> 16))
        assert dpkt.in_cksum(bytes(bad)) != 0
        frame = ether(rig.mac, ETH_P_IP, ip_packet(PEER_IP, HOST_IP, 1, bytes(bad))) + b"\x01"
        out = await rig.inject(frame)  # … which one byte of padding at an odd offset hides
        assert out["Icmp:OutEchoReps"] == 0, out.delta
        assert out["Icmp:InCsumErrors"] == 1, out.delta

    rig_run(body, rx_csum="complete")


@pytest.mark.parametrize("rx_csum", RX_CSUM_MODES)
def test_icmp_with_a_good_checksum_and_odd_padding_is_answered(rx_csum: RxCsumMode) -> None:
    async def body(rig: Rig) -> None:
        echo = icmp_message(8, 0, b"\x00\x01\x00\x02", b"abc")
        frame = ether(rig.mac, ETH_P_IP, ip_packet(PEER_IP, HOST_IP, 1, echo)) + b"\x01\x02\x03"
        out = await rig.fuzz(frame)
        assert out["Icmp:OutEchoReps"] == 1, out.delta

    rig_run(body, rx_csum=rx_csum)


def test_unicast_datagram_in_a_link_layer_broadcast_is_not_a_broadcast() -> None:
    """IpExt InBcastPkts counts by route type, as ip_rcv_finish_core does. (Regression:
    the frame's pkt_type was used.)"""

    async def body(rig: Rig) -> None:
        echo = icmp_message(8, 0, b"\x00\x01\x00\x03", b"unicast in broadcast")
        out = await rig.fuzz(ether(BCAST_MAC, ETH_P_IP, ip_packet(PEER_IP, HOST_IP, 1, echo)))
        # Answered, as Linux does with drop_unicast_in_l2_multicast=0 …
        assert out["Icmp:OutEchoReps"] == 1, out.delta
        # … but it is not a broadcast datagram.
        assert out["IpExt:InBcastPkts"] == 0, out.delta

    rig_run(body)
