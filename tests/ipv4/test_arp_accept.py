"""``arp_accept``'s modes as ``arp_process`` reads them (net/ipv4/arp.c, arp_accept()):
the larger of ``conf.all`` and the device's, 1 taking any gratuitous sender and 2
(since 6.2) only one in the subnet of an address on the receiving device.
``arp_process`` has the 0 and 1 cases written out (issue 18)."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.ipv4 import ipv4_of
from netstack.ipv4.arp import arp_send
from netstack.wire.arp import ARPOP_REQUEST
from netstack.wire.ethernet import ETH_P_ARP
from netstack.wire.ipv4 import aton

BCAST = b"\xff" * 6
MAC = b"\x02\x00\x00\x00\xaa\x01"


@pytest.mark.parametrize(
    ("all_mode", "dev_mode", "sender", "created"),
    [
        (0, 0, "10.0.0.1", False),
        (0, 1, "10.0.0.1", True),  # the device's, the larger
        (1, 0, "10.0.0.1", True),  # conf.all's, the larger
        (1, 0, "10.9.9.9", True),
        (2, 0, "10.0.0.1", True),  # in eth0's subnet
        (2, 0, "10.9.9.9", False),  # outside it
        (0, 2, "10.9.9.9", False),
        (1, 2, "10.9.9.9", False),  # the larger mode (2) decides
        (3, 0, "10.0.0.1", False),  # any other value: the switch's default, 0
        (0, 7, "10.0.0.1", False),
    ],
)
async def test_a_gratuitous_request_creates_an_entry_as_arp_accept_says(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    all_mode: int,
    dev_mode: int,
    sender: str,
    created: bool,
) -> None:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls={**IPV4_ONLY, "net.ipv4.conf.all.arp_accept": all_mode})
    lab.add_link("a:eth0", "b:eth0")
    b.sysctl(f"net.ipv4.conf.eth0.arp_accept={dev_mode}")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    await trio.sleep(1)
    arp_send(
        ipv4_of(a.net), ARPOP_REQUEST, ETH_P_ARP, aton(sender), a.dev("eth0"),
        aton(sender), BCAST, MAC, None,
    )  # fmt: skip
    await trio.sleep(0.01)
    n = ipv4_of(b.net).arp_tbl.lookup(aton(sender), b.dev("eth0"))
    assert (n is not None and n.ha == MAC) is created
