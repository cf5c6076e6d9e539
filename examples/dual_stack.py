"""One AF_INET6 server socket for IPv4 and IPv6 clients (dual stack, as Linux).

A TCP listener and a UDP socket bound to ``::`` are not ``IPV6_V6ONLY`` (the
default, ``net.ipv6.bindv6only = 0``), so IPv4 clients reach them too and are
seen as ``::ffff:a.b.c.d``; the packets on the wire stay plain IPv4.

python examples/dual_stack.py
"""

from __future__ import annotations

from typing import Any

import netstack
from netstack.socket import AF_INET, AF_INET6, SOCK_DGRAM, SOCK_STREAM


async def main() -> dict[str, Any]:
    async with netstack.open_lab() as lab:
        client, server = lab.add_host("client"), lab.add_host("server")
        lab.add_link("client:eth0", "server:eth0")
        client.ip("addr add 10.0.0.1/24 dev eth0")
        server.ip("addr add 10.0.0.2/24 dev eth0")
        client.ip("-6 addr add 2001:db8::1/64 dev eth0 nodad")
        server.ip("-6 addr add 2001:db8::2/64 dev eth0 nodad")
        out: dict[str, Any] = {"tcp": [], "udp": []}

        srv = server.socket(AF_INET6, SOCK_STREAM)
        await srv.bind(("::", 80))
        srv.listen(8)
        for family, addr in ((AF_INET, "10.0.0.2"), (AF_INET6, "2001:db8::2")):
            c = client.socket(family, SOCK_STREAM)
            await c.connect((addr, 80))
            conn, peer = await srv.accept()
            await c.sendall(b"hello")
            print(f"TCP from {peer[0]}: {await conn.recv(100)!r}")
            out["tcp"].append(peer[0])
            if family == AF_INET:
                print(server.ss("-tn"))  # ESTAB … [::ffff:10.0.0.2]:80 [::ffff:10.0.0.1]:…
            conn.close()
            c.close()

        udp = server.socket(AF_INET6, SOCK_DGRAM)
        await udp.bind(("::", 53))
        for family, addr in ((AF_INET, "10.0.0.2"), (AF_INET6, "2001:db8::2")):
            c = client.socket(family, SOCK_DGRAM)
            await c.sendto(b"query", (addr, 53))
            data, peer = await udp.recvfrom(100)
            await udp.sendto(b"answer", peer)  # a mapped peer is answered over IPv4
            print(f"UDP from {peer[0]}: {data!r}, reply {(await c.recvfrom(100))[0]!r}")
            out["udp"].append(peer[0])

        # and the other way: an AF_INET6 client to an IPv4-only server
        v4srv = server.socket(AF_INET, SOCK_STREAM)
        await v4srv.bind(("0.0.0.0", 8080))
        v4srv.listen(8)
        c6 = client.socket(AF_INET6, SOCK_STREAM)
        await c6.connect(("::ffff:10.0.0.2", 8080))
        conn, peer = await v4srv.accept()
        print(f"AF_INET6 client {c6.getsockname()[0]} seen by the IPv4 server as {peer[0]}")
        out["mapped_client"] = (c6.getsockname()[0], peer[0])
        return out


if __name__ == "__main__":
    netstack.run(main)
