"""Fuzzed Neighbour Solicitations into a proxying router: every NA is a proxy's.

A router with ``proxy_ndp`` on ``ra`` (a :class:`~netstack.host.port.Port`),
forwarding on, proxy entries for 2001:db8:1::b (plain) and 2001:db8:1::c
(``router``), and a small ``proxy_qlen``, hears random NS frames: targets
proxied, its own, unknown, link-local or multicast; sources global, ::
(DAD) or multicast; to the solicited-node group, to the target itself at
its MAC, or to all-nodes; with or without the source link-layer option; hop
limit 255 or not. Whatever it sends back on ``ra`` is an NA from ``ra``'s
MAC for an address some NS asked about: for a proxied one with the override
flag clear and the router flag of its entry, solicited unless it answers a
DAD probe (then to all-nodes); no later than ``proxy_delay`` after its
request; no more NAs than requests; and at the end the proxy queue is empty,
its length back to 0.
"""

from __future__ import annotations

import socket

import dpkt
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import open_lab
from netstack.ipv6.af_inet6 import ipv6_of

PEER_MAC = bytes.fromhex("02000000000a")
PROXIED = {"2001:db8:1::b": 0x00, "2001:db8:1::c": 0x80}  # target -> its router flag
TARGETS = [*PROXIED, "2001:db8:1::fe", "2001:db8:1::d", "fe80::b", "ff02::1"]
SOURCES = ["2001:db8:1::1", "::", "fe80::ff:fe00:a", "ff02::1"]


def a6(text: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6, text)


def solicited_node(target: str) -> tuple[str, bytes]:
    low = a6(target)[13:]
    group = a6("ff02::1:ff00:0")[:13] + low
    return socket.inet_ntop(socket.AF_INET6, group), bytes.fromhex("3333ff") + low


frames = st.lists(
    st.tuples(
        st.sampled_from(TARGETS),
        st.sampled_from(SOURCES),
        st.sampled_from(["solicited", "solicited", "unicast", "all-nodes"]),
        st.booleans(),  # source link-layer option
        st.sampled_from([255, 255, 255, 254, 1]),  # hop limit
        st.integers(0, 30),  # milliseconds before the next frame
    ),
    min_size=1,
    max_size=10,
)


@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(specs=frames, proxy_delay=st.sampled_from([0, 5, 80]))
def test_proxy_ndp_answers_survive_fuzzed_solicitations(
    specs: list[tuple[str, str, str, bool, int, int]], proxy_delay: int
) -> None:
    async def main() -> None:
        async with open_lab(seed=1, debug_skb=True) as lab:
            r = lab.add_host("r")
            b = lab.add_host("b")
            port = lab.add_port("r:ra")
            lab.add_link("b:eth0", "r:rb")
            r.ip("addr add 2001:db8:1::fe/64 dev ra nodad")
            r.ip("addr add 2001:db8:2::fe/64 dev rb nodad")
            b.ip("addr add 2001:db8:1::b/64 dev eth0 nodad")
            r.ip("route add 2001:db8:1::b/128 dev rb")
            r.sysctl("net.ipv6.conf.all.forwarding=1")
            r.sysctl("net.ipv6.conf.all.proxy_ndp=1")
            r.sysctl(f"net.ipv6.neigh.ra.proxy_delay={proxy_delay}")
            r.sysctl("net.ipv6.neigh.ra.proxy_qlen=2")
            r.ip("-6 neigh add proxy 2001:db8:1::b dev ra")
            r.ip("-6 neigh add proxy 2001:db8:1::c dev ra router")
            r.ip("-6 neigh add proxy fe80::b dev ra")
            await trio.sleep(3)
            port.drain()
            cap = r.capture("ra")
            ra_mac = bytes(r.dev("ra").dev_addr)
            hz = r.net.clock.hz
            tbl = ipv6_of(r.net).nd_tbl
            delay = tbl.parms_for(r.dev("ra")).proxy_delay  # jiffies
            assert delay == proxy_delay * hz // 100  # the sysctl is in USER_HZ
            asked: dict[bytes, list[float]] = {}  # target -> its solicitations' times
            for target, src, to, slla, hlim, gap in specs:
                if to == "solicited":
                    dst, dst_mac = solicited_node(target)
                elif to == "unicast":
                    dst, dst_mac = target, ra_mac
                else:
                    dst, dst_mac = "ff02::1", bytes.fromhex("333300000001")
                opt = b"\x01\x01" + PEER_MAC if slla else b""
                icmp = dpkt.icmp6.ICMP6(type=135, code=0, data=bytes(4) + a6(target) + opt)
                ip = dpkt.ip6.IP6(
                    src=a6(src), dst=a6(dst), nxt=58, hlim=hlim, data=icmp, plen=len(icmp)
                )
                asked.setdefault(a6(target), []).append(trio.current_time())
                eth = dpkt.ethernet.Ethernet(dst=dst_mac, src=PEER_MAC, type=0x86DD, data=bytes(ip))
                await port.send(bytes(eth))
                await trio.sleep(gap / 1000)
            await trio.sleep(2)
            n_nas = 0
            for ts, f, outgoing in cap.frames:
                eth = dpkt.ethernet.Ethernet(f)
                if not outgoing or eth.type != 0x86DD or eth.data.nxt != 58:
                    continue
                icmp = eth.data.data
                if icmp.type != 136:
                    continue  # (R's own solicitations and reports)
                n_nas += 1
                flags, target = icmp.data[0], icmp.data[4:20]
                assert eth.src == ra_mac
                assert target in asked, target
                # within proxy_delay of a solicitation for that address (at once with 0)
                assert any(0 <= ts - t < max(delay, 1) / hz for t in asked[target]), (
                    ts,
                    asked[target],
                )
                name = socket.inet_ntop(socket.AF_INET6, target)
                if name in PROXIED:
                    assert flags & 0x20 == 0  # never override for a proxied address
                    assert flags & 0x80 == PROXIED[name]
                    if eth.data.dst == a6("ff02::1"):  # a DAD probe's answer
                        assert flags & 0x40 == 0
                    else:
                        assert flags & 0x40 and eth.dst == PEER_MAC
            assert n_nas <= len(specs)
            assert not tbl.proxy_queue
            assert all(v == 0 for v in (tbl.proxy_qlen or {}).values())

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
