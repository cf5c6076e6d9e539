"""IPv4 in IPv4 (IPIP): the smallest tunnel, and why LLTX matters for it.

    a 192.0.2.1 ═══ ipip1 ═══ b 192.0.2.2
      10.10.0.1/30            10.10.0.2/30

``ipip_tunnel_setup`` marks every IPIP device lockless (NETIF_F_LLTX), so
``dev_queue_xmit`` never takes its tx queue lock; ``ethtool -k`` says
``tx-lockless: on [fixed]``. The 2.6.3x sysfs ``features`` word read 0x7000
for an IPIP device (seed 3); since 3.10 IPIP devices also have
``IPIP_FEATURES`` (SG, checksums, GSO), so it reads 0x1b7869 here, the LLTX
bit 0x1000 included. The outer header is 20 bytes, so the tunnel's MTU is 1480.

    python examples/ipip.py
"""

from __future__ import annotations

import netstack


async def main() -> dict[str, object]:
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 192.0.2.1/24 dev eth0")
        b.ip("addr add 192.0.2.2/24 dev eth0")
        a.ip("link add ipip1 type ipip remote 192.0.2.2 local 192.0.2.1")
        b.ip("tunnel add ipip1 mode ipip remote 192.0.2.1 local 192.0.2.2")
        for h, addr in ((a, "10.10.0.1/30"), (b, "10.10.0.2/30")):
            h.ip("link set ipip1 up")
            h.ip(f"addr add {addr} dev ipip1")
        print(a.ip("link show ipip1"))
        print(b.ip("tunnel show"))

        out: list[str] = []
        ping = await a.ping("10.10.0.2", count=3, size=1452, output=out)
        print("\n".join(out))

        lock = a.dev("ipip1").tx_queues[0]._xmit_lock
        lockless = [ln for ln in a.ethtool("-k ipip1").splitlines() if "lockless" in ln]
        features = a.sysfs("class/net/ipip1/features").strip()
        print(f"\n{lockless[0]}; /sys/class/net/ipip1/features = {features}")
        print(f"_xmit_lock acquisitions on ipip1: {lock.acquisitions}")
        print(a.ip("-s link show ipip1"))
        return {"ping": ping, "lock": lock.acquisitions, "features": features}


if __name__ == "__main__":
    netstack.run(main)
