"""ICMP errors about TIME_WAIT and request socks (tcp_v6_err, tcp_v4_err → tcp_req_err).

    a (listener / connection under test) ── veth ── b (frames injected from here)

A request sock (SYN_RECV) answered with an error that quotes its SYN-ACK's
sequence number is dropped silently when the error is fatal (ListenDrops); any
other sequence number counts OutOfWindowIcmps and keeps it. A TIME_WAIT sock
ignores errors. A hypothesis fuzz sends mutated errors (any type and code, any
quoted sequence, truncated quotes) at every state.
"""

from __future__ import annotations

import struct
from typing import Any, Final

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.core.dev import dev_queue_xmit
from netstack.core.skbuff import SkBuff
from netstack.core.sock import AF_INET, AF_INET6, SOCK_STREAM
from netstack.host import Lab, open_lab
from netstack.tcp import tcp_of
from netstack.tcp.sock import RequestSock, TcpSock, TimewaitSock
from netstack.wire.checksum import csum_fold, csum_partial
from netstack.wire.ipv6 import aton as aton6
from netstack.wire.ipv6 import csum_ipv6_magic

PORT: Final = 8000
PEER_PORT: Final = 40000
FAKE6: Final = "2001:db8::9"  # a SYN from nobody: the request stays in SYN_RECV
FAKE4: Final = "10.0.0.9"
ADDRS: Final = {AF_INET6: ("2001:db8::1", "2001:db8::2"), AF_INET: ("10.0.0.1", "10.0.0.2")}


def _aton4(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def _csum(data: bytes) -> int:
    return csum_fold(csum_partial(bytearray(data), 0, len(data)))


def ip4(src: str, dst: str, proto: int, payload: bytes) -> bytes:
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto,
                                0, _aton4(src), _aton4(dst)))  # fmt: skip
    struct.pack_into("!H", hdr, 10, _csum(bytes(hdr)))
    return bytes(hdr) + payload


def ip6(src: str, dst: str, nxt: int, payload: bytes) -> bytes:
    return (
        struct.pack("!IHBB", 6 << 28, len(payload), nxt, 64)
        + aton6(src).to_bytes(16, "big")
        + aton6(dst).to_bytes(16, "big")
        + payload
    )


def tcp_hdr(sport: int, dport: int, seq: int, flags: int) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 65535, 0, 0)


def syn_frame(family: int, macs: tuple[bytes, bytes], src: str, dst: str) -> bytes:
    seg = bytearray(tcp_hdr(PEER_PORT, PORT, 1000, 0x02))
    if family == AF_INET6:
        c = csum_ipv6_magic(aton6(src), aton6(dst), len(seg), 6, csum_partial(seg, 0, len(seg)))
        struct.pack_into("!H", seg, 16, c)
        return macs[0] + macs[1] + b"\x86\xdd" + ip6(src, dst, 6, bytes(seg))
    pseudo = _aton4(src) + _aton4(dst) + struct.pack("!BBH", 0, 6, len(seg))
    struct.pack_into("!H", seg, 16, _csum(pseudo + bytes(seg)))
    return macs[0] + macs[1] + b"\x08\x00" + ip4(src, dst, 6, bytes(seg))


def icmp_err_frame(
    family: int,
    macs: tuple[bytes, bytes],
    local: str,
    remote: str,
    sport: int,
    dport: int,
    seq: int,
    icmp_type: int,
    code: int,
    cut: int = 0,
) -> bytes:
    """An ICMP(v6) error to *local* quoting *local*'s segment sport → remote:dport."""
    quote_tcp = tcp_hdr(sport, dport, seq, 0x12)[: 20 - cut] if cut < 20 else b""
    router = ADDRS[family][1]
    if family == AF_INET6:
        quoted = ip6(local, remote, 6, quote_tcp)
        body = bytearray(struct.pack("!BBHI", icmp_type, code, 0, 1280) + quoted)
        c = csum_ipv6_magic(aton6(router), aton6(local), len(body), 58,
                            csum_partial(body, 0, len(body)))  # fmt: skip
        struct.pack_into("!H", body, 2, c)
        return macs[0] + macs[1] + b"\x86\xdd" + ip6(router, local, 58, bytes(body))
    quoted = ip4(local, remote, 6, quote_tcp)
    body = bytearray(struct.pack("!BBHHH", icmp_type, code, 0, 0, 1200) + quoted)
    struct.pack_into("!H", body, 2, _csum(bytes(body)))
    return macs[0] + macs[1] + b"\x08\x00" + ip4(router, local, 1, bytes(body))


