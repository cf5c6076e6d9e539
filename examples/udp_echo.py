"""A UDP echo server and client, with the socket API's errors.

python examples/udp_echo.py
"""

from __future__ import annotations

import trio

import netstack
from netstack.socket import Socket


async def echo_server(sock: Socket, count: int) -> None:
    for _ in range(count):
        data, peer = await sock.recvfrom(2048)
        await sock.sendto(data.upper(), peer)


async def main() -> list[bytes]:
    async with netstack.open_lab() as lab:
        client, server = lab.add_host("client"), lab.add_host("server")
        lab.add_link("client:eth0", "server:eth0")
        client.ip("addr add 192.168.1.10/24 dev eth0")
        server.ip("addr add 192.168.1.1/24 dev eth0")

        srv = server.socket()
        await srv.bind(("0.0.0.0", 7))
        replies: list[bytes] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(echo_server, srv, 3)
            cli = client.socket()
            await cli.connect(("192.168.1.1", 7))
            for word in (b"hello", b"udp", b"echo"):
                await cli.send(word)
                replies.append(await cli.recv(2048))
        print("replies:", replies)

        # A connected socket learns of a closed port from ICMP port unreachable.
        closed = client.socket()
        await closed.connect(("192.168.1.1", 9))
        await closed.send(b"hello?")
        try:
            with trio.fail_after(1):
                await closed.recv(2048)
        except ConnectionRefusedError as e:
            print("recv on a socket connected to a closed port:", e)
        print("server Udp counters:", server.snmp()["Udp"].as_dict())
        return replies


if __name__ == "__main__":
    netstack.run(main)
