"""A tunnel's GRO cell on a flow that cannot merge: what it checks, and what it skips.

The decapsulated datagram goes through ``napi_gro_receive`` → ``dev_gro_receive``
→ ``inet_gro_receive`` → ``udp4_gro_receive``, which flushes it (no encapsulation
socket), and up through ``gro_normal_one``. The UDP checksum is validated there
only when ``__skb_gro_checksum_validate_needed`` says so: never for a checksum
the sender left to the device (CHECKSUM_PARTIAL: IPIP and GRE have
NETIF_F_HW_CSUM), once for one summed in software (the sender's tunnel with
``ethtool -K t1 tx off``), after which ``udp_rcv`` trusts it
(CHECKSUM_UNNECESSARY).
"""

from __future__ import annotations

import dpkt
import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY, tunnel_pair

import netstack
import netstack.ipv4.offload as offload
from netstack.core import gro_cells
from netstack.core.dev import __netif_receive_skb_core
from netstack.core.net import PacketOffload
from netstack.core.skbuff import CHECKSUM_UNNECESSARY, SkBuff
from netstack.gro import core as gro_core
from netstack.gro.core import GRO_NORMAL, GroNode, NapiGroCb
from netstack.host import Port
from netstack.socket import IP_TOS, IPPROTO_IP
from netstack.wire import gre
from netstack.wire.gre import GRE_CSUM, GRE_KEY


def tunnel(
    lab: netstack.Lab, kind: str, *, tx_csum: bool = True
) -> tuple[netstack.Host, netstack.Host]:
    """a ═ b over one veth; without *tx_csum* a's tunnel does not take checksums
    left to do (``ethtool -K t1 tx off``): ``udp_sendmsg`` sums them itself."""
    a, b = tunnel_pair(lab, kind)
    if not tx_csum:
        a.ethtool("-K t1 tx off")
    return a, b


async def exchange(a: netstack.Host, b: netstack.Host, n: int) -> None:
    rx = b.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket()
    for i in range(n):
        await tx.sendto(b"%d" % i, ("10.9.0.2", 9000))
        with trio.fail_after(1):
            data, _ = await rx.recvfrom(100)
        assert data == b"%d" % i


@pytest.mark.pure_python_layout(
    "spies by replacing a compiled module's function, which its compiled callers do not read"
)
@pytest.mark.parametrize(
    ("kind", "tx_csum", "pseudo_sums"),
    [("ipip", True, 0), ("gre", True, 0), ("gre", False, 5), ("ipip", False, 5)],
)
async def test_the_gro_cell_sums_the_pseudo_header_only_when_it_validates(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    tx_csum: bool,
    pseudo_sums: int,
) -> None:
    a, b = tunnel(lab, kind, tx_csum=tx_csum)
    calls: list[int] = []
    real = offload.inet_gro_compute_pseudo

    def counting(skb: SkBuff, proto: int) -> int:
        calls.append(proto)
        return real(skb, proto)

    monkeypatch.setattr(offload, "inet_gro_compute_pseudo", counting)
    await exchange(a, b, 5)
    gro = b.dev("t1").napi_list[0].gro
    assert isinstance(gro, GroNode)
    s = gro.statistics()
    assert (s.received, s.normal, s.held, s.merged) == (5, 5, 0, 0)
    assert calls == [17] * pseudo_sums
    udp = b.snmp()["Udp"]
    assert (udp.InDatagrams, udp.InCsumErrors) == (5, 0)


