"""Fuzz TCP receive in every state: mutated segments aimed at a live connection.

Host a holds a TCP socket (or request / TIME_WAIT sock) in the state under
test; hypothesis builds segments for its 4-tuple — any flags, sequence and
ACK numbers near the edges of the windows or anywhere, random or malformed
options, payloads, bad data offsets, bad checksums, truncated headers — and
they are transmitted from b's side of the veth, so they take a's whole
receive path. Dual-stack states put an AF_INET6 socket (IPv4-mapped: a
listener on ``::``, its request sock, a connection to ``::ffff:10.0.0.2``) in
the IPv4 socket's place. After each batch: nothing escaped (the lab is alive), the
scoreboard and memory counters are consistent, bad checksums and bad headers
were counted, and every segment a sent is well formed (dpkt, checksums).
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from typing import Any, Final

import dpkt
import pytest
import trio
import trio.testing
from helpers import add_addr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.core.dev import dev_queue_xmit
from netstack.core.skbuff import SkBuff
from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.host import Lab, open_lab
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp.sock import RequestSock, TimewaitSock
from netstack.wire.checksum import csum_partial, csum_tcpudp_magic, ip_fast_csum
from netstack.wire.ipv4 import aton

FUZZ: Final = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
A_IP: Final = "10.0.0.1"
B_IP: Final = "10.0.0.2"
GHOST_IP: Final = "10.0.0.9"  # a peer that never answers (static neighbour, no host)
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
            st.sampled_from(
                [
                    b"\x01\x01\x08\x0a\x00\x00\x00\x01\x00\x00\x00\x00",  # timestamps
                    b"\x01\x01\x05\x0a\x00\x00\x00\x00\x00\x00\x10\x00",  # one SACK block
                    b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + bytes(8) + b"\x01\x03\x03\x07",
                    b"\x05\x01\x00\x00",  # SACK with a silly length
                    b"\x08\x0b" + bytes(10),  # timestamp with a bad length
                ]
            ),
        ),
        "payload": st.binary(max_size=200),
        "doff_bias": st.sampled_from([0, 0, 0, -1, 1, -5, 10]),
        "bad_csum": st.booleans(),
        "truncate": st.sampled_from([0, 0, 0, 0, 8, 19]),
    }
)


def build_frame(
    dst_mac: bytes, src_mac: bytes, src: str, dst: str, sport: int, dport: int, s: Segment,
    rcv_nxt: int, snd_nxt: int,
) -> bytes:  # fmt: skip
    if s["seq_mode"] == "rcv_nxt":
        seq = rcv_nxt
    elif s["seq_mode"] == "near":
        seq = rcv_nxt + s["seq_delta"]
    else:
        seq = s["seq_rand"]
    if s["ack_mode"] == "snd_nxt":
        ack = snd_nxt
    elif s["ack_mode"] == "near":
        ack = snd_nxt + s["ack_delta"]
    else:
        ack = s["ack_rand"]
    opts = s["options"]
    opts += b"\x00" * (-len(opts) % 4)
    doff = max(0, min(15, (20 + len(opts)) // 4 + s["doff_bias"]))
    tcp = bytearray(
        struct.pack(
            "!HHIIBBHHH",
            sport,
            dport,
            seq & 0xFFFFFFFF,
            ack & 0xFFFFFFFF,
            doff << 4,
            s["flags"],
            s["window"],
            0,
            0,
        )
        + opts
        + s["payload"]
    )
    saddr, daddr = aton(src), aton(dst)
    c = csum_tcpudp_magic(saddr, daddr, len(tcp), 6, csum_partial(tcp, 0, len(tcp)))
    if s["bad_csum"]:
        c ^= 0x5A5A
    struct.pack_into("!H", tcp, 16, c)
    if s["truncate"]:
        tcp = tcp[: s["truncate"]]
    ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0,
                               saddr, daddr))  # fmt: skip
    struct.pack_into("!H", ip, 10, ip_fast_csum(ip, 0, 20))
    return dst_mac + src_mac + b"\x08\x00" + bytes(ip) + bytes(tcp)


class Rig:
    """a and b over veth; frames are injected from b's end of the cable."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.a = lab.add_host("a")
        self.b = lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        add_addr(self.a, "eth0", f"{A_IP}/24")
        add_addr(self.b, "eth0", f"{B_IP}/24")
        self.a.ip(f"neigh add {GHOST_IP} lladdr 02:00:00:00:09:09 dev eth0")
        self.sent: list[bytes] = []
        self.cap = self.a.capture("eth0")

    def inject(self, frame: bytes) -> None:
        dev = self.b.dev("eth0")
        skb = SkBuff(bytearray(64) + bytearray(frame), 64, 64 + len(frame))
        skb.dev = dev
        skb.protocol = 0x0800
        dev_queue_xmit(skb)

    def check(self) -> None:
        tcp = tcp_of(self.a.net)
        for sk in list(tcp.sockets):
            if isinstance(sk, TcpSock):
                assert sk.packets_out >= 0 and sk.sacked_out >= 0
                assert sk.lost_out >= 0 and sk.retrans_out >= 0
                assert sk.sk_rmem_alloc >= 0
                assert sk.sacked_out + sk.lost_out <= sk.packets_out or not sk.packets_out
        for _, frame, out in self.cap.frames:
            if not out:
                continue
            eth = dpkt.ethernet.Ethernet(frame)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP) or ip.p != 6:
                continue
            seg = bytes(ip)[ip.hl * 4 : ip.len]
            pseudo = ip.src + ip.dst + struct.pack("!BBH", 0, 6, len(seg))
            assert dpkt.in_cksum(pseudo + seg) == 0
            dpkt.tcp.TCP(seg)  # parses
        self.cap.frames.clear()


