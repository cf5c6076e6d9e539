"""A TCP transfer between two hosts over a 100 Mbit/s, 5 ms link; `ss -ti` mid-flight.

python examples/tcp_transfer.py
"""

from __future__ import annotations

import hashlib

import trio

import netstack
from netstack.socket import AF_INET, SOCK_STREAM, Socket


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
        lab.add_link("a:eth0", "b:eth0", kind="nic", rate=100e6, delay=0.005)
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        srv = b.socket(AF_INET, SOCK_STREAM)
        await srv.bind(("0.0.0.0", 5001))
        srv.listen(8)
        payload = bytes(range(256)) * 8192  # 2 MiB
        digest: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sink, srv, digest)
            cli = a.socket(AF_INET, SOCK_STREAM)
            start = trio.current_time()
            await cli.connect(("10.0.0.2", 5001))
            await cli.sendall(payload[: 1 << 20])
            print(a.ss("-ti"))
            await cli.sendall(payload[1 << 20 :])
            cli.close()
        elapsed = trio.current_time() - start
        print(f"{len(payload)} bytes in {elapsed:.3f} s of virtual time: "
              f"{len(payload) * 8 / elapsed / 1e6:.1f} Mbit/s")  # fmt: skip
        ok = digest == [hashlib.sha256(payload).hexdigest()]
        print("received intact:", ok)
        return ok


if __name__ == "__main__":
    trio.run(main)
