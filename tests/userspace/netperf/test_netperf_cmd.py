"""``netperf`` and ``netserver`` at the prompt: netperf's tables, its errors,
and runs that end even where no virtual time passes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

import netstack
from netstack.labs.session import Session
from netstack.tcp import tcp_of
from netstack.testing import routed_hosts


class Term:
    def __init__(self, session: Session, lines: list[str]) -> None:
        self.session = session
        self.lines = lines

    async def run(self, line: str) -> tuple[int, list[str]]:
        self.lines.clear()
        status = await self.session.run_line(line)
        return status, "\n".join(self.lines).split("\n")


@pytest.fixture
async def term(lab: netstack.Lab) -> AsyncIterator[Term]:
    routed_hosts(lab)  # h1 10.0.1.1 — router — h2 10.0.2.2, veth links: no time passes
    lines: list[str] = []
    async with trio.open_nursery() as nursery:
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        session = Session(lab, nursery, out=lines.append, err=lines.append, clock=clock)
        yield Term(session, lines)
        nursery.cancel_scope.cancel()
    clock.autojump_threshold = 0


async def test_tcp_rr_prints_netperfs_table(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    await term.run("h2 tc qdisc add dev eth0 root netem delay 5ms")  # RTT 5 ms
    status, out = await term.run("h1 netperf -H h2 -t TCP_RR -l 1")
    assert status == 0
    assert out[0] == (
        "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET "
        "to h2 (10.0.2.2) port 0 AF_INET : first burst 0"
    )
    assert out[1:6] == [
        "Local /Remote",
        "Socket Size   Request  Resp.   Elapsed  Trans.",
        "Send   Recv   Size     Size    Time     Rate         ",
        "bytes  Bytes  bytes    bytes   secs.    per sec   ",
        "",
    ]
    # 1 s of 5 ms round trips: 200 transactions, the last one ending at 1.00 s
    words = out[6].split()
    assert words[:4] == ["16384", "131072", "1", "1"]
    assert words[4] == "1.00" and 195 <= float(words[5]) <= 200
    assert out[7] == "16384  131072"


async def test_byte_limited_stream_and_send_size(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    await term.run("h2 tc qdisc add dev eth0 root netem delay 5ms")
    # -l below zero: a byte count; -m: the send size
    status, out = await term.run("h1 netperf -H 10.0.2.2 -l -300000 -P 0 -- -m 1000")
    assert status == 0
    assert out[:5] == [
        "Recv   Send    Send                          ",
        "Socket Socket  Message  Elapsed              ",
        "Size   Size    Size     Time     Throughput  ",
        "bytes  bytes   bytes    secs.    10^6bits/sec  ",
        "",
    ]
    recv, send, msg, secs, tput = out[5].split()
    assert (recv, send, msg) == ("131072", "16384", "1000")
    # throughput = 300000 bytes over the elapsed time (printed rounded to 10 ms)
    assert float(tput) > 0 and abs(300000 * 8 / 1e6 / float(tput) - float(secs)) < 0.006


async def test_a_time_limited_run_ends_where_no_virtual_time_passes(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    """Regression: on veth links in functional mode ``-l 10`` used to send forever."""
    for test in ("TCP_STREAM", "TCP_RR", "UDP_STREAM"):
        status, out = await term.run(f"h1 netperf -H h2 -t {test} -l 10 --budget 20000")
        assert status == 0
        assert any(line.startswith("netperf: stopped at the budget of") for line in out), out
        assert any(line.startswith("netperf: no virtual time passed") for line in out), out
        assert out[-1].split()[-1] == "inf" or out[-2].split()[-1] == "inf"
    # UDP: 20000 bytes of 1000-byte datagrams, all of them received
    status, out = await term.run("h1 netperf -H h2 -t UDP_STREAM --budget 20000 -P 0 -- -m 1000")
    assert out[-2].split()[:5] == ["212992", "1000", "0.00", "20", "0"]
    assert out[-1].split()[:3] == ["212992", "0.00", "20"]


async def test_netserver_ports_and_netperf_errors(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    status, out = await term.run("h1 netperf -H 10.0.9.9")  # no lab host has it
    assert status == 255 and out == [
        "establish control: are you sure there is a netserver listening on 10.0.9.9 at port 12865?",
        "establish_control could not establish the control connection from 0.0.0.0 port 0 "
        "address family AF_UNSPEC to 10.0.9.9 port 12865 address family AF_INET",
    ]
    # h2 is there but nothing listens on 5000: its TCP refuses the control connection
    status, out = await term.run("h1 netperf -H h2 -p 5000")
    assert status == 255 and out == [
        "establish control: are you sure there is a netserver listening on h2 at port 5000?",
        "establish_control could not establish the control connection from 0.0.0.0 port 0 "
        "address family AF_UNSPEC to h2 port 5000 address family AF_INET",
    ]
    lab = term.session.lab
    assert tcp_of(lab.hosts["h2"].net).mib.OutRsts == 1  # the RST that refused it
    assert tcp_of(lab.hosts["h1"].net).mib.AttemptFails == 1
    assert await term.run("h2 netserver -p 5000") == (
        0,
        ["Starting netserver with host 'IN(6)ADDR_ANY' port '5000' and family AF_UNSPEC"],
    )
    status, out = await term.run("h2 ss -ltn")  # real listeners, dual-stack as on Linux
    assert sorted(line.split()[3] for line in out[1:]) == ["*:12865", "*:5000"]
    status, out = await term.run("h2 netserver")  # every host already serves 12865
    assert status == 1 and out[0].startswith("Unable to start netserver")
    status, out = await term.run("h1 netperf -H h2 -p 5000 -t TCP_RR -l -3 -P 0")
    assert status == 0 and out[-2].split()[:4] == ["16384", "131072", "1", "1"]
    status, out = await term.run("h1 netperf -H h2 -t SCTP_STREAM")
    assert status == 255 and "not supported by netstack" in out[0]
    assert "Usage: netperf [global options] -- [test options]" in out
    status, out = await term.run("h1 netperf -h")
    assert status == 0 and out[0] == "Usage: netperf [global options] -- [test options]"
    status, out = await term.run("h1 netperf -H nosuch")
    assert status == 1 and "could not resolve remote 'nosuch'" in out[0]
    status, out = await term.run("h1 netperf -H h2 -c -l -1000 -P 0")
    assert status == 0 and out[0].startswith("netperf: CPU utilisation exists in timed mode only")


async def test_help_lines_and_usage_of_the_tools(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    status, out = await term.run("h1 ethtool -h")
    assert status == 0 and out[:2] == ["ethtool version 6.1", "Usage:"]
    assert any("-K|--features|--offload DEVNAME\tSet protocol offload" in line for line in out)
    status, out = await term.run("h1 ss -h")
    assert status == 0 and out[0] == "Usage: ss [ OPTIONS ]"
    status, out = await term.run("h1 ss -Z")
    assert status == 255 and out[0] == "ss: invalid option -- 'Z'"
    status, out = await term.run("help")
    assert any(line.split()[:1] == ["netperf"] for line in out)
    assert any(line.split()[:1] == ["netserver"] for line in out)
    assert not any("not available yet" in line and "netperf" in line for line in out)


def test_timed_mode_tables_have_netperfs_cpu_columns() -> None:
    """The CPU titles and formats of nettest_bsd.c (what ``-c -C`` prints), in timed mode."""
    from types import SimpleNamespace

    from netstack.userspace.netperf.netperf import NetperfResult
    from netstack.userspace.netperf.netperf_cmd import _Options, _table

    host: Any = SimpleNamespace(net=SimpleNamespace(cpus=[0, 1]))
    r = NetperfResult("TCP_STREAM", 10_240_000, 10_240_000, 0, 1.0, 0.1, 0, 25.0, 50.0)
    out = _table(_Options(), r, 16384, 16384, 131072, True, host, host).split("\n")
    assert out[0].endswith("Utilization       Service Demand")
    assert out[3] == "bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB"
    # 25 % of 2 CPUs for 1 s over 10000 KB: 50 us/KB; 50 % remote: 100 us/KB
    assert out[5].split() == ["131072", "16384", "16384", "1.00", "81.92", "25.00", "50.00",
                              "50.000", "100.000"]  # fmt: skip


def test_a_timed_lab_file_gives_netperf_its_cpu_columns(tmp_path: Any) -> None:
    """``[lab] timed = true``: the shell's lab runs in timed mode, and netperf's table has
    the CPU utilisation and service demand columns (``-c -C``'s)."""
    from netstack.labs.labfile import build_lab, parse_lab, timed_model

    spec = parse_lab(
        '[lab]\ntimed = true\n[hosts.a]\ncommands = ["ip addr add 10.0.0.1/24 dev eth0"]\n'
        '[hosts.b]\ncommands = ["ip addr add 10.0.0.2/24 dev eth0"]\n'
        '[[links]]\nends = ["a:eth0", "b:eth0"]\nkind = "nic"\ndelay = "1ms"\n',
        tmp_path / "t.toml",
    )
    assert spec.timed
    lines: list[str] = []

    async def main() -> None:
        async with (
            netstack.open_lab(timed=timed_model(spec)) as lab,
            trio.open_nursery() as nursery,
        ):
            clock = trio.lowlevel.current_clock()
            assert isinstance(clock, trio.testing.MockClock)
            session = Session(lab, nursery, out=lines.append, err=lines.append, clock=clock)
            await build_lab(spec, lab, session, captures=False)
            lines.clear()
            assert await session.run_line("a netperf -H b -t TCP_RR -l -5 -P 0") == 0
            nursery.cancel_scope.cancel()

    netstack.run(main)
    out = "\n".join(lines).split("\n")
    assert out[1].endswith("CPU    CPU    S.dem   S.dem")
    words = out[5].split()
    assert words[:4] == ["16384", "131072", "1", "1"]
    local, remote = float(words[6]), float(words[7])
    assert 0 < local < 100 and 0 < remote < 100  # CPU time exists in timed mode


async def test_netperf_over_ipv6(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    """An IPv6 address to -H runs the test over IPv6, as netperf -6 does."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", delay=0.001)  # RTT 2 ms
    a.ip("-6 addr add 2001:db8::1/64 dev eth0")
    b.ip("-6 addr add 2001:db8::2/64 dev eth0")
    await trio.sleep(3)  # duplicate address detection
    lines: list[str] = []
    async with trio.open_nursery() as nursery:
        session = Session(lab, nursery, out=lines.append, err=lines.append, clock=autojump_clock)
        assert await session.run_line("a netperf -H 2001:db8::2 -t TCP_RR -l -10") == 0
        nursery.cancel_scope.cancel()
    assert lines[0] == (
        "MIGRATED TCP REQUEST/RESPONSE TEST from ::0 (::) port 0 AF_INET6 "
        "to 2001:db8::2 (2001:db8::2) port 0 AF_INET6 : first burst 0"
    )
    assert lines[1].split("\n")[5].split() == ["16384", "131072", "1", "1", "0.02", "500.00"]
    autojump_clock.autojump_threshold = 0


async def test_the_control_connection_shows_in_ss_during_a_run(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    """netperf talks to the netserver on 12865 first; during the test both the control
    and the data connection are established TCP connections."""
    await term.run("h2 tc qdisc add dev eth0 root netem delay 5ms")
    status, out = await term.run("h1 netperf -H h2 -t TCP_RR -l 1 -P 0 &")
    assert status == 0
    term.session.thaw()
    await trio.sleep(0.5)  # the job is half-way through its test
    term.session.freeze()
    status, out = await term.run("h1 ss -tn")
    peers = sorted(line.split()[4] for line in out[1:] if line.split()[0] == "ESTAB")
    assert peers == ["10.0.2.2:12865", "10.0.2.2:12866"], out
    status, out = await term.run("h2 ss -tn")
    local = sorted(line.split()[3] for line in out[1:] if line.split()[0] == "ESTAB")
    # the netserver's dual-stack listener took the control connection: IPv4-mapped
    assert local == ["10.0.2.2:12866", "[::ffff:10.0.2.2]:12865"], out
    status, out = await term.run("wait")
    assert any(line.split()[:4] == ["16384", "131072", "1", "1"] for line in out), out
    # the netserver keeps listening; the control connection is gone
    status, out = await term.run("h2 ss -tn state established")
    assert all("12865" not in line for line in out[1:]), out


async def test_udp_stream_table_counts_come_from_the_udp_counters(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    """The "Okay" column is the sender's UdpOutDatagrams, the receive line's count the
    receiver's UdpInDatagrams (functional mode: no time passes; the timed test below
    checks the throughputs)."""
    status, out = await term.run("h1 netperf -H h2 -t UDP_STREAM -l -30000 -P 0 -- -m 1000")
    assert status == 0
    sent = _counter((await term.run("h1 nstat -a"))[1], "UdpOutDatagrams")
    got = _counter((await term.run("h2 nstat -a"))[1], "UdpInDatagrams")
    size, msg, _secs, okay, errors, _tput = out[-2].split()
    assert (size, msg, int(okay), int(errors)) == ("212992", "1000", sent, 0)
    assert int(out[-1].split()[2]) == got


def _counter(lines: list[str], name: str) -> int:
    """A counter of ``nstat -a``'s output."""
    for line in lines:
        words = line.split()
        if words and words[0] == name:
            return int(words[1])
    return 0


def _timed_udp_stream(tmp_path: Any, command: str) -> list[str]:
    """*command* in a fresh timed lab: a — 100 Mbit/s, 1 ms — b."""
    from netstack.labs.labfile import build_lab, parse_lab, timed_model

    spec = parse_lab(
        '[lab]\ntimed = true\n[hosts.a]\ncommands = ["ip addr add 10.0.0.1/24 dev eth0"]\n'
        '[hosts.b]\ncommands = ["ip addr add 10.0.0.2/24 dev eth0"]\n'
        '[[links]]\nends = ["a:eth0", "b:eth0"]\nkind = "nic"\nrate = "100mbit"\n'
        'delay = "1ms"\n',
        tmp_path / "t.toml",
    )
    lines: list[str] = []

    async def main() -> None:
        async with (
            netstack.open_lab(timed=timed_model(spec)) as lab,
            trio.open_nursery() as nursery,
        ):
            clock = trio.lowlevel.current_clock()
            assert isinstance(clock, trio.testing.MockClock)
            session = Session(lab, nursery, out=lines.append, err=lines.append, clock=clock)
            await build_lab(spec, lab, session, captures=False)
            lines.clear()
            for line in command.split(";"):
                assert await session.run_line(line) == 0
            nursery.cancel_scope.cancel()

    netstack.run(main)
    return "\n".join(lines).split("\n")


def test_timed_udp_stream_moves_virtual_time_and_reports_cpu(tmp_path: Any) -> None:
    """Regression: in timed mode UDP_STREAM's sends cost nothing and it ended at the byte
    budget at time 0. Now each sendto is a system call of a thread on the client's CPU:
    the test lasts its -l, the table has throughput and CPU columns, and two runs of the
    same lab print the same figures."""
    cmd = "a netperf -H b -t UDP_STREAM -l 0.02 -c -C -P 0 -- -m 1400;a nstat -a;b nstat -a"
    out = _timed_udp_stream(tmp_path, cmd)
    assert out == _timed_udp_stream(tmp_path, cmd)  # deterministic
    assert not any(line.startswith("netperf: ") for line in out), out  # no budget, no note
    assert out[0].endswith("CPU      Service")
    size, msg, secs, okay, errors, tput, lutil, lsdem = out[4].split()
    rsize, rsecs, rokay, rtput, rutil, rsdem = out[5].split()
    assert (size, msg, secs, errors) == ("212992", "1400", "0.02", "0")
    assert int(okay) == _counter(out, "UdpOutDatagrams")
    assert int(rokay) == _counter(out, "UdpInDatagrams") == int(okay)
    assert (rsize, rsecs, rtput) == ("212992", secs, tput)  # every datagram arrived
    # the printed throughput is those bytes over ~0.02 s (the elapsed time is rounded)
    assert 0.02 * 0.95 < int(okay) * 1400 * 8 / 1e6 / float(tput) < 0.02 * 1.05
    assert 0 < float(lutil) < 100 and 0 < float(rutil) < 100
    # service demand: us of CPU per KB: util x elapsed / KB, from the same figures
    kb = int(okay) * 1400 / 1024
    assert abs(float(lutil) / 100 * int(okay) * 1400 * 8 / float(tput) / kb - float(lsdem)) < (
        0.01 * float(lsdem)
    )
    rkb = int(rokay) * 1400 / 1024
    assert abs(float(rutil) / 100 * int(rokay) * 1400 * 8 / float(rtput) / rkb - float(rsdem)) < (
        0.01 * float(rsdem)
    )


def test_timed_udp_stream_still_ends_at_the_budget_on_a_fast_path(tmp_path: Any) -> None:
    out = _timed_udp_stream(tmp_path, "a netperf -H b -t UDP_STREAM -l 100 --budget 70000 -P 0")
    assert out[0].startswith("netperf: stopped at the budget of 70000 bytes after 0.00")
    assert out[-2].split()[:5] == ["212992", "65507", "0.00", "2", "0"]


async def test_netserver_listen_address_and_family(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    """netserver -L ADDR listens on one address, -4/-6 on one family's wildcard."""
    status, out = await term.run("h2 netserver -L 10.0.2.2 -p 6001")
    assert (status, out) == (
        0,
        ["Starting netserver with host '10.0.2.2' port '6001' and family AF_UNSPEC"],
    )
    assert (await term.run("h2 netserver -4 -p 6002"))[1] == [
        "Starting netserver with host 'IN(6)ADDR_ANY' port '6002' and family AF_INET"
    ]
    assert (await term.run("h2 netserver -6 -p 6003"))[0] == 0
    status, out = await term.run("h2 ss -ltn")
    listening = sorted(line.split()[3] for line in out[1:])
    assert [a for a in listening if "600" in a] == ["*:6003", "0.0.0.0:6002", "10.0.2.2:6001"]
    status, out = await term.run("h1 netperf -H h2 -p 6001 -t TCP_RR -l -2 -P 0")
    assert status == 0 and out[-2].split()[:4] == ["16384", "131072", "1", "1"]
    # -6: [::], which takes IPv4 peers too (IPV6_V6ONLY is off, as netserver leaves it)
    status, out = await term.run("h1 netperf -H h2 -p 6003 -t TCP_RR -l -2 -P 0")
    assert status == 0, out
    status, out = await term.run("h2 netserver -L nosuch")
    assert status == 1 and out == ["netserver: could not resolve 'nosuch'"]
