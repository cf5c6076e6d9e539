"""``ss -ti`` and the netperf-like tool."""

from __future__ import annotations

import errno
import functools
from typing import Literal

import pytest
import trio
import trio.testing
from helpers import add_addr

from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.errors import ConfigError
from netstack.host import Lab
from netstack.testing import builders
from netstack.userspace.netperf import netperf
from netstack.userspace.netperf.netperf import NetperfResult

# this file's hosts keep IPv6 on
pair = functools.partial(builders.pair, ipv4_only=False)


async def test_ss_shows_listeners_connections_and_tcp_info(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = pair(lab, kind="nic", delay=0.001)
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 80))
    srv.listen(16)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", 80))
    _conn, _ = await srv.accept()
    await c.sendall(b"x" * 50_000)
    await trio.sleep(0.5)
    out = b.ss("-tl")
    assert out.splitlines()[0].split()[:3] == ["State", "Recv-Q", "Send-Q"]
    assert "LISTEN" in out and "0.0.0.0:80" in out and " 16 " in out
    est = b.ss("-t")
    assert "ESTAB" in est and "LISTEN" not in est
    row = next(line for line in est.splitlines() if line.startswith("ESTAB"))
    assert row.split()[1] == "50000"  # Recv-Q: bytes not yet read
    info = a.ss("-ti").splitlines()
    assert info[1].startswith("ESTAB") and "10.0.0.2:80" in info[1]
    fields = info[2].split()
    assert fields[:3] == ["ts", "sack", "cubic"]
    assert any(f.startswith("wscale:") for f in fields)
    assert any(f.startswith("rtt:") for f in fields)
    assert "mss:1448" in fields and any(f.startswith("cwnd:") for f in fields)
    assert "bytes_acked:50001" in fields  # the data and the SYN (tcp_snd_una_update)
    assert "TcpActiveOpens" in a.nstat()
    with pytest.raises(ConfigError, match="invalid option"):
        a.ss("-tz")


async def test_ss_time_wait(lab: Lab, autojump_clock: object) -> None:
    a, b = pair(lab)
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("", 80))
    srv.listen(1)
    c = a.socket(AF_INET, SOCK_STREAM)
    await c.connect(("10.0.0.2", 80))
    conn, _ = await srv.accept()
    c.close()
    await trio.sleep(0.1)
    conn.close()
    await trio.sleep(0.5)
    assert "TIME-WAIT" in a.ss("-ta")


@pytest.mark.parametrize("kind", ["veth", "nic"])
async def test_netperf_tcp_stream(
    lab: Lab, autojump_clock: object, kind: Literal["veth", "nic"]
) -> None:
    a, b = pair(lab, kind=kind)
    res = await netperf(a, b, "10.0.0.2", test="TCP_STREAM", total_bytes=1 << 20)
    assert res.bytes_received == res.bytes_sent == 1 << 20
    assert res.wall_goodput_mbps > 0
    assert res.cpu_seconds > 0 and res.cpu_goodput_mbps > 0


@pytest.mark.slow
async def test_netperf_tcp_stream_over_a_rated_link(lab: Lab, autojump_clock: object) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=20e6, delay=0.001)
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    res = await netperf(a, b, "10.0.0.2", test="TCP_STREAM", seconds=1.0)
    # 20 Mbit/s of line rate: goodput just below it once slow start is over
    assert 12 < res.throughput_mbps < 20


async def test_netperf_tcp_rr_and_udp_stream(lab: Lab, autojump_clock: object) -> None:
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", delay=0.0005)
    add_addr(a, "eth0", "10.0.0.1/24")
    add_addr(b, "eth0", "10.0.0.2/24")
    rr = await netperf(a, b, "10.0.0.2", test="TCP_RR", transactions=100)
    assert rr.transactions == 100
    assert rr.transactions_per_s == pytest.approx(1000, rel=0.05)  # one 1 ms RTT each
    udp = await netperf(a, b, "10.0.0.2", test="UDP_STREAM", total_bytes=100 * 1400,
                        send_size=1400, port=12867)  # fmt: skip
    assert udp.bytes_received == 100 * 1400
    with pytest.raises(ValueError, match="unknown test"):
        await netperf(a, b, "10.0.0.2", test="SCTP_STREAM", seconds=1)