Setup = Callable[[Rig], Awaitable[tuple[str, int, int, Callable[[], tuple[int, int]]]]]


async def st_listen(
    rig: Rig, family: int = AF_INET
) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    srv = rig.a.socket(family, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(4)
    rig.keep = srv  # type: ignore[attr-defined]
    return GHOST_IP, 40000, PORT, lambda: (1000, 0)


async def st_syn_sent(rig: Rig) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    c = rig.a.socket(AF_INET, SOCK_STREAM)
    await c.bind((A_IP, 41000))
    rig.lab._nursery.start_soon(_connect_quietly, c, (GHOST_IP, PORT))
    await trio.sleep(0.01)
    sk = c.sock
    assert isinstance(sk, TcpSock) and sk.state_name == "SYN-SENT"
    return GHOST_IP, PORT, 41000, lambda: (0, sk.snd_nxt)


async def _connect_quietly(c: Any, addr: tuple[str, int]) -> None:
    try:
        await c.connect(addr)
    except OSError:
        pass


async def st_syn_recv(
    rig: Rig, family: int = AF_INET
) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    await st_listen(rig, family)
    s: Segment = {
        "flags": 0x02, "seq_mode": "rcv_nxt", "seq_delta": 0, "seq_rand": 0, "ack_mode": "random",
        "ack_delta": 0, "ack_rand": 0, "window": 65535, "options": b"\x02\x04\x05\xb4",
        "payload": b"", "doff_bias": 0, "bad_csum": False, "truncate": 0,
    }  # fmt: skip
    a_mac = rig.a.dev("eth0").dev_addr
    rig.inject(build_frame(a_mac, b"\x02" * 6, GHOST_IP, A_IP, 42000, PORT, s, 5000, 0))
    await trio.sleep(0.01)
    reqs = [r for r in tcp_of(rig.a.net).hashinfo.ehash.values() if isinstance(r, RequestSock)]
    assert len(reqs) == 1
    req = reqs[0]
    return GHOST_IP, 42000, PORT, lambda: (req.rcv_nxt, req.snt_isn + 1)


async def _established(rig: Rig, mapped: bool = False) -> tuple[Any, Any]:
    srv = rig.b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", PORT))
    srv.listen(4)
    c = rig.a.socket(AF_INET6 if mapped else AF_INET, SOCK_STREAM)
    await c.connect((f"::ffff:{B_IP}" if mapped else B_IP, PORT))
    conn, _ = await srv.accept()
    await c.sendall(b"a" * 3000)
    await conn.sendall(b"b" * 3000)
    await trio.sleep(0.1)
    rig.keep = (srv, c, conn)  # type: ignore[attr-defined]
    return c, conn


def _tuple_of(c: Any) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    sk = c.sock
    return B_IP, PORT, sk.inet_num, lambda: (sk.rcv_nxt, sk.snd_nxt)


async def st_established(
    rig: Rig, mapped: bool = False
) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    c, _ = await _established(rig, mapped)
    return _tuple_of(c)


async def st_close_wait(rig: Rig) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    c, conn = await _established(rig)
    conn.close()
    await trio.sleep(0.5)
    return _tuple_of(c)


async def st_fin_wait2(rig: Rig) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    c, _ = await _established(rig)
    c.shutdown(1)
    await trio.sleep(0.5)
    return _tuple_of(c)


async def st_time_wait(
    rig: Rig, mapped: bool = False
) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    c, conn = await _established(rig, mapped)
    sk = c.sock
    lport = sk.inet_num
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
    return B_IP, PORT, lport, lambda: (tw.rcv_nxt, tw.snd_nxt)


async def st_closed(rig: Rig) -> tuple[str, int, int, Callable[[], tuple[int, int]]]:
    return B_IP, 43000, 44000, lambda: (0, 0)


STATES: Final[dict[str, Setup]] = {
    "LISTEN": st_listen,
    "SYN-SENT": st_syn_sent,
    "SYN-RECV": st_syn_recv,
    "ESTAB": st_established,
    "CLOSE-WAIT": st_close_wait,
    "FIN-WAIT-2": st_fin_wait2,
    "TIME-WAIT": st_time_wait,
    "CLOSED": st_closed,
    # dual stack: AF_INET6 sockets talking IPv4
    "LISTEN-dual": lambda rig: st_listen(rig, AF_INET6),
    "SYN-RECV-dual": lambda rig: st_syn_recv(rig, AF_INET6),
    "ESTAB-mapped": lambda rig: st_established(rig, True),
    "TIME-WAIT-mapped": lambda rig: st_time_wait(rig, True),
}


def run_fuzz(setup: Setup, segments: list[Segment]) -> None:
    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            rig = Rig(lab)
            src, sport, dport, seqs = await setup(rig)
            a_mac = rig.a.dev("eth0").dev_addr
            b_mac = rig.b.dev("eth0").dev_addr
            tcp = tcp_of(rig.a.net)
            for s in segments:
                rcv_nxt, snd_nxt = seqs()
                before = tcp.snmp()["Tcp"]
                frame = build_frame(a_mac, b_mac, src, A_IP, sport, dport, s, rcv_nxt, snd_nxt)
                rig.inject(frame)
                await trio.sleep(0.002)
                after = tcp.snmp()["Tcp"]
                header_ok = not s["truncate"] and (len(frame) - 34 - len(s["payload"])) // 4 >= 5
                if s["bad_csum"] and not s["truncate"] and s["doff_bias"] == 0:
                    assert after.InCsumErrors == before.InCsumErrors + 1
                if s["truncate"] or not header_ok:
                    assert after.InErrs >= before.InErrs
                rig.check()
            await trio.sleep(3)  # timers run over whatever state is left
            rig.check()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize("state", list(STATES))
@FUZZ
@given(segments=st.lists(segment, min_size=1, max_size=8))
@pytest.mark.slow
def test_fuzz_tcp_receive(state: str, segments: list[Segment]) -> None:
    run_fuzz(STATES[state], segments)


def test_syn_flood_on_a_full_backlog_is_bounded() -> None:
    """1000 SYNs from spoofed ports: the request queue stays at the backlog (plus one, as
    Linux 6.x counts it: full when qlen > backlog); the rest get SYN cookies, no state."""
    syn: Segment = {
        "flags": 0x02, "seq_mode": "random", "seq_delta": 0, "seq_rand": 7, "ack_mode": "random",
        "ack_delta": 0, "ack_rand": 0, "window": 65535, "options": b"", "payload": b"",
        "doff_bias": 0, "bad_csum": False, "truncate": 0,
    }  # fmt: skip

    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            rig = Rig(lab)
            await st_listen(rig)
            a_mac = rig.a.dev("eth0").dev_addr
            for i in range(1000):
                frame = build_frame(a_mac, b"\x02" * 6, GHOST_IP, A_IP, 10000 + i, PORT, syn, 0, 0)
                rig.inject(frame)
                if i % 100 == 0:
                    await trio.sleep(0.001)
            await trio.sleep(0.01)
            tcp = tcp_of(rig.a.net)
            reqs = [r for r in tcp.hashinfo.ehash.values() if isinstance(r, RequestSock)]
            assert len(reqs) == 5  # listen(4); a 6.18 kernel keeps 5 the same way
            ext = tcp.snmp()["TcpExt"]
            assert ext.TCPReqQFullDoCookies == ext.SyncookiesSent == 995
            assert ext.TCPReqQFullDrop == 0
            await trio.sleep(120)  # SYN-ACK retries run out: the queue empties
            assert not [r for r in tcp.hashinfo.ehash.values() if isinstance(r, RequestSock)]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