@pytest.mark.pure_python_layout(
    "spies by replacing a compiled module's function, which its compiled callers do not read"
)
async def test_a_datagram_validated_in_the_cell_is_not_summed_again(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tunnel(lab, "gre", tx_csum=False)
    seen: list[int] = []
    real = __netif_receive_skb_core

    def spy(skb: SkBuff) -> None:
        seen.append(skb.ip_summed)  # as GRO passes it up
        real(skb)

    monkeypatch.setattr(gro_core, "netif_receive_skb_core", spy)
    await exchange(a, b, 3)
    assert seen == [CHECKSUM_UNNECESSARY] * 3


@pytest.mark.pure_python_layout(
    "spies by replacing a compiled module's function, which its compiled callers do not read"
)
async def test_a_cloned_skb_bypasses_the_cell(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, b = tunnel(lab, "ipip")
    t = b.dev("t1").priv
    taken: list[SkBuff] = []

    def netif_rx(skb: SkBuff) -> int:
        taken.append(skb)
        return 0

    monkeypatch.setattr(gro_cells, "netif_rx", netif_rx)
    skb = SkBuff(bytearray(40), 0, 40)
    skb.dev = b.dev("t1")
    clone = skb.clone()
    assert gro_cells.gro_cells_receive(t.gro_cells, skb) == 0
    assert taken == [skb] and not t.gro_cells.queues[0]
    clone_taken = gro_cells.gro_cells_receive(t.gro_cells, clone)
    assert clone_taken == 0 and taken == [skb, clone]


# -- ECN through the tunnel, end to end (ip_tunnel_xmit / ip_tunnel_rcv write the
# static inlines ip_tunnel_ecn_encap and IP_ECN_decapsulate's Not-ECT case in) --

H_MAC = bytes.fromhex("020000000001")
PEER_MAC = bytes.fromhex("020000000002")
LOCAL = bytes([192, 0, 2, 1])
REMOTE = bytes([192, 0, 2, 2])


async def ipip_rig(lab: netstack.Lab) -> tuple[netstack.Host, Port]:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    port = lab.add_port("h:eth0", up=False)
    h.ip("link set eth0 address 02:00:00:00:00:01 up")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    h.ip("neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
    h.ip("link add t1 type ipip remote 192.0.2.2 local 192.0.2.1")
    h.ip("link set t1 up")
    h.ip("addr add 10.9.0.1/30 dev t1")
    return h, port


@pytest.mark.parametrize(
    ("inner_tos", "outer_tos"), [(0x28, 0x00), (0x2A, 0x02), (0x29, 0x01), (0x2B, 0x02)]
)
async def test_the_outer_header_carries_the_inner_ecn_field(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, inner_tos: int, outer_tos: int
) -> None:
    h, port = await ipip_rig(lab)
    tx = h.socket()
    tx.setsockopt(IPPROTO_IP, IP_TOS, inner_tos)
    await tx.sendto(b"ecn", ("10.9.0.2", 9000))
    await trio.sleep(0.01)
    (outer,) = [dpkt.ethernet.Ethernet(f).data for f in port.drain()]
    assert isinstance(outer, dpkt.ip.IP) and outer.p == 4
    assert (outer.tos, outer.ttl, outer.src, outer.dst) == (outer_tos, 64, LOCAL, REMOTE)
    assert outer.data.tos == inner_tos and outer.data.data.data == b"ecn"
    assert h.dev("t1").statistics().tx_packets == 1


def ipip_frame(outer_tos: int, inner_tos: int) -> bytes:
    inner = dpkt.ip.IP(
        src=bytes([10, 9, 0, 2]),
        dst=bytes([10, 9, 0, 1]),
        p=17,
        ttl=64,
        tos=inner_tos,
        data=dpkt.udp.UDP(sport=4000, dport=5000, data=b"in"),
    )
    inner.data.ulen = 10
    ip = dpkt.ip.IP(src=REMOTE, dst=LOCAL, p=4, ttl=64, tos=outer_tos, data=bytes(inner))
    return bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip))


@pytest.mark.parametrize(
    ("outer_tos", "inner_tos", "delivered_tos"),
    [
        (0x00, 0x00, 0x00),  # Not-ECT over Not-ECT
        (0x00, 0x03, 0x03),  # a Not-ECT outer header leaves the inner CE alone
        (0x00, 0x01, 0x01),
        (0x03, 0x02, 0x03),  # CE over ECT(0): the inner header becomes CE
        (0x01, 0x02, 0x01),  # ECT(1) over ECT(0): ECT(1)
        (0x02, 0x00, 0x00),  # ECT(0) over Not-ECT: accepted (logged), inner unchanged
        (0x03, 0x00, None),  # CE over Not-ECT: dropped, rx_frame_errors
    ],
)
@pytest.mark.pure_python_layout(
    "spies by replacing a compiled module's function, which its compiled callers do not read"
)
async def test_decapsulation_folds_the_outer_ecn_field_in(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    outer_tos: int,
    inner_tos: int,
    delivered_tos: int | None,
) -> None:
    h, port = await ipip_rig(lab)
    sock = h.socket()
    await sock.bind(("0.0.0.0", 5000))
    passed_up: list[int] = []

    def spy(skb: SkBuff) -> None:
        if skb.dev is h.dev("t1"):
            passed_up.append(skb.buf[skb.data + 1])  # the inner TOS, as t1's cell passes it up
        __netif_receive_skb_core(skb)

    monkeypatch.setattr(gro_core, "netif_receive_skb_core", spy)
    await port.send(ipip_frame(outer_tos, inner_tos))
    await trio.sleep(0.01)
    st = h.dev("t1").statistics()
    if delivered_tos is None:
        assert passed_up == [] and (st.rx_packets, st.rx_frame_errors, st.rx_errors) == (0, 1, 1)
        return
    assert passed_up == [delivered_tos] and (st.rx_packets, st.rx_errors) == (1, 0)
    with trio.fail_after(1):
        data, peer = await sock.recvfrom(100)
    assert (data, peer) == (b"in", ("10.9.0.2", 4000))


async def test_every_packet_starts_gro_with_a_zeroed_cb(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """The NapiGroCb of a packet passed up unmerged is zeroed for the next one."""
    _, h = tunnel(lab, "ipip")
    dev = h.dev("t1")
    node = GroNode(dev.napi_list[0])
    seen: list[dict[str, int]] = []

    def gro_receive(head: list[SkBuff], skb: SkBuff) -> None:
        cb = skb.cb
        seen.append({name: getattr(cb, name) for name in NapiGroCb.__slots__})
        # what an offload may leave behind on a packet it flushes: every field dirty
        for name in NapiGroCb.__slots__:
            setattr(cb, name, 7)
        cb.flush, cb.same_flow, cb.free = 1, 0, 0  # this one flushed: passed up alone

    h.net.dev_add_offload(PacketOffload(0x88B5, gro_receive=gro_receive))
    for _ in range(3):
        skb = SkBuff(bytearray(60), 14, 60)
        skb.protocol = 0x88B5
        skb.dev = dev
        assert node.receive(node.napi, skb) == GRO_NORMAL and skb.cb is None
    fresh = NapiGroCb(14)  # the written-out reset in GroNode.receive must stay in step with it
    assert seen == [{name: getattr(fresh, name) for name in NapiGroCb.__slots__}] * 3
    s = node.statistics()
    assert (s.received, s.normal, s.held) == (3, 3, 0)


async def test_a_checksum_error_does_not_stick_to_the_next_gre_packet(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """gre_rcv's tnl_ptk_info is scratch reused per packet: a bad C-flagged packet's
    csum_err must not reach the next packet, which has no checksum."""
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    port = lab.add_port("h:eth0", up=False)
    h.ip("link set eth0 address 02:00:00:00:00:01 up")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    for i, opts in ((1, "key 5"), (2, "key 6 csum")):
        h.ip(f"link add gre{i} type gre remote 192.0.2.2 local 192.0.2.1 {opts}")
        h.ip(f"link set gre{i} up")
        h.ip(f"addr add 10.9.{i}.1/30 dev gre{i}")
    sock = h.socket()
    await sock.bind(("0.0.0.0", 5000))

    def inner(i: int, payload: bytes) -> bytes:
        udp = dpkt.udp.UDP(sport=4000, dport=5000, data=payload)
        udp.ulen = 8 + len(payload)
        src, dst = bytes([10, 9, i, 2]), bytes([10, 9, i, 1])
        return bytes(dpkt.ip.IP(src=src, dst=dst, p=17, ttl=64, data=udp))

    def frame(gre_bytes: bytes) -> bytes:
        ip = dpkt.ip.IP(src=REMOTE, dst=LOCAL, p=47, ttl=64, data=gre_bytes)
        return bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip))

    bad = bytearray(gre.pack(GRE_KEY | GRE_CSUM, 0x0800, inner(2, b"bad"), key=6))
    bad[5] ^= 0x01
    await port.send(frame(bytes(bad)))
    await port.send(frame(gre.pack(GRE_KEY, 0x0800, inner(1, b"good"), key=5)))
    with trio.fail_after(1):
        data, peer = await sock.recvfrom(100)
    assert (data, peer) == (b"good", ("10.9.1.2", 4000))
    g1, g2 = h.dev("gre1").statistics(), h.dev("gre2").statistics()
    assert (g1.rx_packets, g1.rx_crc_errors, g2.rx_packets, g2.rx_crc_errors) == (1, 0, 0, 1)


async def test_a_gre_packet_for_no_tunnel_is_answered_port_unreachable(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """ipgre_rcv's no-match path (the handler bound to the Net's ip_gre state)."""
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    port = lab.add_port("h:eth0", up=False)
    h.ip("link set eth0 address 02:00:00:00:00:01 up")
    h.ip("addr add 192.0.2.1/24 dev eth0")
    h.ip("neigh add 192.0.2.2 lladdr 02:00:00:00:00:02 dev eth0 nud permanent")
    h.ip("link add gre1 type gre remote 192.0.2.2 local 192.0.2.1 key 5")
    h.ip("link set gre1 up")
    inner = bytes(dpkt.ip.IP(src=bytes([10, 9, 1, 2]), dst=bytes([10, 9, 1, 1]), p=17, ttl=64))
    gre_bytes = gre.pack(GRE_KEY, 0x0800, inner, key=9)  # no tunnel has key 9
    ip = dpkt.ip.IP(src=REMOTE, dst=LOCAL, p=47, ttl=64, data=gre_bytes)
    await port.send(bytes(dpkt.ethernet.Ethernet(dst=H_MAC, src=PEER_MAC, type=0x0800, data=ip)))
    await trio.sleep(0.01)
    (reply,) = [dpkt.ethernet.Ethernet(f).data for f in port.drain()]
    assert isinstance(reply, dpkt.ip.IP) and (reply.src, reply.dst, reply.p) == (LOCAL, REMOTE, 1)
    assert (reply.data.type, reply.data.code) == (3, 3)  # port unreachable
    assert h.drops().get("IP_TUNNEL_NO_MATCH") == 1
    assert h.dev("gre1").statistics().rx_packets == 0
