"""A received datagram with IP options goes through ip_rcv_options (issue 18).

``ip_rcv_finish`` tests the first header byte against 0x45 (version 4, no
options) to skip the options; these datagrams carry some: padding only
(delivered) and a loose source route (dropped, ``accept_source_route`` is 0).
"""

from __future__ import annotations

import trio
import trio.testing
from helpers import receiver_behind_a_port, udp_frame_from_peer

from netstack.testing.builders import nstat, open_test_lab


async def test_options_are_parsed_and_source_routes_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        b, port, sock = await receiver_behind_a_port(lab)
        mac = b.dev("eth0").dev_addr
        # NOP, NOP, NOP, EOL: IHL 6, nothing to refuse
        await port.send(udp_frame_from_peer(mac, b"padded", b"\x01\x01\x01\x00"))
        with trio.fail_after(1):
            assert await sock.recvfrom(100) == (b"padded", ("10.0.0.9", 40000))
        # LSRR via 10.0.0.2 (length 7, pointer 4), then EOL
        await port.send(udp_frame_from_peer(mac, b"routed", b"\x83\x07\x04\x0a\x00\x00\x02\x00"))
        await trio.sleep(0.1)
        assert b.drops() == {"IP_INHDR": 1}
        assert nstat(b, "IpInReceives") == 2
        assert nstat(b, "UdpInDatagrams") == 1
        assert nstat(b, "IpInDelivers") == 1


async def test_header_checksum_checked_inline_with_and_without_options(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """ip_rcv checks the header checksum inline (ip_fast_csum, a static inline): a
    20-byte header and one with options, each good (delivered) and with one bit of
    its checksum flipped (IP_CSUM, IpExtInCsumErrors)."""
    async with open_test_lab() as lab:
        b, port, sock = await receiver_behind_a_port(lab)
        mac = b.dev("eth0").dev_addr
        for options in (b"", b"\x01\x01\x01\x00"):
            good = udp_frame_from_peer(mac, b"good", options)
            bad = bytearray(good)
            bad[14 + 11] ^= 0x01  # the checksum's low bit
            await port.send(bytes(bad))
            await port.send(good)
            with trio.fail_after(1):
                assert await sock.recvfrom(100) == (b"good", ("10.0.0.9", 40000))
        await trio.sleep(0.1)
        assert b.drops() == {"IP_CSUM": 2}
        assert nstat(b, "IpExtInCsumErrors") == 2
        assert nstat(b, "IpInHdrErrors") == 2
        assert nstat(b, "UdpInDatagrams") == 2
