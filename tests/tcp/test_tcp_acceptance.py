"""Issue 5's acceptance: a TCP transfer delivered byte-exact over netem with 5% loss,
1% duplication, reordering and 10% jitter, for Reno and CUBIC, on IPv4, IPv6, and
through GRE, IPIP and SIT tunnels.

    a ── nic, 1 Gbit/s, netem on both eth0 egresses ── b
    underlay 192.0.2.1/24, 192.0.2.2/24 (and 2001:db8::1/64, ::2 for IPv6)
    overlay: gre1 / ipip1 10.9.0.1/24 ↔ 10.9.0.2/24, sit1 2001:db8:9::1/64 ↔ ::2

netem impairs the underlay, so through a tunnel it is the outer packets that
are lost, duplicated, reordered and delayed. The suite runs every combination
with 1 MB; ``NETSTACK_TCP_ACCEPTANCE=full`` runs the issue's 10 MB (see
docs/tcp.md for the wall times).
"""

from __future__ import annotations

import os
import random

import pytest
import trio

from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.host import Host, Lab
from netstack.tcp import tcp_of

PORT = 5401
FULL = os.environ.get("NETSTACK_TCP_ACCEPTANCE") == "full"
SIZE = 10_000_000 if FULL else 1_000_000
NETEM = "netem delay 2ms 200us loss 5% duplicate 1% reorder 2% 50%"

# path → (family, address b listens on)
PATHS = {
    "ipv4": (AF_INET, "192.0.2.2"),
    "ipv6": (AF_INET6, "2001:db8::2"),
    "gre": (AF_INET, "10.9.0.2"),
    "ipip": (AF_INET, "10.9.0.2"),
    "sit": (AF_INET6, "2001:db8:9::2"),
}


def impaired_pair(lab: Lab, path: str, cc: str) -> tuple[Host, Host]:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=1e9)
    for h, me, peer in ((a, 1, 2), (b, 2, 1)):
        h.ip(f"addr add 192.0.2.{me}/24 dev eth0")
        h.ip(f"-6 addr add 2001:db8::{me}/64 dev eth0 nodad")
        if path in ("gre", "ipip"):
            kind = "gre" if path == "gre" else "ipip"
            h.ip(f"link add {path}1 type {kind} local 192.0.2.{me} remote 192.0.2.{peer}")
            h.ip(f"link set {path}1 up")
            h.ip(f"addr add 10.9.0.{me}/24 dev {path}1")
        elif path == "sit":
            h.ip(f"link add sit1 type sit local 192.0.2.{me} remote 192.0.2.{peer}")
            h.ip("link set sit1 up")
            h.ip(f"-6 addr add 2001:db8:9::{me}/64 dev sit1")
        h.tc(f"qdisc add dev eth0 root {NETEM}")
        h.sysctl(f"net.ipv4.tcp_congestion_control={cc}")
    return a, b


@pytest.mark.parametrize("cc", ["reno", "cubic"])
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.slow
async def test_transfer_over_netem(lab: Lab, autojump_clock: object, path: str, cc: str) -> None:
    a, b = impaired_pair(lab, path, cc)
    await trio.sleep(2)  # the sit link-locals finish DAD
    family, addr = PATHS[path]
    srv = b.socket(family, SOCK_STREAM)
    await srv.bind(("::" if family == AF_INET6 else "", PORT))
    srv.listen(1)
    payload = random.Random(SIZE).randbytes(SIZE)
    got = bytearray()
    async with trio.open_nursery() as n:

        async def sink() -> None:
            conn, _ = await srv.accept()
            while data := await conn.recv(1 << 16):
                got.extend(data)

        n.start_soon(sink)
        c = a.socket(family, SOCK_STREAM)
        await c.connect((addr, PORT))
        await c.sendall(payload)
        c.close()
    assert bytes(got) == payload
    snmp = tcp_of(a.net).snmp()
    # bounds, not figures: a random-loss bulk transfer's counts follow every recovery
    # decision and move with each (tests/tcp/test_tcp_recovery.py has the exact paths)
    assert snmp["Tcp"].RetransSegs > 10  # the loss was real and repaired
    assert tcp_of(b.net).snmp()["TcpExt"].TCPOFOQueue > 0  # and so was the reordering
    netem = a.tc("-s qdisc show dev eth0")
    assert "dropped" in netem
