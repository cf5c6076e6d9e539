"""netem's delay, jitter and loss, seen by ping.

``tc qdisc add dev eth0 root netem delay 100ms 10ms loss 10%`` on a; 200
pings, 50 ms apart: the RTTs spread uniformly over 90-110 ms and about one
probe in ten is lost. The lab's seed fixes netem's random choices: run it
again and you get the same RTTs and the same losses.

python examples/tc_netem_ping.py
"""

from __future__ import annotations

import statistics

import netstack


async def main() -> netstack.PingResult:
    async with netstack.open_lab(seed=1) as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        await a.ping("10.0.0.2")  # resolve ARP first
        a.tc("qdisc add dev eth0 root netem delay 100ms 10ms loss 10%")
        print(a.tc("qdisc show dev eth0"))
        lines: list[str] = []
        result = await a.ping("10.0.0.2", count=200, interval=0.05, output=lines)
        print("\n".join(lines[-3:]))
        rtts = [r * 1000 for r in result.rtts]
        print(
            f"RTT mean {statistics.mean(rtts):.1f} ms, sd {statistics.pstdev(rtts):.2f} ms"
            f" (uniform 90-110 ms: 100, 5.77); lost {result.transmitted - result.received}"
        )
        print(a.tc("-s qdisc show dev eth0"))
        return result


if __name__ == "__main__":
    netstack.run(main)
