"""A received datagram with IP options goes through ip_rcv_options (issue 18).

``ip_rcv_finish`` tests the first header byte against 0x45 (version 4, no
options) to skip the options; these datagrams carry some: padding only
(delivered) and a loose source route (dropped, ``accept_source_route`` is 0).
"""

from __future__ import annotations

import dpkt
import trio
import trio.testing

from netstack.testing.builders import add_addr, nstat, open_test_lab

PEER_MAC = bytes.fromhex("020000000099")


def frame(dst_mac: bytes, options: bytes, payload: bytes) -> bytes:
    udp = dpkt.udp.UDP(sport=40000, dport=9000, data=payload)
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(
        src=bytes([10, 0, 0, 9]), dst=bytes([10, 0, 0, 2]), p=17, ttl=64, opts=options, data=udp
    )
    ip.hl = 5 + len(options) // 4
    ip.len = len(ip)
    raw = bytes(ip)  # dpkt fills both checksums (UDP over the pseudo-header)
    assert raw[0] == 0x40 | (5 + len(options) // 4)
    return bytes(dpkt.ethernet.Ethernet(dst=dst_mac, src=PEER_MAC, type=0x0800, data=raw))


async def test_options_are_parsed_and_source_routes_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_test_lab() as lab:
        b = lab.add_host("b", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
        port = lab.add_port("b:eth0")
        add_addr(b, "eth0", "10.0.0.2/24")
        b.ip("neigh add 10.0.0.9 lladdr 02:00:00:00:00:99 dev eth0")
        sock = b.socket()
        await sock.bind(("0.0.0.0", 9000))
        mac = b.dev("eth0").dev_addr
        # NOP, NOP, NOP, EOL: IHL 6, nothing to refuse
        await port.send(frame(mac, b"\x01\x01\x01\x00", b"padded"))
        with trio.fail_after(1):
            assert await sock.recvfrom(100) == (b"padded", ("10.0.0.9", 40000))
        # LSRR via 10.0.0.2 (length 7, pointer 4), then EOL
        await port.send(frame(mac, b"\x83\x07\x04\x0a\x00\x00\x02\x00", b"routed"))
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
        b = lab.add_host("b", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
        port = lab.add_port("b:eth0")
        add_addr(b, "eth0", "10.0.0.2/24")
        b.ip("neigh add 10.0.0.9 lladdr 02:00:00:00:00:99 dev eth0")
        sock = b.socket()
        await sock.bind(("0.0.0.0", 9000))
        mac = b.dev("eth0").dev_addr
        for options in (b"", b"\x01\x01\x01\x00"):
            good = frame(mac, options, b"good")
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
