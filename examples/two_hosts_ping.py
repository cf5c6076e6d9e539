"""Two hosts on a veth pair ping each other.

python examples/two_hosts_ping.py
"""

from __future__ import annotations

import netstack


async def main() -> netstack.PingResult:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        lines: list[str] = []
        result = await a.ping("10.0.0.2", count=3, output=lines)
        print("\n".join(lines))
        print()
        print(a.ip("neigh show"))
        return result


if __name__ == "__main__":
    netstack.run(main)
