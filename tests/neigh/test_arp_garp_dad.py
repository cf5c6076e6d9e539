"""The ARP packets whose hardware addresses arp_process reads (net/ipv4/arp.c).

A gratuitous request (sender = target) heard with ``arp_accept`` 1 creates the
sender's entry with the packet's sender hardware address; a duplicate
address probe (sender 0.0.0.0) for a host's address is answered to the
prober's hardware address. With ``arp_accept`` 0 the gratuitous request
creates nothing.
"""

from __future__ import annotations

import dpkt
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.neigh.nud import NUD_STALE
from netstack.wire.arp import ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton

BCAST = b"\xff" * 6
MAC = b"\x02\x00\x00\x00\xaa\x01"


async def _pair(lab: netstack.Lab, accept: int) -> tuple[netstack.Host, netstack.Host]:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls={**IPV4_ONLY, "net.ipv4.conf.all.arp_accept": accept})
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    await trio.sleep(1)
    return a, b


def _request(a: netstack.Host, sip: str, tip: str, sha: bytes) -> None:
    arp_send(
        ipv4_of(a.net), ARPOP_REQUEST, ETH_P_ARP, aton(tip), a.dev("eth0"),
        aton(sip), BCAST, sha, None,
    )  # fmt: skip


async def test_a_gratuitous_request_creates_the_senders_entry_with_arp_accept(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = await _pair(lab, 1)
    _request(a, "10.0.0.1", "10.0.0.1", MAC)
    await trio.sleep(0.01)
    n = ipv4_of(b.net).arp_tbl.lookup(aton("10.0.0.1"), b.dev("eth0"))
    assert n is not None and n.nud_state == NUD_STALE and n.ha == MAC


async def test_a_gratuitous_request_creates_nothing_without_arp_accept(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = await _pair(lab, 0)
    _request(a, "10.0.0.1", "10.0.0.1", MAC)
    await trio.sleep(0.01)
    assert ipv4_of(b.net).arp_tbl.lookup(aton("10.0.0.1"), b.dev("eth0")) is None


async def test_a_duplicate_address_probe_is_answered_to_the_probers_address(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = await _pair(lab, 0)
    cap = a.capture("eth0")
    _request(a, "0.0.0.0", "10.0.0.2", MAC)
    await trio.sleep(0.01)
    replies = [
        dpkt.ethernet.Ethernet(frame)
        for _, frame, outgoing in cap.frames
        if not outgoing and dpkt.ethernet.Ethernet(frame).type == ETH_P_ARP
    ]
    assert len(replies) == 1
    eth = replies[0]
    arp = eth.data
    assert eth.dst == MAC and arp.op == dpkt.arp.ARP_OP_REPLY
    assert arp.tha == MAC and arp.sha == bytes(b.dev("eth0").dev_addr)
    assert arp.spa == bytes([10, 0, 0, 2]) and arp.tpa == bytes(4)
    assert ipv4_of(b.net).arp_tbl.lookup(aton("0.0.0.0"), b.dev("eth0")) is None
