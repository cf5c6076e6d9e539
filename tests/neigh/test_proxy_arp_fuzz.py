"""Fuzzed ARP into a proxying router: every reply is a well-formed proxy reply.

A router with ``proxy_arp=1`` on ``ra`` (a :class:`~netstack.host.port.Port`),
forwarding on, a pneigh entry, and a small ``proxy_qlen``, hears random ARP
frames (any op, addresses near and far, broadcast or to its MAC, short or
long). Whatever it sends back on ``ra`` is a reply from ``ra``'s MAC for the
address a request asked about, to that request's sender; a delayed reply
comes less than ``proxy_delay`` after its request; there are no more replies
than requests; and at the end the proxy queue is empty, its length back to 0.
"""

from __future__ import annotations

import struct

import dpkt
import trio
from helpers import IPV4_ONLY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import open_lab
from netstack.ipv4 import ipv4_of
from netstack.wire.ipv4 import aton

PEER_MAC = bytes.fromhex("02000000000a")
BCAST = b"\xff" * 6
TARGETS = ["10.0.2.1", "10.0.2.9", "10.0.1.254", "10.0.1.9", "10.0.3.1", "224.0.0.1", "0.0.0.0"]
SENDERS = ["10.0.1.1", "10.0.1.2", "10.0.2.5", "0.0.0.0", "127.0.0.1"]

frames = st.lists(
    st.tuples(
        st.sampled_from([1, 1, 1, 2, 3]),  # op
        st.sampled_from(SENDERS),
        st.sampled_from(TARGETS),
        st.booleans(),  # to ra's MAC (PACKET_HOST) or broadcast
        st.integers(0, 30),  # milliseconds before the next frame
        st.sampled_from([0, 0, 0, 4, 18]),  # trailing bytes
    ),
    min_size=1,
    max_size=12,
)


def arp(op: int, sha: bytes, spa: str, tha: bytes, tpa: str) -> bytes:
    return (
        struct.pack("!HHBBH", 1, 0x0800, 6, 4, op)
        + sha + aton(spa).to_bytes(4, "big") + tha + aton(tpa).to_bytes(4, "big")
    )  # fmt: skip


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(specs=frames, proxy_delay=st.sampled_from([0, 5, 80]))
def test_proxy_arp_replies_survive_fuzzed_requests(
    specs: list[tuple[int, str, str, bool, int, int]], proxy_delay: int
) -> None:
    async def main() -> None:
        async with open_lab(seed=1, debug_skb=True) as lab:
            r = lab.add_host("r", sysctls=IPV4_ONLY)
            b = lab.add_host("b", sysctls=IPV4_ONLY)
            port = lab.add_port("r:ra")
            lab.add_link("b:eth0", "r:rb")
            r.ip("addr add 10.0.1.254/24 dev ra")
            r.ip("addr add 10.0.2.254/24 dev rb")
            b.ip("addr add 10.0.2.1/24 dev eth0")
            r.sysctl("net.ipv4.ip_forward=1")
            r.sysctl("net.ipv4.conf.ra.proxy_arp=1")
            r.sysctl(f"net.ipv4.neigh.ra.proxy_delay={proxy_delay}")
            r.sysctl("net.ipv4.neigh.ra.proxy_qlen=2")
            r.ip("neigh add proxy 10.0.3.1 dev ra")
            await trio.sleep(1)
            port.drain()
            cap = r.capture("ra")
            ra_mac = r.dev("ra").dev_addr
            hz = r.net.clock.hz
            delay = ipv4_of(r.net).arp_tbl.parms_for(r.dev("ra")).proxy_delay  # jiffies
            assert delay == proxy_delay * hz // 100  # the sysctl is in USER_HZ
            asked: dict[bytes, list[float]] = {}  # target -> its requests' times
            requests = 0
            for op, spa, tpa, to_us, gap, extra in specs:
                dst = ra_mac if to_us else BCAST
                body = arp(op, PEER_MAC, spa, bytes(6), tpa) + bytes(extra)
                if op == 1:
                    requests += 1
                    asked.setdefault(aton(tpa).to_bytes(4, "big"), []).append(trio.current_time())
                await port.send(dst + PEER_MAC + b"\x08\x06" + body)
                await trio.sleep(gap / 1000)
            await trio.sleep(2)
            n_replies = 0
            for ts, f, outgoing in cap.frames:
                eth = dpkt.ethernet.Ethernet(f)
                if not outgoing or eth.type != 0x0806 or eth.data.op != 2:
                    continue  # (the router's own requests, for senders it answers)
                rep = eth.data
                n_replies += 1
                assert eth.src == ra_mac and rep.sha == ra_mac
                assert eth.dst == PEER_MAC and rep.tha == PEER_MAC
                # within proxy_delay of a request for that address (at once with 0)
                assert any(0 <= ts - t < max(delay, 1) / hz for t in asked[rep.spa]), (
                    ts,
                    asked[rep.spa],
                )
            assert n_replies <= requests
            tbl = ipv4_of(r.net).arp_tbl
            assert not tbl.proxy_queue
            assert all(v == 0 for v in (tbl.proxy_qlen or {}).values())

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
