"""Small helpers shared by the tests (importable as ``helpers``: tests/ is on pythonpath)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType

import dpkt
import pytest
import trio

import netstack
from netstack.core import napi as _napi
from netstack.core.netdevice import NetDevice
from netstack.core.skbuff import SkBuff, alloc_skb
from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.errors import ConfigError
from netstack.labs.session import Session
from netstack.socket import Socket
from netstack.testing.builders import IPV4_ONLY, add_addr, add_route, nstat, pair, routed
from netstack.wire import ethernet as eth
from netstack.wire import ipv4, udp
from netstack.wire.ethernet import ETH_HLEN, ETH_P_IP
from netstack.wire.ipv4 import aton

# IPV4_ONLY and the builders live in netstack.testing.builders (re-exported here)
__all__ = [
    "IPV4_ONLY",
    "Term",
    "add_addr",
    "add_route",
    "bh_clean",
    "build_sites",
    "connected_tcp",
    "dummy_host",
    "nstat",
    "pair",
    "recv_all",
    "routed",
    "stream_transfer",
    "udp_skb",
    "warm_udp_pair",
]


def udp_skb(
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    sport: int = 1000,
    dport: int = 9,
    payload: int = 100,
    *,
    tos: int = 0,
    priority: int = 0,
    dev: NetDevice | None = None,
) -> SkBuff:
    """An Ethernet/IPv4/UDP frame as a qdisc sees it (``data`` at the MAC header).

    The IP header carries a valid checksum, so ECN marking can be checked
    against it; the UDP checksum is left 0 (none).
    """
    ip_len = 20 + 8 + payload
    skb = alloc_skb(ETH_HLEN + ip_len, headroom=32)
    skb.put(ETH_HLEN + ip_len)
    skb.reset_mac_header()
    eth.pack_into(skb.buf, skb.data, eth.EthHdr(b"\x02" * 6, b"\x04" * 6, ETH_P_IP))
    nh = skb.data + ETH_HLEN
    skb.network_header = nh
    skb.transport_header = nh + 20
    hdr = ipv4.IpHdr(4, 5, tos, ip_len, 1, 0, 64, 17, 0, aton(src), aton(dst))
    ipv4.pack_into(skb.buf, nh, hdr, fill_check=True)
    udp.pack_into(skb.buf, nh + 20, udp.UdpHdr(sport, dport, 8 + payload, 0))
    skb.protocol = ETH_P_IP
    skb.priority = priority
    skb.dev = dev  # whose Net counts the drop reasons
    return skb


def dummy_host(lab: netstack.Lab, name: str = "h") -> netstack.Host:
    """A host with ``dummy0`` left down: a qdisc grafted on it sits still, so a
    test can enqueue and dequeue by hand (nothing transmits behind its back)."""
    host = lab.add_host(name)
    host.ip("link add dummy0 type dummy")
    return host


def build_sites(
    lab: netstack.Lab, gre_opts: str, how: str = "link", kind: str = "gre"
) -> dict[str, netstack.Host]:
    """Two sites joined by a GRE (or *kind*: ipip) tunnel across a router.

    s1 (10.1.0.1) ─ gw1 ═ gre1 over 192.0.2.0/24 ─ r ─ 198.51.100.0/24 ═ gw2 ─ s2 (10.2.0.1);
    *gre_opts* are appended to both gateways' ``ip link add``/``ip tunnel add`` (*how*).
    """
    s1, gw1, r, gw2, s2 = (
        lab.add_host(n, sysctls=IPV4_ONLY) for n in ("s1", "gw1", "r", "gw2", "s2")
    )
    lab.add_link("s1:eth0", "gw1:eth0")
    lab.add_link("gw1:eth1", "r:eth0")
    lab.add_link("r:eth1", "gw2:eth1")
    lab.add_link("gw2:eth0", "s2:eth0")
    s1.ip("addr add 10.1.0.1/24 dev eth0")
    s1.ip("route add default via 10.1.0.254")
    s2.ip("addr add 10.2.0.1/24 dev eth0")
    s2.ip("route add default via 10.2.0.254")
    gw1.ip("addr add 10.1.0.254/24 dev eth0")
    gw1.ip("addr add 192.0.2.1/24 dev eth1")
    gw1.ip("route add default via 192.0.2.254")
    gw2.ip("addr add 10.2.0.254/24 dev eth0")
    gw2.ip("addr add 198.51.100.2/24 dev eth1")
    gw2.ip("route add default via 198.51.100.254")
    r.ip("addr add 192.0.2.254/24 dev eth0")
    r.ip("addr add 198.51.100.254/24 dev eth1")
    for h in (gw1, r, gw2):
        h.sysctl("net.ipv4.ip_forward=1")
    for gw, local, remote, net_ in (
        (gw1, "192.0.2.1", "198.51.100.2", "10.2.0.0/24"),
        (gw2, "198.51.100.2", "192.0.2.1", "10.1.0.0/24"),
    ):
        if how == "link":
            gw.ip(f"link add gre1 type {kind} remote {remote} local {local} {gre_opts}")
        else:
            gw.ip(f"tunnel add gre1 mode {kind} remote {remote} local {local} {gre_opts}")
        gw.ip("link set gre1 up")
        gw.ip(f"route add {net_} dev gre1")
    return {"s1": s1, "gw1": gw1, "r": r, "gw2": gw2, "s2": s2}


def tunnel_pair(
    lab: netstack.Lab, kind: str = "gre", *, ioctl: bool = False
) -> tuple[netstack.Host, netstack.Host]:
    """a ═ b: two IPv4-only hosts over one veth (192.0.2.1 — 192.0.2.2), each with a
    tunnel ``t1`` of *kind* to the other, 10.9.0.1/30 and 10.9.0.2/30 on the tunnels;
    made by ``ip link add`` (netlink), or with *ioctl* by ``ip tunnel add``."""
    a, b = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("a", "b"))
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/30"),
        (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/30"),
    ):
        if ioctl:
            h.ip(f"tunnel add t1 mode {kind} remote {remote} local {local}")
        else:
            h.ip(f"link add t1 type {kind} remote {remote} local {local}")
        h.ip("link set t1 up")
        h.ip(f"addr add {addr} dev t1")
    return a, b


async def connected_tcp(
    a: netstack.Host, b: netstack.Host, port: int, address: str = "10.0.0.2"
) -> tuple[Socket, Socket]:
    """A TCP connection from *a* to *b*'s *address*:*port*: (a's socket, b's accepted one)."""
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", port))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect((address, port))
    conn, _ = await srv.accept()
    return c, conn


