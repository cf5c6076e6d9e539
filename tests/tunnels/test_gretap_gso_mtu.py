"""A GSO skb on a gretap bridged over a link with a smaller MTU.

Two switches bridge a host's port with a gretap over a 1500-byte NIC link
(the kernel's own example in ``ip_finish_output_gso``: "Arriving GRO skb (or
GSO skb in a virtualized environment) that is bridged to a NETIF_F_TSO
tunnel stacked over an interface with an insufficient MTU"). The hosts'
1500-byte segments plus Ethernet, GRE and the outer IPv4 header do not fit
the link, and gretap (``GRE_FEATURES``) takes TCP's GSO skbs whole. The
kernel segments such an skb in software at the outer IP layer and sends each
segment through ``ip_fragment``: with the tunnel's default ``pmtudisc`` (DF
on the outer header) every segment is refused (``FragFails``, an ICMP
Fragmentation Needed to the switch itself, which the hosts behind the bridge
never see); with ``nopmtudisc`` and a sender that sets no DF either
(``ip_tunnel_xmit`` copies the inner header's DF to the outer one, a
bridged frame's included) it is fragmented. Either way no frame longer
than the link's MTU leaves the switch (before the fix, 1,552-byte frames did).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY, stream_transfer

import netstack
from netstack.socket import AF_INET


def switched_gretap(lab: netstack.Lab, pmtudisc: str) -> tuple[netstack.Host, ...]:
    h1, s1, s2, h2 = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("h1", "s1", "s2", "h2"))
    lab.add_link("h1:eth0", "s1:p0")
    lab.add_link("s1:u0", "s2:u0", kind="nic")
    lab.add_link("h2:eth0", "s2:p0")
    for s, local, remote in ((s1, "192.0.2.1", "192.0.2.2"), (s2, "192.0.2.2", "192.0.2.1")):
        s.ip(f"addr add {local}/24 dev u0")
        s.ip(f"link add gt0 type gretap local {local} remote {remote} {pmtudisc}".rstrip())
        s.ip("link add br0 type bridge")
        s.ip("link set gt0 master br0")
        s.ip("link set p0 master br0")
        for d in ("gt0", "p0", "br0"):
            s.ip(f"link set {d} up")
    if pmtudisc:  # nor from the inner header: ip_tunnel_xmit copies its DF
        h1.sysctl("net.ipv4.ip_no_pmtu_disc=1")
    h1.ip("addr add 10.5.0.1/24 dev eth0")
    h2.ip("addr add 10.5.0.2/24 dev eth0")
    return h1, s1, s2, h2


@pytest.mark.parametrize("pmtudisc", ["", "nopmtudisc"], ids=["df-refused", "fragmented"])
async def test_no_frame_longer_than_the_mtu_leaves(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, pmtudisc: str
) -> None:
    h1, s1, _s2, h2 = switched_gretap(lab, pmtudisc)
    await trio.sleep(2)  # the bridges' ports forward
    wire = s1.capture("u0")
    payload = bytes(range(256)) * 256  # 64 KB
    got = b""
    with trio.move_on_after(20):
        got, _ = await stream_transfer(h1, h2, AF_INET, "10.5.0.2", 80, payload)
    frames = [len(data) for _, data, outgoing in wire.frames if outgoing]
    assert frames and max(frames) <= 1514
    snmp = s1.nstat()
    if pmtudisc:
        assert got == payload
        assert snmp.get("IpFragCreates", 0) > 0 and snmp.get("IpFragFails", 0) == 0
    else:
        assert snmp["IpFragFails"] > 0
        assert snmp["IcmpOutDestUnreachs"] == snmp["IpFragFails"]
        assert s1.drops()["PKT_TOO_BIG"] >= snmp["IpFragFails"]
