"""Fuzz TCP-over-IPv6 receive: mutated segments aimed at a listener, a live
connection, a TIME_WAIT sock and a closed port.

Host a holds the socket in the state under test; hypothesis builds segments for
its 4-tuple (any flags, sequence and ACK numbers at or near the windows or
anywhere, random options, payloads, bad data offsets, bad checksums, truncated
headers, behind a destination options or hop-by-hop header or not) and they
are transmitted from b's side of the veth, so they take a's whole receive path
(ipv6_rcv → tcp_v6_rcv). After each segment: bad checksums were counted,
nothing escaped, and every segment a sent is well formed (dpkt, checksum over
the IPv6 pseudo-header).
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from typing import Any, Final

import dpkt
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.core.dev import dev_queue_xmit
from netstack.core.skbuff import SkBuff
from netstack.core.sock import AF_INET6, SOCK_STREAM
from netstack.host import Lab, open_lab
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.sock import TimewaitSock
from netstack.wire.checksum import csum_partial
from netstack.wire.ipv6 import aton, csum_ipv6_magic

FUZZ: Final = settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
A_IP: Final = "2001:db8::1"
B_IP: Final = "2001:db8::2"
PORT: Final = 8000

Segment = dict[str, Any]

segment = st.fixed_dictionaries(
    {
        "flags": st.integers(0, 255),
        "seq_mode": st.sampled_from(["rcv_nxt", "near", "random"]),
        "seq_delta": st.integers(-70000, 70000),
        "seq_rand": st.integers(0, 0xFFFFFFFF),
        "ack_mode": st.sampled_from(["snd_nxt", "near", "random"]),
        "ack_delta": st.integers(-70000, 70000),
        "ack_rand": st.integers(0, 0xFFFFFFFF),
        "window": st.integers(0, 0xFFFF),
        "options": st.one_of(
            st.just(b""),
            st.binary(max_size=40),
            st.just(b"\x01\x01\x08\x0a\x00\x00\x00\x01\x00\x00\x00\x00"),
        ),
        "payload": st.binary(max_size=200),
        "doff_bias": st.sampled_from([0, 0, 0, -1, 1, -5, 10]),
        "bad_csum": st.booleans(),
        "truncate": st.sampled_from([0, 0, 0, 0, 8, 19]),
        # an extension header in front of TCP: none, destination options, hop-by-hop
        "exthdr": st.sampled_from([6, 6, 60, 0]),
    }
)


def build_frame6(
    dst_mac: bytes, src_mac: bytes, sport: int, dport: int, s: Segment, rcv_nxt: int, snd_nxt: int
) -> bytes:
    seq = {"rcv_nxt": rcv_nxt, "near": rcv_nxt + s["seq_delta"], "random": s["seq_rand"]}[
        s["seq_mode"]
    ]
    ack = {"snd_nxt": snd_nxt, "near": snd_nxt + s["ack_delta"], "random": s["ack_rand"]}[
        s["ack_mode"]
    ]
    opts = s["options"] + b"\x00" * (-len(s["options"]) % 4)
    doff = max(0, min(15, (20 + len(opts)) // 4 + s["doff_bias"]))
    hdr = struct.pack(
        "!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, doff << 4, s["flags"],
        s["window"], 0, 0,
    )  # fmt: skip
    tcp = bytearray(hdr + opts + s["payload"])
    saddr, daddr = aton(B_IP), aton(A_IP)
    c = csum_ipv6_magic(saddr, daddr, len(tcp), 6, csum_partial(tcp, 0, len(tcp)))
    if s["bad_csum"]:
        c ^= 0x5A5A
    struct.pack_into("!H", tcp, 16, c)
    if s["truncate"]:
        tcp = tcp[: s["truncate"]]
    if s["exthdr"] != 6:  # PadN-only options: the segment still reaches TCP
        tcp = bytearray(bytes([6, 0, 1, 4, 0, 0, 0, 0])) + tcp
    ip6 = struct.pack("!IHBB", 6 << 28, len(tcp), s["exthdr"], 64)
    ip6 += saddr.to_bytes(16, "big") + daddr.to_bytes(16, "big")
    return dst_mac + src_mac + b"\x86\xdd" + ip6 + bytes(tcp)


class Rig:
    """a and b over veth; frames are injected from b's end of the cable."""

    def __init__(self, lab: Lab) -> None:
        self.a = lab.add_host("a")
        self.b = lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        self.a.ip(f"-6 addr add {A_IP}/64 dev eth0 nodad")
        self.b.ip(f"-6 addr add {B_IP}/64 dev eth0 nodad")
        self.cap = self.a.capture("eth0")
        self.keep: tuple[Any, ...] = ()

    def inject(self, frame: bytes) -> None:
        dev = self.b.dev("eth0")
        skb = SkBuff(bytearray(64) + bytearray(frame), 64, 64 + len(frame))
        skb.dev = dev
        skb.protocol = 0x86DD
        dev_queue_xmit(skb)

    def check(self) -> None:
        for sk in list(tcp_of(self.a.net).sockets):
            if isinstance(sk, TcpSock):
                assert sk.packets_out >= 0 and sk.sacked_out >= 0 and sk.sk_rmem_alloc >= 0
        for _, frame, out in self.cap.frames:
            ip6 = dpkt.ethernet.Ethernet(frame).data
            if not out or not isinstance(ip6, dpkt.ip6.IP6) or ip6.nxt != 6:
                continue
            seg = bytes(ip6)[40 : 40 + ip6.plen]
            pseudo = ip6.src + ip6.dst + struct.pack("!I3xB", len(seg), 6)
            assert dpkt.in_cksum(pseudo + seg) == 0
            dpkt.tcp.TCP(seg)
        self.cap.frames.clear()