async def recv_all(conn: Socket) -> bytes:
    """Everything *conn* receives until the peer's FIN."""
    out = bytearray()
    while data := await conn.recv(1 << 16):
        out += data
    return bytes(out)


async def stream_transfer(
    client: netstack.Host,
    server: netstack.Host,
    family: int,
    address: str,
    port: int,
    payload: bytes,
) -> tuple[bytes, Socket]:
    """Listen on *server*'s wildcard, connect from *client* to *address*, send
    *payload*, close; return what the server read and the client's socket."""
    from netstack.core.sock import AF_INET6, SOCK_STREAM

    srv = server.socket(family, SOCK_STREAM)
    await srv.bind(("::" if family == AF_INET6 else "", port))
    srv.listen(1)
    got = bytearray()
    async with trio.open_nursery() as n:

        async def sink() -> None:
            conn, _ = await srv.accept()
            while d := await conn.recv(1 << 17):
                got.extend(d)

        n.start_soon(sink)
        c = client.socket(family, SOCK_STREAM)
        await c.connect((address, port))
        await c.sendall(payload)
        c.close()
    srv.close()
    return bytes(got), c


class Term:
    """A session and everything it printed."""

    def __init__(self, session: Session, lines: list[str]) -> None:
        self.session = session
        self.lines = lines

    async def run(self, line: str) -> tuple[int, str]:
        self.lines.clear()
        status = await self.session.run_line(line)
        return status, "\n".join(self.lines)


