"""GRO for IPIP (seed 4): a TCP bulk flow through an IPIP tunnel is merged on
the physical device's NAPI only with ``ipip_sit_gro``; the data is intact
either way, and the merged aggregates cross ipip_rcv once per aggregate."""

from __future__ import annotations

import pytest
import trio
from helpers import stream_transfer

import netstack
from netstack.gro import gro_statistics
from netstack.socket import AF_INET
from netstack.tcp import tcp_of

PORT = 5001


async def _transfer(lab: netstack.Lab, patched: bool) -> tuple[netstack.Host, bytes, bytes]:
    patches = netstack.Patches(ipip_sit_gro=patched)
    a = lab.add_host("a", patches=patches)
    b = lab.add_host("b", patches=patches)
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    b.ethtool("-K eth0 gro on")  # veth does GRO in its NAPI when asked to
    # The IPIP device takes 64 KB GSO skbs (IPIP_FEATURES); veth would carry
    # them whole (it has the encapsulation GSO bits): without TSO on a's veth
    # they are cut into wire-sized IPIP packets by software GSO, as a NIC
    # without IPIP TSO does.
    a.ethtool("-K eth0 tso off")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/24"),
        (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/24"),
    ):
        h.ip(f"tunnel add ipip1 mode ipip local {local} remote {remote}")
        h.ip("link set ipip1 up")
        h.ip(f"addr add {addr} dev ipip1")
    payload = bytes(range(256)) * 2048  # 512 KB
    got, _ = await stream_transfer(a, b, AF_INET, "10.9.0.2", PORT, payload)
    return b, payload, got


@pytest.mark.parametrize("patched", [False, True])
async def test_ipip_gro_only_with_the_patch(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, patched: bool
) -> None:
    b, payload, got = await _transfer(lab, patched)
    assert got == payload
    phys = gro_statistics(b.net, "eth0")
    ipip_in = b.dev("ipip1").stats.rx_packets
    data_frames = len(payload) // 1460
    if patched:
        assert phys.merged > data_frames // 2  # outer packets merged on eth0's NAPI
        assert phys.complete_segs / phys.complete > 5
        assert ipip_in < data_frames // 4  # ipip_rcv saw aggregates
    else:
        assert phys.merged == 0  # IPIP is flushed from GRO at once
        # ipip_rcv saw every segment a sent, one by one, retransmissions too (without
        # GRO b's receive queue overflows and prunes)
        sent = tcp_of(lab.hosts["a"].net).snmp()["Tcp"]
        assert ipip_in == sent.OutSegs + sent.RetransSegs > data_frames
