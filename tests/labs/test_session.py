"""Sessions: the command table behaving like the Linux tools, on a routed lab."""

from __future__ import annotations

from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing
from helpers import Term

from netstack.labs.commands import Command, CommandTable, default_commands, tool


async def test_host_prefix_and_current_host(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    status, out = await term.run("h1 ip -br addr show dev eth0")
    assert status == 0 and out.split() == ["eth0@if2", "UP", "10.0.1.1/24"]
    assert term.session.prompt == "netstack> "
    assert (await term.run("router"))[0] == 0
    assert term.session.prompt == "router# "
    status, out = await term.run("sysctl net.ipv4.ip_forward")
    assert out == "net.ipv4.ip_forward = 1"
    await term.run("exit")
    assert term.session.prompt == "netstack> " and not term.session.exit_requested
    await term.run("exit")
    assert term.session.exit_requested


async def test_errors_like_linux(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    assert await term.run("h1 ip addr add 10.0.0.1/33 dev eth0") == (
        1,  # get_prefix(): exit(1), as ip on Linux
        'Error: any valid prefix is expected rather than "10.0.0.1/33".',
    )
    assert await term.run("h1 ip link set eth9 up") == (1, 'Cannot find device "eth9"')
    assert await term.run("h1 bogus -x") == (127, "h1: bogus: command not found")
    assert await term.run("bogus") == (127, "bogus: command not found")
    status, out = await term.run("ip link")
    assert status == 2 and out.startswith("ip: which host?")
    assert await term.run("h1 sysctl net.ipv4.nope") == (
        1,
        "sysctl: cannot stat /proc/sys/net/ipv4/nope: No such file or directory",
    )
    assert (await term.run("h1 ping"))[1] == "ping: usage error: Destination address required"
    assert (await term.run("h1 ping -c 0 h2"))[1].startswith("ping: invalid argument: '0'")
    assert (await term.run("h1 ping nosuchhost"))[
        1
    ] == "ping: nosuchhost: Name or service not known"
    assert (await term.run('h1 ip "unterminated'))[0] == 2


async def test_tunnels_ethtool_and_sysfs_at_the_prompt(
    term: Term, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """`ip tunnel`, `ip link … type gre`, `ethtool -k/-K`, `cat /sys/…`, tcpdump on gre1."""
    for line in (
        "h1 ip tunnel add gre1 mode gre remote 10.0.2.2 local 10.0.1.1 key 7",
        "h1 ip link set gre1 up",
        "h1 ip addr add 192.168.9.1/30 dev gre1",
        "h2 ip link add gre1 type gre remote 10.0.1.1 local 10.0.2.2 key 7",
        "h2 ip link set gre1 up",
        "h2 ip addr add 192.168.9.2/30 dev gre1",
    ):
        assert await term.run(line) == (0, ""), line
    status, out = await term.run("h1 ip tunnel show gre1")
    assert out == "gre1: gre/ip remote 10.0.2.2 local 10.0.1.1 ttl inherit key 7"
    assert (await term.run("h1 ip tunnel add gre2 mode bogus"))[1] == 'Unknown tunnel mode "bogus"'
    status, out = await term.run("h1 ethtool -k gre1")
    assert status == 0 and out.startswith("Features for gre1:")
    assert "tx-lockless: on [fixed]" in out.split("\n")
    status, out = await term.run("h1 ethtool -k nosuch")
    assert status != 0 and "No such device" in out
    assert await term.run("h1 cat /sys/class/net/gre1/mtu") == (0, "1472")
    assert (await term.run("h1 cat /sys/class/net/nosuch/mtu"))[0] == 1
    status, out = await term.run("h2 tcpdump -i eth0 -c 2 -n ip proto 47 &")
    status, out = await term.run("h1 ping -c 1 192.168.9.2")
    assert "1 received" in out
    out += (await term.run("wait"))[1]  # the job prints as packets come
    assert (
        "IP 10.0.1.1 > 10.0.2.2: GREv0, key=0x7, length 92: "
        "IP 192.168.9.1 > 192.168.9.2: ICMP echo request, id 1, seq 1, length 64"
    ) in out
    # on the tunnel device itself: raw IP, printed and written as such (LINKTYPE_RAW)
    pcap = tmp_path / "gre1.pcap"
    status, out = await term.run(f"h2 tcpdump -i gre1 -c 1 -w {pcap} &")
    assert "listening on gre1, link-type RAW (Raw IP)" in out
    await term.run("h1 ping -c 1 192.168.9.2")
    await term.run("wait")
    with pcap.open("rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == 101
        frames = [bytes(buf) for _, buf in reader]
    assert len(frames) == 1 and frames[0][0] == 0x45 and frames[0][12:16] == bytes([192, 168, 9, 1])
    s = term.session
    assert s.complete("h1 ip ", "t") == ["tunnel"]
    assert s.complete("h1 ip tunnel add gre3 mode ", "") == ["gre", "ipip", "sit"]
    assert s.complete("h1 ip link add x type ", "gre") == ["gre", "gretap"]
    assert s.complete("h1 ethtool ", "-k") == ["-k"]
    assert s.complete("h1 ethtool ", "-C") == ["-C"]
    assert s.complete("router ethtool -C eth1 ", "rx") == ["rx-usecs"]
    assert s.complete("h1 ethtool -k ", "gre") == ["gre0", "gre1", "gretap0"]
    assert s.complete("h1 ethtool -K gre1 ", "gr") == ["gro"]
    assert s.complete("h1 ethtool -K gre1 gro ", "o") == ["off", "on"]
    assert s.complete("router tc ", "q") == ["qdisc"]
    assert s.complete("router tc qdisc add dev ", "eth") == ["eth0", "eth1"]
    assert s.complete("router tc qdisc add dev eth1 root ", "ne") == ["netem"]


async def test_time_stands_still_between_commands(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    t0 = trio.current_time()
    await trio.testing.wait_all_tasks_blocked()
    assert trio.current_time() == t0  # timers (ARP, NUD) pending, but frozen
    await term.run("sleep 2.5")
    assert trio.current_time() - t0 == pytest.approx(2.5)
    assert (await term.run("sleep 1m"))[0] == 0
    assert trio.current_time() - t0 == pytest.approx(62.5)
    assert (await term.run("sleep soon"))[1].startswith("sleep: invalid time interval 'soon'")


async def test_kill_a_job(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    await term.run("router tcpdump -i eth1 -e &")
    status, out = await term.run("jobs")
    assert out == "[1]+  Running                 router tcpdump -i eth1 -e &"
    await term.run("h1 ping -c 1 h2")
    status, out = await term.run("kill %1")
    assert status == 0
    assert "packets captured" in out
    # tcpdump handles SIGTERM: it prints its counts and exits 0, so bash says "Done"
    assert term.session.finished_jobs() == [
        "[1]+  Done                    router tcpdump -i eth1 -e"
    ]
    assert (await term.run("kill %7"))[1] == "kill: %7: no such job"


async def test_expect(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    await term.run("h1 ping -c 2 h2")
    assert await term.run("router expect IpForwDatagrams >= 4") == (0, "IpForwDatagrams = 4")
    assert await term.run("router expect IpForwDatagrams > 4") == (
        1,
        "IpForwDatagrams = 4, expected > 4",
    )
    assert (await term.run("router expect eth1.tx_packets >= 2"))[0] == 0
    assert (await term.run("h2 expect drops.NO_SOCKET == 0"))[0] == 0
    assert (await term.run("router expect eth1.qdisc.drops == 0"))[0] == 0
    assert await term.run("router expect ipforwdatagrams > 1") == (
        1,
        "expect: unknown counter 'ipforwdatagrams' (did you mean IpForwDatagrams?)",
    )
    assert (await term.run("router expect IpForwDatagrams"))[0] == 2
    assert (await term.run("! router expect IpForwDatagrams == 0"))[0] == 0


async def test_udpflood_ss_and_cat(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    h2 = term.session.lab.hosts["h2"]
    sink = h2.socket()
    await sink.bind(("0.0.0.0", 9000))
    status, out = await term.run("h1 udpflood -n 50 -s 100 -p 9000 h2")
    assert status == 0 and out.startswith("udpflood: 50 datagrams of 100 bytes to 10.0.2.2:9000")
    # Linux counts Udp InDatagrams when the application reads them; they are queued
    assert (await term.run("h2 expect IpInDelivers == 50"))[0] == 0
    assert (await term.run("h2 expect UdpInDatagrams == 0"))[0] == 0
    status, out = await term.run("h2 ss -ua")
    assert out.split("\n")[1].split() == ["UNCONN", str(sink.sock.sk_rmem_alloc), "0",
                                          "0.0.0.0:9000", "0.0.0.0:*"]  # fmt: skip
    # TCP sockets come from the host's ss front end (iproute2/ss.py)
    assert await term.run("h2 ss -t") == (
        0,
        "State Recv-Q Send-Q Local Address:Port Peer Address:Port",
    )
    assert await term.run("router cat /proc/sys/net/ipv4/ip_forward") == (0, "1")
    status, out = await term.run("h2 cat /proc/net/snmp")
    assert out.split("\n")[0].startswith("Ip: Forwarding DefaultTTL InReceives")
    assert await term.run("h2 cat /etc/passwd") == (
        1,
        "cat: /etc/passwd: No such file or directory",
    )


async def test_help(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    status, out = await term.run("help")
    assert status == 0 and "Hosts: h1, router, h2." in out
    for name in ("ip", "tcpdump", "ping", "nstat", "sleep", "jobs"):
        assert f"\n  {name} " in out
    assert "Time is virtual" in out
    assert (await term.run("help ping"))[1].startswith(
        "ping: send ICMP echo requests (IPv4 or IPv6)\nping [-4|-6] [-c"
    )
    assert (await term.run("help nope"))[0] == 1


async def test_completion(term: Term, autojump_clock: trio.testing.MockClock) -> None:
    s = term.session
    assert s.complete("", "h") == ["h1", "h2", "help", "history", "hosts"]
    assert s.complete("h1 ", "tc") == ["tc", "tcpdump"]
    assert s.complete("h1 ip ", "l") == ["link"]
    assert s.complete("router ip link set ", "e") == ["eth0", "eth1"]
    assert s.complete("router tcpdump -i ", "") == ["eth0", "eth1", "lo"]
    assert s.complete("h1 ping ", "r") == ["router"]
    assert "IpForwDatagrams" in s.complete("router expect ", "IpForw")
    assert s.complete("h1 nosuch ", "") == []


async def test_command_table_grows_by_one_line(
    term: Term, autojump_clock: trio.testing.MockClock
) -> None:
    async def hello(ctx: object, argv: list[str]) -> int:
        term.session.out("hello " + " ".join(argv))
        return 0

    table: CommandTable = default_commands()
    table.register(Command("hello", "say hello", hello))
    term.session.commands = table
    assert await term.run("h1 hello world") == (0, "hello world")
    with pytest.raises(ValueError, match="already registered"):
        table.register(Command("hello", "again", hello))


def test_a_tool_is_named_after_its_module_or_tool_without_one() -> None:
    async def main(proc: object, host: object, argv: list[str]) -> int:
        return 0

    assert tool(main).__name__ == f"{__name__}.main"
    main.__module__ = None  # type: ignore[assignment]  # as a mypyc-compiled function has
    assert tool(main).__name__ == "tool.main"
