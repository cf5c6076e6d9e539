"""Small helpers shared by the tests (importable as ``helpers``: tests/ is on pythonpath)."""

from __future__ import annotations

import netstack
from netstack.core.netdevice import NetDevice
from netstack.core.skbuff import SkBuff, alloc_skb
from netstack.ipv4 import ipv4_of
from netstack.wire import ethernet as eth
from netstack.wire import ipv4, udp
from netstack.wire.ethernet import ETH_HLEN, ETH_P_IP
from netstack.wire.ipv4 import aton


def add_addr(host: netstack.Host, dev: str, cidr: str) -> None:
    """``ip addr add CIDR dev DEV`` through the kernel API."""
    addr, _, plen = cidr.partition("/")
    ipv4_of(host.net).add_address(host.dev(dev), aton(addr), int(plen or 32))


def udp_skb(
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    sport: int = 1000,
    dport: int = 9,
    payload: int = 100,
    *,
    tos: int = 0,
    priority: int = 0,
    dev: NetDevice | None = None,
) -> SkBuff:
    """An Ethernet/IPv4/UDP frame as a qdisc sees it (``data`` at the MAC header).

    The IP header carries a valid checksum, so ECN marking can be checked
    against it; the UDP checksum is left 0 (none).
    """
    ip_len = 20 + 8 + payload
    skb = alloc_skb(ETH_HLEN + ip_len, headroom=32)
    skb.put(ETH_HLEN + ip_len)
    skb.reset_mac_header()
    eth.pack_into(skb.buf, skb.data, eth.EthHdr(b"\x02" * 6, b"\x04" * 6, ETH_P_IP))
    nh = skb.data + ETH_HLEN
    skb.network_header = nh
    skb.transport_header = nh + 20
    hdr = ipv4.IpHdr(4, 5, tos, ip_len, 1, 0, 64, 17, 0, aton(src), aton(dst))
    ipv4.pack_into(skb.buf, nh, hdr, fill_check=True)
    udp.pack_into(skb.buf, nh + 20, udp.UdpHdr(sport, dport, 8 + payload, 0))
    skb.protocol = ETH_P_IP
    skb.priority = priority
    skb.dev = dev  # whose Net counts the drop reasons
    return skb


def dummy_host(lab: netstack.Lab, name: str = "h") -> netstack.Host:
    """A host with ``dummy0`` left down: a qdisc grafted on it sits still, so a
    test can enqueue and dequeue by hand (nothing transmits behind its back)."""
    host = lab.add_host(name)
    host.ip("link add dummy0 type dummy")
    return host
