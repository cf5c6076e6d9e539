"""Every receive path, mutated frames, and an RX-skb ledger (issue 13).

One host ``h`` takes frames from a Port on ``eth0`` and forwards to a Port on
``eth1``; it has UDP, TCP and ping sockets, GRE, gretap, IPIP and SIT tunnels
to the peer 10.0.0.1, and IPv4 and IPv6 forwarding on. The corpus covers
each receive path with a valid frame: ARP, ND, ICMP and ICMPv6 (echo,
errors, Packet Too Big), UDP and TCP (both families), fragments (both),
forwarded packets (both), and packets in GRE, gretap, IPIP and SIT.
Hypothesis picks frames and mutates them (truncations, byte overwrites,
bit flips). For every example, after the timers had a minute to run, the
ledger (:class:`netstack.testing.ledger.SkbLedger`) finds every skb created
consumed, dropped with a reason, or still queued — none lost — and nothing
escaped the stack.
"""

from __future__ import annotations

import struct
from typing import Final

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import Host, Lab, Port, open_lab
from netstack.socket import AF_INET, AF_INET6, IPPROTO_ICMP, SOCK_DGRAM, SOCK_STREAM
from netstack.testing import floods
from netstack.testing.ledger import SkbLedger
from netstack.wire.ipv4 import aton
from netstack.wire.ipv6 import aton as aton6

PEER_MAC: Final = bytes.fromhex("020000000001")
H4, P4 = aton("10.0.0.2"), aton("10.0.0.1")
H6, P6 = aton6("2001:db8::2"), aton6("2001:db8::1")
FWD4, FWD6 = aton("10.9.0.7"), aton6("2001:db8:9::7")
FUZZ: Final = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


async def build(lab: Lab) -> tuple[Host, Port, Port]:
    h = lab.add_host("h")
    port = lab.add_port("h:eth0")
    out = lab.add_port("h:eth1")
    for cmd in (
        "addr add 10.0.0.2/24 dev eth0",
        "addr add 10.0.1.2/24 dev eth1",
        "neigh add 10.0.1.1 lladdr 02:00:00:00:00:09 dev eth1",
        "route add 10.9.0.0/16 via 10.0.1.1",
        "-6 addr add 2001:db8::2/64 dev eth0 nodad",
        "-6 addr add 2001:db8:1::2/64 dev eth1 nodad",
        "-6 neigh add 2001:db8:1::1 lladdr 02:00:00:00:00:09 dev eth1",
        "-6 route add 2001:db8:9::/48 via 2001:db8:1::1",
        "link add gre1 type gre local 10.0.0.2 remote 10.0.0.1",
        "link add tap1 type gretap local 10.0.0.2 remote 10.0.0.1",
        "link add ipip1 type ipip local 10.0.0.2 remote 10.0.0.1",
        "link add sit1 type sit local 10.0.0.2 remote 10.0.0.1",
    ):
        h.ip(cmd)
    for dev, addr in (("gre1", "10.5.1.2/24"), ("tap1", "10.5.2.2/24"), ("ipip1", "10.5.3.2/24")):
        h.ip(f"link set {dev} up")
        h.ip(f"addr add {addr} dev {dev}")
    h.ip("link set sit1 up")
    h.ip("-6 addr add 2001:db8:5::2/64 dev sit1 nodad")
    h.sysctl("net.ipv4.ip_forward=1")
    h.sysctl("net.ipv6.conf.all.forwarding=1")
    return h, port, out


