"""Shape a link with tbf and measure the rate a UDP flood gets through.

``tc qdisc replace dev eth0 root tbf rate 1mbit burst 32kb latency 50ms`` on
the sender; a flood of 1000-byte datagrams offered at about twice that; the
receiver counts what arrives over ten virtual seconds once the 32 kB bucket
has emptied. tbf counts frames at the Ethernet layer (14 + 20 + 8 + 1000 B).

python examples/tc_tbf_shaping.py
"""

from __future__ import annotations

from typing import Any

import trio

import netstack

FRAME = 14 + 20 + 8 + 1000


async def main() -> dict[str, Any]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind="nic")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        a.tc("qdisc replace dev eth0 root tbf rate 1mbit burst 32kb latency 50ms")
        await a.ping("10.0.0.2")  # resolve ARP before the flood

        server = b.socket()
        await server.bind(("0.0.0.0", 9))
        client = a.socket()
        arrivals: list[float] = []

        async def receive() -> None:
            while True:
                await server.recv(2048)
                arrivals.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            start = trio.current_time()
            while trio.current_time() - start < 12:  # ~1.9 Mbit/s offered
                for _ in range(23):
                    try:
                        client.sendto_nowait(b"x" * 1000, ("10.0.0.2", 9))
                    except OSError:
                        pass  # ENOBUFS: the socket's send buffer is full
                await trio.sleep(0.1)
            await trio.sleep(0.5)
            nursery.cancel_scope.cancel()

        window = [t for t in arrivals if start + 1 <= t < start + 11]
        rate = len(window) * FRAME * 8 / 10
        print(a.tc("-s qdisc show dev eth0"))
        print(f"measured over 10 s: {rate / 1e6:.3f} Mbit/s ({len(window)} datagrams)")
        return {"rate": rate, "stats": a.dev("eth0").qdisc.statistics()}


if __name__ == "__main__":
    netstack.run(main)
