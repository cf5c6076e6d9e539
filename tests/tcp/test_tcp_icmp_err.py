"""ICMP errors about TIME_WAIT and request socks (tcp_v6_err, tcp_v4_err → tcp_req_err).

    stack (listener / connection under test) ── Port: the peer, driven by a TcpContext

A request sock (SYN_RECV) answered with an error that quotes its SYN-ACK's
sequence number is dropped silently when the error is fatal (ListenDrops); any
other sequence number counts OutOfWindowIcmps and keeps it. A TIME_WAIT sock
ignores errors. A hypothesis fuzz sends mutated errors (any type and code, any
quoted sequence, truncated quotes) at every state.
"""

from __future__ import annotations

from typing import Any, Final

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import Lab, open_lab
from netstack.tcp import tcp_of
from netstack.tcp.sock import RequestSock, TcpSock, TimewaitSock
from netstack.testing.tcpctx import TcpContext, linux_synack_options

MOD: Final = 1 << 32


async def request(ctx: TcpContext) -> RequestSock:
    """A SYN to the listener, answered with a SYN-ACK the peer never ACKs: SYN_RECV."""
    await ctx.listen(4)
    await ctx.send_segment("S", seq=0)
    await ctx.expect_segment("S.", seq=0, ack=1)
    reqs = [r for r in tcp_of(ctx.host.net).hashinfo.ehash.values() if isinstance(r, RequestSock)]
    assert len(reqs) == 1 and reqs[0].snt_isn == ctx.stack_iss
    return reqs[0]


async def time_wait(ctx: TcpContext) -> TimewaitSock:
    """The stack closes first, then the peer: the stack's sock goes to TIME_WAIT."""
    sock = await ctx.create_connected()
    sock.close()
    await ctx.expect_segment("F.", seq=1, ack=1)
    await ctx.send_segment("F.", ack=2)
    await ctx.expect_segment(".", seq=2, ack=2)
    tws = [t for t in tcp_of(ctx.host.net).hashinfo.ehash.values() if isinstance(t, TimewaitSock)]
    assert len(tws) == 1
    return tws[0]


# fatal and not: ICMPv6 port unreachable (ECONNREFUSED, fatal), no route (not fatal);
# ICMP host unreachable (tcp_v4_err aborts a request on it), port unreachable (does not)
FATAL: Final = {6: (1, 4), 4: (3, 1)}
NOT_FATAL: Final = {6: (1, 0), 4: (3, 3)}
# the 32-bit field after the checksum, as a router fills it: an MTU (low 16 bits in IPv4)
INFO: Final = {6: 1280, 4: 1200}


def _ext(ctx: TcpContext) -> Any:
    return tcp_of(ctx.host.net).snmp()["TcpExt"]


@pytest.mark.parametrize("family", [6, 4])
async def test_request_sock_errors(lab: Lab, autojump_clock: object, family: int) -> None:
    ctx = TcpContext(lab, family=family)
    await trio.sleep(1)
    req = await request(ctx)
    ehash = tcp_of(ctx.host.net).hashinfo.ehash

    async def err(seq: int, tc: tuple[int, int]) -> None:  # seq relative to the SYN-ACK's
        await ctx.send_icmp_error(*tc, seq=seq, info=INFO[family])

    await err(1, FATAL[family])  # not our SYN-ACK's sequence: out of window
    assert _ext(ctx).OutOfWindowIcmps == 1 and req in ehash.values()
    await err(0, NOT_FATAL[family])  # ours, but not fatal: kept
    assert _ext(ctx).OutOfWindowIcmps == 1 and req in ehash.values()
    drops = _ext(ctx).ListenDrops
    await err(0, FATAL[family])  # ours and fatal: the request goes, silently
    await ctx.expect_no_segment()
    assert req not in ehash.values() and not req.hashed
    assert _ext(ctx).ListenDrops == drops + 1
    assert ctx.listener is not None
    listener = ctx.listener.sock
    assert isinstance(listener, TcpSock) and listener.syn_queue_len == 0


@pytest.mark.parametrize("family", [6, 4])
async def test_time_wait_ignores_errors(lab: Lab, autojump_clock: object, family: int) -> None:
    ctx = TcpContext(lab, family=family)
    await trio.sleep(1)
    tw = await time_wait(ctx)
    assert ctx.stack_iss is not None
    before = _ext(ctx)
    for tc in (FATAL[family], NOT_FATAL[family]):
        for seq in (2, 1, (12345 - ctx.stack_iss) % MOD):  # snd_nxt, snd_nxt - 1, anywhere
            await ctx.send_icmp_error(*tc, seq=seq, flags="F.", info=INFO[family])
    await ctx.expect_no_segment()
    after = _ext(ctx)
    assert after.OutOfWindowIcmps == before.OutOfWindowIcmps
    assert tw in tcp_of(ctx.host.net).hashinfo.ehash.values() and not tw.killed


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
@pytest.mark.parametrize("family", [6, 4])
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
            ctx = TcpContext(lab, family=family)
            await trio.sleep(1)
            sk: Any = await (request(ctx) if state == "request" else time_wait(ctx))
            base = 0 if state == "request" else 2  # the SYN-ACK's, or snd_nxt (relative)
            assert ctx.stack_iss is not None
            for t, code, mode, rnd, cut in errs:
                rand = (rnd - ctx.stack_iss) % MOD
                seq = {"snt": base, "near": base + (rnd & 3) - 1, "random": rand}[mode] % MOD
                if family == 6 and t > 4:
                    t = 1  # ICMPv6 errors are types 1-4
                await ctx.send_icmp_error(t, code, seq=seq, quote=20 - cut, info=INFO[family])
                await trio.sleep(0.005)
                if state == "time_wait":
                    assert sk in tcp_of(ctx.host.net).hashinfo.ehash.values()
            await trio.sleep(3)  # timers run over whatever is left

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize("family", [6, 4])
async def test_established_learns_the_path_mtu(
    lab: Lab, autojump_clock: object, family: int
) -> None:
    """The quoted header is read where the ICMP layer leaves it: a Packet Too Big /
    fragmentation needed quoting an outstanding segment shrinks the MSS; one quoting
    a sequence outside snd_una..snd_nxt counts OutOfWindowIcmps."""
    ctx = TcpContext(lab, family=family)
    await trio.sleep(1)
    await ctx.create_connected(options=linux_synack_options)  # timestamps: 12 bytes
    sk = ctx.sk
    assert isinstance(sk, TcpSock)
    before = sk.mss_cache
    tc = (2, 0) if family == 6 else (3, 4)
    await ctx.send_icmp_error(*tc, seq=1 - 5000, flags=".", info=INFO[family])
    assert _ext(ctx).OutOfWindowIcmps == 1 and sk.mss_cache == before
    await ctx.send_icmp_error(*tc, seq=1, flags=".", info=INFO[family])  # snd_una
    # 1280 - 40 - 20 - 12 (IPv6); 1200 - 20 - 20 - 12 (IPv4)
    assert sk.mss_cache == (1208 if family == 6 else 1148) < before
