"""fq_codel keeps a ping's latency low next to a bulk flow; a pfifo does not.

The sender shapes its link to 2 Mbit/s with tbf and puts a leaf qdisc under
it (``tc qdisc add dev eth0 parent 1:1 …``), the usual shaper + AQM set-up.
Four UDP sockets flood it at 2.7 Mbit/s while a ping sends one probe every
200 ms. Under ``pfifo limit 100`` the probe waits behind the whole standing
queue (100 × 1042 B at 2 Mbit/s ≈ 417 ms); under ``fq_codel`` the ping is a
sparse flow, served first, and waits at most for the bulk packet already
leaving the shaper (≈ 4 ms) — while CoDel keeps the bulk flows' own queue
near its 5 ms target.

python examples/tc_fq_codel_vs_pfifo.py
"""

from __future__ import annotations

import trio

import netstack


async def ping_under_load(leaf: str) -> list[float]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        a.tc("qdisc add dev eth0 root handle 1: tbf rate 2mbit burst 3000 latency 2s")
        a.tc(f"qdisc add dev eth0 parent 1:1 handle 10: {leaf}")
        await a.ping("10.0.0.2")
        server = b.socket()
        await server.bind(("0.0.0.0", 9))
        socks = [a.socket() for _ in range(4)]  # one socket's sndbuf holds < 100 packets

        async def drain() -> None:
            while True:
                await server.recv(2048)

        async def flood() -> None:
            while True:
                for sock in socks:
                    for _ in range(4):
                        try:
                            sock.sendto_nowait(b"x" * 1000, ("10.0.0.2", 9))
                        except OSError:
                            pass
                await trio.sleep(0.05)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain)
            nursery.start_soon(flood)
            await trio.sleep(1.525)  # let the queue build; probe between bursts
            result = await a.ping("10.0.0.2", count=10, interval=0.2, timeout=2)
            nursery.cancel_scope.cancel()
        print(a.tc("-s qdisc show dev eth0"))
        rtts = [r * 1000 for r in result.rtts]
        print(
            f"{leaf}: ping RTT min/avg/max {min(rtts):.1f}/{sum(rtts) / len(rtts):.1f}/"
            f"{max(rtts):.1f} ms, {result.received}/{result.transmitted} received\n"
        )
        return rtts


async def main() -> dict[str, list[float]]:
    return {leaf: await ping_under_load(leaf) for leaf in ("fq_codel", "pfifo limit 100")}


if __name__ == "__main__":
    netstack.run(main)
