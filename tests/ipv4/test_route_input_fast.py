"""The fast tests of the receive path (issue 18, sixth round) decide as the long ones.

``ip_route_input_noref`` passes a source and a destination whose first octets
none of the martian checks looks at with one table lookup; ``ip_rcv`` sums a
20-byte header's fields for ``ip_fast_csum`` instead of the header read as one
int. These pin the boundaries of both.
"""

from __future__ import annotations

import errno

import trio
import trio.testing
from helpers import receiver_behind_a_port, udp_frame_from_peer

from netstack.core.dst import skb_dst_drop
from netstack.core.skbuff import SkBuff
from netstack.host import Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.route import Rtable, ip_route_input_noref
from netstack.testing.builders import add_addr, nstat, open_test_lab
from netstack.wire.ipv4 import aton
from netstack.wire.rtnetlink import RTN_BROADCAST, RTN_LOCAL, RTN_UNREACHABLE

EINVAL = -errno.EINVAL

# (source, destination, what ip_route_input_noref answers on eth0 of 10.0.0.2/24,
# no default route, not forwarding): -EINVAL, or the route type it sets
CASES = [
    ("10.0.0.9", "10.0.0.2", RTN_LOCAL),
    ("1.0.0.9", "10.0.0.2", RTN_LOCAL),
    ("126.255.0.9", "10.0.0.2", RTN_LOCAL),
    ("128.0.0.9", "10.0.0.2", RTN_LOCAL),
    ("223.255.255.9", "10.0.0.2", RTN_LOCAL),
    ("0.0.0.9", "10.0.0.2", EINVAL),  # source in 0/8
    ("127.0.0.1", "10.0.0.2", EINVAL),  # loopback source off lo
    ("224.0.0.9", "10.0.0.2", EINVAL),  # multicast source
    ("239.255.255.9", "10.0.0.2", EINVAL),
    ("255.255.255.255", "10.0.0.2", EINVAL),  # limited broadcast source
    ("240.0.0.9", "10.0.0.2", RTN_LOCAL),  # class E source: no check of its own
    ("10.0.0.9", "0.1.2.3", EINVAL),  # destination in 0/8
    ("10.0.0.9", "127.0.0.1", EINVAL),  # loopback destination off lo
    ("10.0.0.9", "224.0.0.99", EINVAL),  # a group not joined
    ("10.0.0.9", "255.255.255.255", RTN_BROADCAST),
    ("0.0.0.0", "255.255.255.255", RTN_BROADCAST),  # DHCP
    ("10.0.0.9", "240.0.0.1", RTN_UNREACHABLE),  # class E: no route, not a martian
    ("10.0.0.9", "223.0.0.1", RTN_UNREACHABLE),
    ("10.0.0.9", "128.0.0.1", RTN_UNREACHABLE),
]


async def test_martian_checks_at_the_first_octet_boundaries(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = lab.add_host("h", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
    lab.add_port("h:eth0")
    add_addr(h, "eth0", "10.0.0.2/24")
    ipv4 = ipv4_of(h.net)
    dev = h.dev("eth0")
    for src, dst, want in CASES:
        skb = SkBuff(bytearray(64), 0, 64)
        skb.protocol = 0x0800
        err = ip_route_input_noref(ipv4, skb, aton(dst), aton(src), 0, dev)
        if want == EINVAL:
            assert err == EINVAL and skb.dst is None, (src, dst)
        else:
            rt = skb.dst
            assert err == 0 and isinstance(rt, Rtable) and rt.rt_type == want, (src, dst, err)
            refcnt, noref = rt.refcnt, skb.dst_noref
            skb_dst_drop(skb)  # a cached route was set without a reference: none to put
            assert rt.refcnt == (refcnt if noref else refcnt - 1) >= 0, (src, dst)


async def test_a_flipped_bit_in_any_field_of_a_20_byte_header_fails_its_checksum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """ip_rcv sums the header field by field: one bit flipped anywhere past the
    version byte (TOS, length, ID, fragment word, TTL, protocol, checksum, either
    address; low and high bits) is IP_CSUM, and the good header still passes."""
    async with open_test_lab() as lab:
        b, port, sock = await receiver_behind_a_port(lab)
        good = udp_frame_from_peer(b.dev("eth0").dev_addr, b"good", tos=0x2C)
        flipped = 0
        for i in range(1, 20):
            for bit in (0x01, 0x80):
                bad = bytearray(good)
                bad[14 + i] ^= bit
                await port.send(bytes(bad))
                flipped += 1
        await port.send(good)
        with trio.fail_after(1):
            assert await sock.recvfrom(100) == (b"good", ("10.0.0.9", 40000))
        await trio.sleep(0.1)
        assert b.drops() == {"IP_CSUM": flipped}
        assert nstat(b, "IpExtInCsumErrors") == flipped
        assert nstat(b, "IpInDelivers") == 1