class Rig:
    def __init__(self, lab: Lab, family: int) -> None:
        self.family = family
        self.a = lab.add_host("a")
        self.b = lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        la, lb = ADDRS[family]
        if family == AF_INET6:
            self.a.ip(f"-6 addr add {la}/64 dev eth0 nodad")
            self.b.ip(f"-6 addr add {lb}/64 dev eth0 nodad")
        else:
            self.a.ip(f"addr add {la}/24 dev eth0")
            self.b.ip(f"addr add {lb}/24 dev eth0")
        self.keep: tuple[Any, ...] = ()

    @property
    def macs(self) -> tuple[bytes, bytes]:
        return bytes(self.a.dev("eth0").dev_addr), bytes(self.b.dev("eth0").dev_addr)

    def inject(self, frame: bytes) -> None:
        dev = self.b.dev("eth0")
        skb = SkBuff(bytearray(64) + bytearray(frame), 64, 64 + len(frame))
        skb.dev = dev
        skb.protocol = 0x86DD if self.family == AF_INET6 else 0x0800
        dev_queue_xmit(skb)

    async def request(self) -> RequestSock:
        srv = self.a.socket(self.family, SOCK_STREAM)
        await srv.bind(("::" if self.family == AF_INET6 else "0.0.0.0", PORT))
        srv.listen(4)
        self.keep = (srv,)
        fake = FAKE6 if self.family == AF_INET6 else FAKE4
        self.inject(syn_frame(self.family, self.macs, fake, ADDRS[self.family][0]))
        await trio.sleep(0.01)
        reqs = [r for r in tcp_of(self.a.net).hashinfo.ehash.values() if isinstance(r, RequestSock)]
        assert len(reqs) == 1
        return reqs[0]

    async def time_wait(self) -> TimewaitSock:
        lb = ADDRS[self.family][1]
        srv = self.b.socket(self.family, SOCK_STREAM)
        await srv.bind((lb, PORT))
        srv.listen(4)
        c = self.a.socket(self.family, SOCK_STREAM)
        await c.connect((lb, PORT))
        conn, _ = await srv.accept()
        c.close()
        await trio.sleep(0.1)
        conn.close()
        await trio.sleep(0.5)
        self.keep = (srv,)
        tws = [t for t in tcp_of(self.a.net).hashinfo.ehash.values() if isinstance(t, TimewaitSock)]
        assert len(tws) == 1
        return tws[0]


# fatal and not: ICMPv6 port unreachable (ECONNREFUSED, fatal), no route (not fatal);
# ICMP host unreachable (tcp_v4_err aborts a request on it), port unreachable (does not)
FATAL: Final = {AF_INET6: (1, 4), AF_INET: (3, 1)}
NOT_FATAL: Final = {AF_INET6: (1, 0), AF_INET: (3, 3)}


def _ext(rig: Rig) -> Any:
    return tcp_of(rig.a.net).snmp()["TcpExt"]


@pytest.mark.parametrize("family", [AF_INET6, AF_INET])
async def test_request_sock_errors(lab: Lab, autojump_clock: object, family: int) -> None:
    rig = Rig(lab, family)
    await trio.sleep(1)
    req = await rig.request()
    la = ADDRS[family][0]
    fake = FAKE6 if family == AF_INET6 else FAKE4
    ehash = tcp_of(rig.a.net).hashinfo.ehash

    def err(seq: int, tc: tuple[int, int]) -> None:
        rig.inject(icmp_err_frame(family, rig.macs, la, fake, PORT, PEER_PORT, seq, *tc))

    err(req.snt_isn + 1, FATAL[family])  # not our SYN-ACK's sequence: out of window
    await trio.sleep(0.01)
    assert _ext(rig).OutOfWindowIcmps == 1 and req in ehash.values()
    err(req.snt_isn, NOT_FATAL[family])  # ours, but not fatal: kept
    await trio.sleep(0.01)
    assert _ext(rig).OutOfWindowIcmps == 1 and req in ehash.values()
    drops = _ext(rig).ListenDrops
    err(req.snt_isn, FATAL[family])  # ours and fatal: the request goes, silently
    await trio.sleep(0.01)
    assert req not in ehash.values() and not req.hashed
    assert _ext(rig).ListenDrops == drops + 1
    assert rig.keep[0].sock.syn_queue_len == 0