Setup = Callable[[Rig], Awaitable[tuple[int, int, Callable[[], tuple[int, int]]]]]


async def st_listen(rig: Rig) -> tuple[int, int, Callable[[], tuple[int, int]]]:
    srv = rig.a.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(4)
    rig.keep = (srv,)
    return 40000, PORT, lambda: (0, 0)


async def _established(rig: Rig) -> tuple[Any, Any]:
    srv = rig.b.socket(AF_INET6, SOCK_STREAM)
    await srv.bind(("::", PORT))
    srv.listen(4)
    c = rig.a.socket(AF_INET6, SOCK_STREAM)
    await c.connect((B_IP, PORT))
    conn, _ = await srv.accept()
    await c.sendall(b"a" * 3000)
    await conn.sendall(b"b" * 3000)
    await trio.sleep(0.1)
    rig.keep = (srv, c, conn)
    return c, conn


async def st_established(rig: Rig) -> tuple[int, int, Callable[[], tuple[int, int]]]:
    c, _ = await _established(rig)
    sk = c.sock
    return PORT, sk.inet_num, lambda: (sk.rcv_nxt, sk.snd_nxt)


async def st_time_wait(rig: Rig) -> tuple[int, int, Callable[[], tuple[int, int]]]:
    c, conn = await _established(rig)
    lport = c.sock.inet_num
    await c.recv(1 << 16)
    c.close()
    await trio.sleep(0.1)
    while await conn.recv(1 << 16):
        pass
    conn.close()
    await trio.sleep(0.5)
    tws = [t for t in tcp_of(rig.a.net).hashinfo.ehash.values() if isinstance(t, TimewaitSock)]
    assert tws
    tw = tws[0]
    return PORT, lport, lambda: (tw.rcv_nxt, tw.snd_nxt)


async def st_closed(rig: Rig) -> tuple[int, int, Callable[[], tuple[int, int]]]:
    return 43000, 44000, lambda: (0, 0)


STATES: Final[dict[str, Setup]] = {
    "LISTEN": st_listen,
    "ESTAB": st_established,
    "TIME-WAIT": st_time_wait,
    "CLOSED": st_closed,
}


def run_fuzz(setup: Setup, segments: list[Segment]) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            rig = Rig(lab)
            await trio.sleep(1)
            sport, dport, seqs = await setup(rig)
            a_mac = rig.a.dev("eth0").dev_addr
            b_mac = rig.b.dev("eth0").dev_addr
            tcp = tcp_of(rig.a.net)
            for s in segments:
                rcv_nxt, snd_nxt = seqs()
                before = tcp.snmp()["Tcp"]
                rig.inject(build_frame6(a_mac, b_mac, sport, dport, s, rcv_nxt, snd_nxt))
                await trio.sleep(0.002)
                after = tcp.snmp()["Tcp"]
                if s["bad_csum"] and not s["truncate"] and s["doff_bias"] == 0:
                    assert after.InCsumErrors == before.InCsumErrors + 1
                rig.check()
            await trio.sleep(3)  # timers run over whatever state is left
            rig.check()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize("state", list(STATES))
@FUZZ
@given(segments=st.lists(segment, min_size=1, max_size=8))
@pytest.mark.slow
def test_fuzz_tcp6_receive(state: str, segments: list[Segment]) -> None:
    run_fuzz(STATES[state], segments)
