"""TCP over IPv6 through a 6in4 (SIT) tunnel; `ss -t6` mid-flight, then GRO's counters.

The underlay is IPv4 (192.0.2.0/24 over a veth with GRO on at b); sit1 carries
2001:db8:9::/64. With the `ipip_sit_gro` patch (seed 4, on by default) b's
physical device merges the 6in4 packets, so ipip6_rcv and TCP see aggregates.

python examples/tcp6_over_sit.py
"""

from __future__ import annotations

import hashlib

import trio

import netstack
from netstack.gro import gro_statistics
from netstack.socket import AF_INET6, SOCK_STREAM, Socket


async def sink(srv: Socket, digest: list[str]) -> None:
    conn, peer = await srv.accept()
    print("accepted a connection from", peer)
    h = hashlib.sha256()
    while data := await conn.recv(65536):
        h.update(data)
    digest.append(h.hexdigest())
    conn.close()


async def main() -> bool:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        b.ethtool("-K eth0 gro on")
        for h, me, peer in ((a, 1, 2), (b, 2, 1)):
            h.ip(f"addr add 192.0.2.{me}/24 dev eth0")
            h.ip(f"link add sit1 type sit local 192.0.2.{me} remote 192.0.2.{peer}")
            h.ip("link set sit1 up")
            h.ip(f"-6 addr add 2001:db8:9::{me}/64 dev sit1")
        srv = b.socket(AF_INET6, SOCK_STREAM)
        await srv.bind(("::", 5001))
        srv.listen(8)
        payload = bytes(range(256)) * 8192  # 2 MiB
        digest: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sink, srv, digest)
            cli = a.socket(AF_INET6, SOCK_STREAM)
            await cli.connect(("2001:db8:9::2", 5001))
            await cli.sendall(payload[: 1 << 20])
            print(a.ss("-t6"))
            await cli.sendall(payload[1 << 20 :])
            cli.close()
        st = gro_statistics(b.net, "eth0")
        avg = st.complete_segs / max(st.complete, 1)
        sit_rx = b.dev("sit1").stats.rx_packets
        print(
            f"b eth0 GRO: {st.received} packets in, {st.merged} merged, {st.complete} "
            f"aggregates of {avg:.1f} segments on average; sit1 received {sit_rx} packets"
        )
        ok = digest == [hashlib.sha256(payload).hexdigest()]
        print("received intact:", ok)
        return ok


if __name__ == "__main__":
    trio.run(main)