@pytest.mark.parametrize("family", [AF_INET6, AF_INET])
async def test_time_wait_ignores_errors(lab: Lab, autojump_clock: object, family: int) -> None:
    rig = Rig(lab, family)
    await trio.sleep(1)
    tw = await rig.time_wait()
    la, lb = ADDRS[family]
    before = _ext(rig)
    for tc in (FATAL[family], NOT_FATAL[family]):
        for seq in (tw.snd_nxt, tw.snd_nxt - 1, 12345):
            rig.inject(icmp_err_frame(family, rig.macs, la, lb, tw.num, PORT, seq, *tc))
    await trio.sleep(0.01)
    after = _ext(rig)
    assert after.OutOfWindowIcmps == before.OutOfWindowIcmps
    assert tw in tcp_of(rig.a.net).hashinfo.ehash.values() and not tw.killed


FUZZ: Final = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
errors = st.lists(
    st.tuples(
        st.sampled_from([1, 2, 3, 4, 11, 12, 5, 0]),  # ICMPv6 and ICMP types mixed
        st.integers(0, 20),
        st.sampled_from(["snt", "near", "random"]),
        st.integers(0, 0xFFFFFFFF),
        st.sampled_from([0, 0, 0, 8, 12, 20]),
    ),
    min_size=1,
    max_size=6,
)


@pytest.mark.parametrize("state", ["request", "time_wait"])
@pytest.mark.parametrize("family", [AF_INET6, AF_INET])
@FUZZ
@given(errs=errors)
@pytest.mark.slow
def test_fuzz_icmp_errors_at_request_and_time_wait(
    family: int, state: str, errs: list[tuple[int, int, str, int, int]]
) -> None:
    """Any error, any quoted sequence, truncated quotes: counted or ignored, never a crash;
    a request sock leaves only through a fatal error quoting its sequence."""

    async def main() -> None:
        async with open_lab(debug_skb=True) as lab:
            rig = Rig(lab, family)
            await trio.sleep(1)
            la, lb = ADDRS[family]
            sk: Any = await (rig.request() if state == "request" else rig.time_wait())
            remote, lport, rport = (
                (FAKE6 if family == AF_INET6 else FAKE4, PORT, PEER_PORT)
                if state == "request"
                else (lb, sk.num, PORT)
            )
            base = sk.snt_isn if state == "request" else sk.snd_nxt
            for t, code, mode, rnd, cut in errs:
                seq = {"snt": base, "near": base + (rnd & 3) - 1, "random": rnd}[mode] & 0xFFFFFFFF
                if family == AF_INET6 and t > 4:
                    t = 1  # ICMPv6 errors are types 1-4
                rig.inject(
                    icmp_err_frame(family, rig.macs, la, remote, lport, rport, seq, t, code, cut)
                )
                await trio.sleep(0.005)
                if state == "time_wait":
                    assert sk in tcp_of(rig.a.net).hashinfo.ehash.values()
            await trio.sleep(3)  # timers run over whatever is left

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize("family", [AF_INET6, AF_INET])
async def test_established_learns_the_path_mtu(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    """The quoted header is read where the ICMP layer leaves it: a Packet Too Big /
    fragmentation needed quoting an outstanding segment shrinks the MSS; one quoting
    a sequence outside snd_una..snd_nxt counts OutOfWindowIcmps."""
    rig = Rig(lab, family)
    await trio.sleep(1)
    la, lb = ADDRS[family]
    srv = rig.b.socket(family, SOCK_STREAM)
    await srv.bind((lb, PORT))
    srv.listen(1)
    c = rig.a.socket(family, SOCK_STREAM)
    await c.connect((lb, PORT))
    _conn, _ = await srv.accept()
    sk = c.sock
    assert isinstance(sk, TcpSock)
    before = sk.mss_cache
    tc = (2, 0) if family == AF_INET6 else (3, 4)
    rig.inject(icmp_err_frame(family, rig.macs, la, lb, sk.inet_num, PORT, sk.snd_una - 5000, *tc))
    await trio.sleep(0.01)
    assert _ext(rig).OutOfWindowIcmps == 1 and sk.mss_cache == before
    rig.inject(icmp_err_frame(family, rig.macs, la, lb, sk.inet_num, PORT, sk.snd_una, *tc))
    await trio.sleep(0.01)
    # 1280 - 40 - 20 - 12 (IPv6); 1200 - 20 - 20 - 12 (IPv4)
    assert sk.mss_cache == (1208 if family == AF_INET6 else 1148) < before
