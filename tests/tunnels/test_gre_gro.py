"""GRO for GRE (``gre_offload``, built in): a TCP bulk flow through a GRE tunnel is
merged on the physical device's NAPI when the GRE header has no flags or only a
key; sequence numbers (and, in netstack, checksums) keep every packet apart.

    a 192.0.2.1 ── veth (GRO on b) ── b 192.0.2.2
    gre1 10.9.0.1/24                gre1 10.9.0.2/24
"""

from __future__ import annotations

import pytest
import trio

import netstack
from netstack.gro import gro_statistics
from netstack.socket import AF_INET, SOCK_STREAM
from netstack.tcp import tcp_of

PORT = 5001


async def gre_transfer(lab: netstack.Lab, opts: str) -> tuple[netstack.Host, bytes, bytes]:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    b.ethtool("-K eth0 gro on")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/24"),
        (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/24"),
    ):
        h.ip(f"link add gre1 type gre local {local} remote {remote} {opts}".strip())
        h.ip("link set gre1 up")
        h.ip(f"addr add {addr} dev gre1")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(1)
    payload = bytes(range(256)) * 2048  # 512 KB
    got = bytearray()
    async with trio.open_nursery() as n:

        async def server() -> None:
            conn, _ = await srv.accept()
            while d := await conn.recv(1 << 17):
                got.extend(d)

        n.start_soon(server)
        c = a.socket(AF_INET, SOCK_STREAM)
        await c.connect(("10.9.0.2", PORT))
        await c.sendall(payload)
        c.close()
    return b, payload, bytes(got)


@pytest.mark.parametrize(
    ("opts", "merges"),
    [("", True), ("key 42", True), ("seq", False), ("csum", False)],
)
async def test_gre_gro_merges_plain_and_keyed_gre(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, opts: str, merges: bool
) -> None:
    b, payload, got = await gre_transfer(lab, opts)
    assert got == payload
    phys = gro_statistics(b.net, "eth0")
    gre_in = b.dev("gre1").stats.rx_packets
    mtu = b.dev("gre1").mtu
    data_frames = len(payload) // (mtu - 40)
    if merges:
        assert phys.merged > data_frames // 2  # outer packets merged on eth0's NAPI
        assert phys.complete_segs / phys.complete > 5
        assert gre_in < data_frames // 4  # ipgre_rcv saw aggregates
        assert len(payload) / tcp_of(b.net).mib.InSegs > 8 * (mtu - 40)
    else:
        assert phys.merged == 0  # flushed at the GRE header
        assert gre_in >= data_frames
