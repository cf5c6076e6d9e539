"""``netstack demo``: the default lab, narrated.

Three hosts in virtual time: ``a`` and ``b`` on two subnets joined by router
``r``; ``a``–``r`` is a veth pair, ``r``–``b`` an Ethernet cable at 100 Mbit/s
with 5 ms of propagation delay. The lab is the lab file ``demo.toml`` (also
``examples/demo.toml``): hosts, links and the same ``ip``/``sysctl`` commands
one types on Linux. Then: ARP resolution and pings across the router, a
TTL-1 ping that the router answers with "time exceeded", a UDP echo exchange,
a datagram to a closed port (ICMP port unreachable), and the counters that
recorded it all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import trio

from netstack.host import Host, open_lab, run
from netstack.labs.labfile import build_lab, parse_lab
from netstack.labs.session import Session
from netstack.socket import MSG_DONTWAIT

__all__ = ["DEMO_LAB", "demo"]

DEMO_LAB = Path(__file__).with_name("demo.toml")
"""The demo's lab file (installed with the package; ``examples/demo.toml`` is a copy)."""

TOPOLOGY = """\
  a 10.0.1.1/24 ──veth── 10.0.1.254/24 r 10.0.2.254/24 ──100 Mbit/s, 5 ms── 10.0.2.2/24 b
"""


def _run_ip(out: TextIO, host: Host, command: str) -> None:
    print(f"{host.name}# ip {command}", file=out)
    text = host.ip(command)
    if text:
        print(text.rstrip("\n"), file=out)


async def _demo(out: TextIO, pcap_dir: str | None, seed: int) -> int:
    spec = parse_lab(DEMO_LAB.read_text(encoding="utf-8"), DEMO_LAB)

    def say(text: str) -> None:
        print(text, file=out)

    async with open_lab(seed=seed) as lab, trio.open_nursery() as nursery:
        print("netstack demo: three hosts, one router, virtual time\n", file=out)
        print(TOPOLOGY, file=out)
        session = Session(lab, nursery, out=say, err=say)
        await build_lab(
            spec, lab, session, pcap_dir=pcap_dir, echo=say, captures=pcap_dir is not None
        )
        a, r, b = lab["a"], lab["r"], lab["b"]

        print("\na# ping -c 3 10.0.2.2", file=out)
        lines: list[str] = []
        result = await a.ping("10.0.2.2", count=3, output=lines)
        print("\n".join(lines), file=out)

        print("\na# ping -c 1 -t 1 10.0.2.2      (the router answers: TTL exceeded)", file=out)
        lines = []
        await a.ping("10.0.2.2", count=1, ttl=1, output=lines)
        print("\n".join(lines), file=out)

        print("\nUDP echo: a sends 5 datagrams to b:7, b echoes them back", file=out)
        server = b.socket()
        await server.bind(("0.0.0.0", 7))
        client = a.socket()
        await client.connect(("10.0.2.2", 7))

        async def echo() -> None:
            for _ in range(5):
                data, peer = await server.recvfrom(2048)
                await server.sendto(data, peer)

        echoed = 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(echo)
            for i in range(5):
                msg = f"datagram {i}".encode()
                await client.send(msg)
                if await client.recv(2048) == msg:
                    echoed += 1
        print(f"  sent 5, echoed {echoed}", file=out)

        print("\nA datagram to a closed port: b answers ICMP port unreachable,", file=out)
        print("and the connected socket reports it on its next call.", file=out)
        closed = a.socket()
        await closed.connect(("10.0.2.2", 9999))
        await closed.send(b"anyone?")
        await trio.sleep(0.05)
        try:
            await closed.recv(100, MSG_DONTWAIT)
            print("  no error (unexpected)", file=out)
        except OSError as e:
            print(f"  recv: [Errno {e.errno}] {e.strerror}", file=out)

        print("", file=out)
        _run_ip(out, a, "neigh show")
        _run_ip(out, r, "-s link show eth1")
        print("\nCounters (nstat-style, non-zero):", file=out)
        for host in (a, r, b):
            counters = host.nstat()
            shown = {
                k: v
                for k, v in counters.items()
                if k.startswith(("IpIn", "IpOut", "IpForw", "IcmpIn", "IcmpOut", "Udp"))
            }
            print(f"  {host.name}: " + ", ".join(f"{k}={v}" for k, v in shown.items()), file=out)
        drops = {h.name: h.drops() for h in (a, r, b)}
        print(
            "Drops by reason: " + (", ".join(f"{n}: {d}" for n, d in drops.items() if d) or "none"),
            file=out,
        )
        print(f"\nVirtual time elapsed: {trio.current_time():.3f} s", file=out)
        ok = result.received == 3 and echoed == 5
        print("demo " + ("OK" if ok else "FAILED"), file=out)
        nursery.cancel_scope.cancel()
        return 0 if ok else 1


def demo(*, pcap_dir: str | None = None, seed: int = 0, out: TextIO) -> int:
    """Run the demo lab, printing what happens to *out*; 0 if everything worked."""
    return run(_demo, out, pcap_dir, seed)