def corpus(h: Host) -> list[bytes]:
    mac = bytes(h.dev("eth0").dev_addr)

    def e4(pkt: bytes) -> bytes:
        return floods.eth(mac, PEER_MAC, 0x0800, pkt)

    def e6(pkt: bytes) -> bytes:
        return floods.eth(mac, PEER_MAC, 0x86DD, pkt)

    udp4 = floods.udp4(P4, H4, 1000, 5000, b"hello")
    udp6 = floods.udp6(P6, H6, 1000, 5000, b"hello")
    echo = bytearray(struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"ping")
    struct.pack_into("!H", echo, 2, ~sum(struct.unpack("!4H", bytes(echo[:8]))) & 0xFFFF)
    inner4 = floods.udp4(aton("10.5.1.1"), aton("10.5.1.2"), 1000, 5000, b"in-gre")
    inner_ipip = floods.udp4(aton("10.5.3.1"), aton("10.5.3.2"), 1000, 5000, b"in-ipip")
    inner6 = floods.udp6(aton6("2001:db8:5::1"), aton6("2001:db8:5::2"), 1000, 5000, b"in-sit")
    tap_mac = bytes(h.dev("tap1").dev_addr)
    inner_eth = floods.eth(
        tap_mac,
        PEER_MAC,
        0x0800,
        floods.udp4(aton("10.5.2.1"), aton("10.5.2.2"), 1000, 5000, b"in-tap"),
    )
    data = bytes(range(200))
    return [
        floods.arp_request(PEER_MAC, P4, H4),
        floods.neigh_solicit(PEER_MAC, P6, H6),
        e4(floods.ipv4(P4, H4, 1, bytes(echo), frag_off=0)),
        e4(udp4),
        e6(udp6),
        e4(floods.tcp4(P4, H4, 40000, 7000, 1, options=floods.SYN_OPTIONS)),
        e6(floods.tcp6(P6, H6, 40000, 7000, 1, options=floods.SYN_OPTIONS)),
        e4(floods.tcp4(P4, H4, 40001, 7000, 5, ack=9, flags=0x10)),
        e4(floods.icmp_unreach(P4, H4, 3, floods.udp4(H4, P4, 5000, 53, b""))),
        e4(floods.icmp_frag_needed(P4, H4, 1280, floods.udp4(H4, FWD4, 5000, 53, bytes(8)))),
        e6(floods.icmp6_packet_too_big(P6, H6, 1280, floods.udp6(H6, FWD6, 5000, 53, data))),
        e4(floods.ipv4_fragment(P4, H4, 9, 0, True, udp4[20:] + data[:3])),
        e4(floods.ipv4_fragment(P4, H4, 9, 16, False, data[:40])),
        e6(floods.ipv6_fragment(P6, H6, 9, 0, True, udp6[40:] + data[:3])),
        e6(floods.ipv6_fragment(P6, H6, 9, 16, False, data[:40])),
        e4(floods.udp4(P4, FWD4, 1000, 53, data)),  # forwarded
        e6(floods.udp6(P6, FWD6, 1000, 53, data)),  # forwarded
        e4(floods.ipv4(P4, H4, 47, b"\x00\x00\x08\x00" + inner4, frag_off=0)),  # GRE
        e4(floods.ipv4(P4, H4, 47, b"\x00\x00\x65\x58" + inner_eth, frag_off=0)),  # gretap
        e4(floods.ipv4(P4, H4, 4, inner_ipip, frag_off=0)),  # IPIP
        e4(floods.ipv4(P4, H4, 41, inner6, frag_off=0)),  # SIT
    ]


mutation = st.one_of(
    st.tuples(st.just("cut"), st.integers(0, 200), st.integers(0, 0)),
    st.tuples(st.just("set"), st.integers(0, 200), st.integers(0, 255)),
    st.tuples(st.just("flip"), st.integers(0, 200), st.integers(0, 7)),
)
frame = st.tuples(st.integers(0, 20), st.lists(mutation, max_size=3))


def mutate(base: bytes, muts: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(base)
    for op, at, v in muts:
        if not out:
            break
        i = at % len(out)
        if op == "cut":
            del out[max(i, 1) :]
        elif op == "set":
            out[i] = v
        else:
            out[i] ^= 1 << v
    return bytes(out)


@FUZZ
@given(frames=st.lists(frame, min_size=1, max_size=8))
@pytest.mark.pure_python_layout(
    "SkbLedger replaces SkBuff.__init__ and tags skbs with an undeclared attribute"
)
@pytest.mark.slow
def test_every_rx_skb_is_accounted(frames: list[tuple[int, list[tuple[str, int, int]]]]) -> None:
    async def main() -> None:
        async with open_lab() as lab:
            h, port, out = await build(lab)
            keep = []
            for fam, addr in ((AF_INET, "0.0.0.0"), (AF_INET6, "::")):
                udp = h.socket(fam, SOCK_DGRAM)
                if fam == AF_INET6:
                    udp.setsockopt(41, 26, 1)  # IPV6_V6ONLY
                await udp.bind((addr, 5000))
                srv = h.socket(fam, SOCK_STREAM)
                if fam == AF_INET6:
                    srv.setsockopt(41, 26, 1)
                await srv.bind((addr, 7000))
                srv.listen(4)
                keep += [udp, srv]
            ping = h.socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)
            await ping.bind(("0.0.0.0", 1))
            keep.append(ping)
            await trio.sleep(1)
            bases = corpus(h)
            with SkbLedger() as ledger:
                for index, muts in frames:
                    await port.send(mutate(bases[index], muts))
                    await trio.sleep(0.001)
                await trio.sleep(65)  # ARP, reassembly and SYN-ACK timers run out
                port.drain()
                out.drain()
            audit = ledger.audit()
            assert not audit.lost, (audit, audit.lost[:3])
            assert audit.consumed + sum(audit.dropped.values()) + audit.queued == len(ledger.skbs)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
