"""Fuzz the dual-stack UDP receive path: IPv4 datagrams read from an AF_INET6 socket.

Host ``b`` (10.0.0.2/24) has one AF_INET6 UDP socket bound to ``::`` (not
v6-only) and nothing else on the port; its ``eth0`` ends in a :class:`Port`, so
the test writes raw IPv4/UDP frames into it. Hypothesis varies the payload, the
source port, the UDP checksum (valid, zero = none, wrong), the UDP length field
(exact, too long, too short), trailing link padding and the NIC's receive
checksum mode. For every frame: nothing escapes the stack, and the datagram is
either read from the socket — its data and a ``::ffff:10.0.0.1`` source, only
if its checksum was valid or absent — or counted as an IPv4 UDP error
(``UdpInErrors``/``UdpInCsumErrors``, the IPv4 MIB as ``udpv6_recvmsg`` uses
for IPv4 datagrams), never lost silently.
"""

from __future__ import annotations

import struct
from typing import Any, Final

import dpkt
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import open_lab, run
from netstack.socket import AF_INET6, SOCK_DGRAM
from netstack.wire.ipv4 import aton

FUZZ: Final = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HOST_IP: Final = "10.0.0.2"
PEER_IP: Final = "10.0.0.1"
PEER_MAC: Final = bytes.fromhex("020000000001")
PORT: Final = 5000

datagram = st.fixed_dictionaries(
    {
        "payload": st.binary(max_size=300),
        "sport": st.integers(1, 65535),
        "csum": st.sampled_from(["good", "good", "zero", "bad"]),
        "ulen": st.sampled_from(["exact", "exact", "exact", "long", "short"]),
        "pad": st.binary(max_size=8),
    }
)


def udp_frame(dst_mac: bytes, d: dict[str, Any]) -> bytes:
    payload = d["payload"]
    ulen = 8 + len(payload)
    if d["ulen"] == "long":
        ulen += 4
    elif d["ulen"] == "short":
        ulen = max(ulen - 4, 0)
    src, dst = aton(PEER_IP).to_bytes(4, "big"), aton(HOST_IP).to_bytes(4, "big")
    seg = bytearray(struct.pack("!HHHH", d["sport"], PORT, ulen & 0xFFFF, 0) + payload)
    if d["csum"] != "zero":
        pseudo = src + dst + struct.pack("!BBH", 0, 17, len(seg))
        c = dpkt.in_cksum(pseudo + bytes(seg)) or 0xFFFF
        if d["csum"] == "bad":
            c ^= 0x0101
        struct.pack_into("!H", seg, 6, c)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(seg), 1, 0, 64, 17, 0, src, dst))
    struct.pack_into("!H", ip, 10, dpkt.in_cksum(bytes(ip)))
    pad: bytes = d["pad"]
    return dst_mac + PEER_MAC + b"\x08\x00" + bytes(ip) + bytes(seg) + pad


def run_fuzz(rx_csum: str, datagrams: list[dict[str, Any]]) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            b = lab.add_host("b")
            port = lab.add_port("b:eth0", rx_csum=rx_csum)  # type: ignore[arg-type]
            b.ip(f"addr add {HOST_IP}/24 dev eth0")
            b.ip(f"neigh add {PEER_IP} lladdr 02:00:00:00:00:01 dev eth0")
            sock = b.socket(AF_INET6, SOCK_DGRAM)
            await sock.bind(("::", PORT))
            mac = b.dev("eth0").dev_addr
            await trio.sleep(1.0)
            port.drain()
            for d in datagrams:
                before = b.nstat()
                await port.send(udp_frame(mac, d))
                await trio.sleep(0.001)
                got = []
                while True:
                    try:
                        got.append(sock.recvfrom_nowait(65536))
                    except BlockingIOError:
                        break
                after = b.nstat()
                delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
                if got:
                    ((data, addr),) = got
                    assert addr == ("::ffff:10.0.0.1", d["sport"], 0, 0)
                    assert d["payload"].startswith(data) and d["csum"] != "bad"
                    assert delta.get("UdpInDatagrams", 0) == 1
                    assert delta.get("Udp6InDatagrams", 0) == 0
                else:  # dropped, and counted where IPv4 UDP drops are counted
                    assert delta.get("UdpInErrors", 0) == 1, (d, delta)
                    assert d["csum"] == "bad" or d["ulen"] != "exact", (d, delta)

    run(main)


@FUZZ
@given(
    rx_csum=st.sampled_from(["unnecessary", "complete", "none"]),
    datagrams=st.lists(datagram, min_size=1, max_size=6),
)
def test_fuzz_dual_stack_udp_receive(rx_csum: str, datagrams: list[dict[str, Any]]) -> None:
    run_fuzz(rx_csum, datagrams)