def test_netperf_reports_cpu_utilisation_in_timed_mode() -> None:
    """Timed mode: the busy time charged to each host's CPUs, over the test's time."""
    import netstack
    from netstack.cpu.timed import Machine, TimedModel

    model = TimedModel(Machine())
    results: list[NetperfResult] = []

    async def main() -> None:
        async with netstack.open_lab(timed=model) as lab:
            a, b = pair(lab, kind="nic", delay=0.0001)
            results.append(await netperf(a, b, "10.0.0.2", test="TCP_RR", transactions=20))

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    (r,) = results
    assert r.transactions == 20 and r.virtual_seconds > 0
    assert r.local_cpu is not None and r.remote_cpu is not None
    assert 0 < r.local_cpu < 100 and 0 < r.remote_cpu < 100


async def test_netperf_has_no_cpu_figures_in_functional_mode(
    lab: Lab, autojump_clock: object
) -> None:
    a, b = pair(lab, kind="nic", delay=0.0001)
    r = await netperf(a, b, "10.0.0.2", test="TCP_RR", transactions=3)
    assert r.local_cpu is None and r.remote_cpu is None


@pytest.mark.parametrize("test", ["TCP_STREAM", "TCP_RR", "UDP_STREAM"])
@pytest.mark.slow
async def test_netperf_through_a_netserver_gives_the_same_figures(
    lab: Lab, autojump_clock: object, test: str
) -> None:
    """control_port=: the parameters go to a netserver over a real TCP connection and its
    results come back on it; the figures are those of a run without one."""
    from netstack.tcp import tcp_of
    from netstack.userspace.netperf.netperf import NETSERVER_PORT, netserver

    a, b = pair(lab, kind="nic", delay=0.001)
    kw: dict[str, object] = {"test": test, "send_size": 1000}
    kw |= {"transactions": 20} if test == "TCP_RR" else {"total_bytes": 50_000}
    await netperf(a, b, "10.0.0.2", port=12868, **kw)  # type: ignore[arg-type]  # warm up (ARP…)
    plain = await netperf(a, b, "10.0.0.2", port=12866, **kw)  # type: ignore[arg-type]
    passive = tcp_of(b.net).mib.PassiveOpens
    async with trio.open_nursery() as nursery:
        await nursery.start(netserver, b)
        via = await netperf(a, b, "10.0.0.2", port=12867, control_port=NETSERVER_PORT, **kw)  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()
    # one control connection, plus the data connection of the TCP tests
    assert tcp_of(b.net).mib.PassiveOpens - passive == (1 if test == "UDP_STREAM" else 2)
    assert (via.bytes_sent, via.bytes_received, via.transactions) == (
        plain.bytes_sent,
        plain.bytes_received,
        plain.transactions,
    )
    assert via.virtual_seconds == pytest.approx(plain.virtual_seconds)
    if test == "UDP_STREAM":
        assert via.messages_received == plain.messages_received == 50


async def test_netperf_without_a_netserver_cannot_establish_control(
    lab: Lab, autojump_clock: object
) -> None:
    from netstack.userspace.netperf.netperf import NetperfControlError

    a, b = pair(lab, kind="nic", delay=0.001)
    with pytest.raises(NetperfControlError) as info:
        await netperf(a, b, "10.0.0.2", total_bytes=1000, control_port=12865)
    assert (info.value.errno, info.value.address, info.value.port) == (
        errno.ECONNREFUSED,
        "10.0.0.2",
        12865,
    )


async def test_a_netserver_outlives_clients_that_go_away(lab: Lab, autojump_clock: object) -> None:
    """A control connection closed mid-test and one that is not netperf's end only
    themselves: the next netperf through the same netserver runs."""
    from netstack.userspace.netperf.netperf import netserver

    a, b = pair(lab, kind="nic", delay=0.001)
    async with trio.open_nursery() as nursery:
        await nursery.start(netserver, b)
        for request, reply in (
            (b"TCP_STREAM family=4 port=13000 req=1 resp=1\n", b"ok port=13000\n"),
            (b"GET / HTTP/1.0\n", b""),  # the netserver just closes it
        ):
            c = a.socket(AF_INET, SOCK_STREAM)
            await c.connect(("10.0.0.2", 12865))
            await c.sendall(request)
            assert await c.recv(100) == reply
            c.close()  # before the test: the netserver drops its data socket
        await trio.sleep(0.1)
        assert "13000" not in b.ss("-ltn")  # the abandoned test's data socket is closed
        r = await netperf(a, b, "10.0.0.2", test="TCP_RR", transactions=5, control_port=12865)
        assert r.transactions == 5
        nursery.cancel_scope.cancel()
