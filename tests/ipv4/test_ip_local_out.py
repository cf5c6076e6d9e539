"""ip_local_out finishes a header: its total length and its checksum, with or without options."""

from __future__ import annotations

import struct

import trio
import trio.testing

from netstack.core.skbuff import SkBuff
from netstack.host import Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.ip_output import ip_local_out
from netstack.ipv4.route import Flowi4, Rtable
from netstack.wire.checksum import ip_fast_csum
from netstack.wire.ipv4 import aton


async def test_total_length_and_checksum_of_headers_of_20_and_24_bytes(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    await a.ping("192.0.2.2", count=1)
    ipv4 = ipv4_of(a.net)
    for ihl in (5, 6, 5):
        hlen = ihl * 4
        rt = ipv4.ip_route_output_key(Flowi4(aton("192.0.2.2"), 0))
        assert isinstance(rt, Rtable)
        nh = 64
        buf = bytearray(nh + hlen + 12)
        # a stale total length and checksum, which ip_local_out overwrites; options NOP
        struct.pack_into(
            "!BBHHHBBHII", buf, nh, 0x40 | ihl, 0x10, 0xABCD, 0x1234, 0x4000, 64, 253,
            0x5A5A, aton("192.0.2.1"), aton("192.0.2.2"),
        )  # fmt: skip
        buf[nh + 20 : nh + hlen] = b"\x01" * (hlen - 20)
        skb = SkBuff(buf, nh, len(buf))
        skb.network_header = nh
        skb.dst = rt
        ip_local_out(ipv4, skb)
        assert struct.unpack_from("!H", buf, nh + 2)[0] == hlen + 12
        assert ip_fast_csum(buf, nh, hlen) == 0  # a valid header: the checksum right
        assert buf[nh + 4 : nh + 10] == b"\x12\x34\x40\x00\x40\xfd"  # the rest untouched
        await trio.sleep(0.01)


async def test_a_packet_over_64k_gets_a_total_length_of_0(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    """iph_set_totlen() (include/linux/ip.h, 6.3+, for BIG TCP): a length over
    IP_MAX_MTU is written as 0, and nothing spills into the TOS byte."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    await a.ping("192.0.2.2", count=1)
    ipv4 = ipv4_of(a.net)
    rt = ipv4.ip_route_output_key(Flowi4(aton("192.0.2.2"), 0))
    assert isinstance(rt, Rtable)
    nh = 64
    buf = bytearray(nh + 70_000)
    struct.pack_into(
        "!BBHHHBBHII", buf, nh, 0x45, 0x10, 0, 0x1234, 0x4000, 64, 253, 0,
        aton("192.0.2.1"), aton("192.0.2.2"),
    )  # fmt: skip
    skb = SkBuff(buf, nh, len(buf))
    skb.network_header = nh
    skb.dst = rt
    ip_local_out(ipv4, skb)
    assert buf[nh + 1] == 0x10  # the TOS untouched
    assert struct.unpack_from("!H", buf, nh + 2)[0] == 0
    assert ip_fast_csum(buf, nh, 20) == 0