def match_ip_sessions_with_the_kernel(
    tag: str,
    scenarios: Iterable[tuple[Sequence[str], Sequence[tuple[str, str]], Callable[[], list[str]]]],
) -> None:
    """Run each scenario's ``ip`` setup, then its session, in a fresh network
    namespace of this machine's kernel, and require every command to print what
    the netstack host printed (*emulated*, called per scenario) and what the test
    expects. Skips without root or ``ip``; deletes only its own namespace."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and ip")
    ns = f"ns{tag}{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", ns], capture_output=True, timeout=30)
    if r.returncode != 0:
        pytest.skip(f"ip netns add failed: {r.stderr.decode()[-200:]}")

    def ip(command: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["ip", "-n", ns, *command.split()], capture_output=True, timeout=30)

    try:
        for setup, session, emulated in scenarios:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
            subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
            for command in ["link set lo up", *setup]:
                r = ip(command)
                assert r.returncode == 0, (command, r.stderr)
            ours = emulated()
            for (command, expected), emulated_out in zip(session, ours, strict=True):
                r = ip(command)
                real = r.stdout.decode() or r.stderr.decode().rstrip("\n")
                assert real == emulated_out == expected, command
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


PEER_MAC = bytes.fromhex("020000000099")


def udp_frame_from_peer(
    dst_mac: bytes, payload: bytes, options: bytes = b"", tos: int = 0
) -> bytes:
    """10.0.0.9:40000 → 10.0.0.2:9000 from PEER_MAC, built by dpkt (both checksums
    filled), with IP *options* and *tos*."""
    u = dpkt.udp.UDP(sport=40000, dport=9000, data=payload)
    u.ulen = len(u)
    ip = dpkt.ip.IP(
        src=bytes([10, 0, 0, 9]), dst=bytes([10, 0, 0, 2]), p=17, ttl=64, opts=options, data=u
    )
    ip.hl = 5 + len(options) // 4
    ip.len = len(ip)
    ip.tos = tos
    raw = bytes(ip)
    assert raw[0] == 0x40 | (5 + len(options) // 4)
    return bytes(dpkt.ethernet.Ethernet(dst=dst_mac, src=PEER_MAC, type=0x0800, data=raw))


async def receiver_behind_a_port(lab: netstack.Lab) -> tuple[netstack.Host, netstack.Port, Socket]:
    """Host b (10.0.0.2/24, IPv4 only) whose eth0 is a port the test sends frames
    into, the peer 10.0.0.9 at PEER_MAC in its neighbour table, and a UDP socket
    bound to port 9000."""
    b = lab.add_host("b", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
    port = lab.add_port("b:eth0")
    add_addr(b, "eth0", "10.0.0.2/24")
    b.ip("neigh add 10.0.0.9 lladdr 02:00:00:00:00:99 dev eth0")
    sock = b.socket()
    await sock.bind(("0.0.0.0", 9000))
    return b, port, sock


def build_script() -> ModuleType:
    """``scripts/build_compiled.py`` (the mypyc build's module list and rewrites), loaded."""
    path = Path(__file__).resolve().parent.parent / "scripts" / "build_compiled.py"
    spec = importlib.util.spec_from_file_location("build_compiled", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ip_or_error(h: netstack.Host, command: str) -> str:
    """``ip COMMAND`` on *h*: its output, or the error message ip would print."""
    try:
        return h.ip(command)
    except ConfigError as e:
        return str(e)


def host_after(lab: netstack.Lab, setup: Iterable[str], name: str = "h") -> netstack.Host:
    """A host of *lab* configured by the ``ip`` commands of *setup*."""
    h = lab.add_host(name)
    for command in setup:
        h.ip(command)
    return h


def bh_clean() -> bool:
    """Is the process's softirq state at rest (core/napi.py, "Polls at
    local_bh_enable"): bottom halves enabled and nothing on the poll list?"""
    return not _napi.BH.poll_list and _napi.BH.state == _napi.BH_ENABLED


async def warm_udp_pair(
    lab: netstack.Lab,
) -> tuple[netstack.Host, netstack.Host, Socket, Socket]:
    """``a`` — veth — ``b`` (:func:`pair`), a UDP receiver bound to 10.0.0.2:9 on
    ``b`` and a sender on ``a`` whose first datagram (``warm``, received) resolved
    ARP and started the tasks: (a, b, tx, rx)."""
    a, b = pair(lab)
    rx = b.socket(2, 2)
    await rx.bind(("10.0.0.2", 9))
    tx = a.socket(2, 2)
    await tx.sendto(b"warm", ("10.0.0.2", 9))
    assert await rx.recvfrom(100) == (b"warm", ("10.0.0.1", tx.getsockname()[1]))
    return a, b, tx, rx
