"""``tc`` itself: qdisc/class commands, tc's and the kernel's messages, "a
failing command changes nothing", changes under traffic, and a fuzz test of
the whole parser."""

from __future__ import annotations

import contextlib
import errno
import shlex
import statistics as stats
from collections.abc import Iterator

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.errors import ConfigError
from netstack.host import Host, Lab, open_lab
from netstack.userspace.iproute2.tc.netem_dist import netem_dist_table

PFIFO_FAST = "qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap  1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n"


@contextlib.contextmanager
def fails(message: str, err: int | None = None) -> Iterator[None]:
    """Expect a ConfigError whose text is exactly *message* (and errno *err*)."""
    with pytest.raises(ConfigError) as exc:
        yield
    assert str(exc.value) == message
    if err is not None:
        assert exc.value.errno == err


def state(h: Host) -> str:
    return h.tc("-s -d qdisc show") + h.tc("-s -d class show dev eth0")


def nic_host(lab: Lab) -> Host:
    h = lab.add_host("h")
    lab.add_link("h:eth0", "h:eth1", kind="nic")
    return h


async def test_show_add_replace_change_delete(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = nic_host(lab)
    assert h.tc("qdisc show dev eth0") == PFIFO_FAST
    assert h.tc("qdisc show dev lo") == "qdisc noqueue 0: root refcnt 2 \n"
    assert h.tc("qdisc add dev eth0 root handle 1: prio bands 4") == ""
    assert h.tc("qdisc add dev eth0 parent 1:4 handle 40: pfifo limit 7") == ""
    out = h.tc("qdisc show dev eth0")
    assert out.splitlines() == [
        "qdisc prio 1: root refcnt 2 bands 4 priomap  1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
        "qdisc pfifo 40: parent 1:4 limit 7p",
    ]
    assert h.tc("qdisc ls dev eth0") == h.tc("q s dev eth0") == out
    assert [ln.split()[:4] for ln in h.tc("class show dev eth0").splitlines()] == [
        ["class", "prio", f"1:{n}", "parent"] for n in range(1, 5)
    ]
    h.tc("qdisc change dev eth0 parent 1:4 handle 40: pfifo limit 9")
    assert "qdisc pfifo 40: parent 1:4 limit 9p" in h.tc("qdisc show dev eth0")
    with fails("RTNETLINK answers: Invalid argument", errno.EINVAL):
        h.tc("qdisc replace dev eth0 root handle 1: prio bands 2")  # priomap has band 3
    h.tc("qdisc replace dev eth0 root handle 1: prio bands 3")  # same handle: a change
    assert "40:" not in h.tc("qdisc show dev eth0")  # band 4 went, and its child with it
    h.tc("qdisc replace dev eth0 root fq_codel")
    assert h.tc("qdisc show dev eth0").startswith("qdisc fq_codel 8001: root refcnt 2 limit 10240p")
    h.tc("qdisc del dev eth0 root")
    assert h.tc("qdisc show dev eth0") == PFIFO_FAST


async def test_errors_are_tcs_and_change_nothing(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = nic_host(lab)
    h.tc("qdisc add dev eth0 root handle 1: prio")
    before = state(h)
    cases = [
        ("qdisc add dev eth9 root pfifo", 'Cannot find device "eth9"'),
        ("qdisc add dev eth0 root handle 1: prio", "Error: Exclusivity flag on, cannot modify."),
        ("qdisc add dev eth0 root handle 2: prio", "Error: NLM_F_REPLACE needed to override."),
        ("qdisc add dev eth0 root foo", "Error: Specified qdisc kind is unknown."),
        ("qdisc add dev eth0 parent 1:9 pfifo", "Error: Specified class not found."),
        ("qdisc add dev eth0 parent 1:1 pfifo limit -1", 'pfifo: Illegal value for "limit": "-1"'),
        ("qdisc add dev eth0 parent 1:1 netem delay 10xs", 'Illegal "latency"'),
        ("qdisc del dev eth0 parent 1:1", "Error: Cannot delete qdisc with handle of zero."),
        ("foo", 'Object "foo" is unknown, try "tc help".'),
    ]
    for command, message in cases:
        with fails(message):
            h.tc(command)
        assert state(h) == before, command
    with pytest.raises(ConfigError) as exc:
        h.tc("qdisc add dev eth0 parent 1:1 tbf rate 1mbit")
    assert str(exc.value).startswith('tbf: the "burst" parameter is mandatory.')
    assert state(h) == before


NETEM_ERRORS = [
    # netem_parse_opt()'s every keyword, as tc (iproute2 6.x) answers it
    ("limit x", 'Illegal "limit"'),
    ("delay", 'Command line is not complete. Try option "help"'),
    ("delay x", 'Illegal "latency"'),
    ("delay 10ms x", 'What is "x"?'),
    ("delay 10ms 5ms x", 'What is "x"?'),
    ("delay 10ms 5ms 1x", 'Illegal "latency"'),
    ("latency 10ms 5x", 'Illegal "latency"'),
    ("loss x", "Unknown loss parameter: x"),
    ("drop foo", "Unknown loss parameter: foo"),
    ("loss 1% loss 2%", 'Illegal "duplicate loss argument\n"'),
    ("loss random x", 'Illegal "loss percent"'),
    ("loss 1% 2x", 'Illegal "loss correlation"'),
    ("loss 1% x", 'What is "x"?'),
    ("loss state x", 'Illegal "loss p13"'),
    ("loss state 1% 2x", 'Illegal "loss p31"'),
    ("loss state 1% 2% 3% 4% 5x", 'Illegal "loss p14"'),
    ("loss state 1% x", 'What is "x"?'),
    ("loss gemodel x", 'Illegal "loss gemodel p"'),
    ("loss gemodel 1% 2x", 'Illegal "loss gemodel r"'),
    ("loss gemodel 1% 2% 3x", 'Illegal "loss gemodel h"'),
    ("loss gemodel 1% 2% 3% 4x", 'Illegal "loss gemodel k"'),
    ("loss gemodel 1% x", 'What is "x"?'),
    ("seed x", 'Illegal "seed"'),
    ("reorder x", 'Illegal "reorder"'),
    ("reorder 5%", "reordering not possible without specifying some delay"),
    ("gap 5", "gap specified without reorder probability"),
    ("gap x", 'Illegal "gap"'),
    ("corrupt x", 'Illegal "corrupt"'),
    ("corrupt 1% 2x", 'Illegal "corrupt"'),
    ("duplicate x", 'Illegal "duplicate"'),
    ("duplicate 1% 2x", 'Illegal "duplicate"'),
    (
        "distribution foo",
        "No distribution data for foo (/usr/lib/tc//foo.dist: No such file or directory)",
    ),
    ("delay 1ms distribution normal", "distribution specified but no latency and jitter values"),
    ("rate x", 'Illegal "rate"'),
    ("rate 1mbit x", 'What is "x"?'),
    ("rate 1mbit -5x", 'Illegal "rate"'),
    ("rate 1mbit 5 7x", 'Illegal "rate"'),
    ("rate 1mbit 5 7 -3x", 'Illegal "rate"'),
    ("slot x", "Unknown slot parameter: x"),
    ("slot 5ms 1ms", 'Illegal "slot max_delay"'),
    ("slot 5x", 'Illegal "slot min_delay"'),
    ("slot 1ms packets x", 'Illegal "slot packets"'),
    ("slot 1ms packets", 'Illegal "slot packets"'),
    ("slot 1ms bytes x", 'Illegal "slot bytes"'),
    ("slot distribution normal x", 'Illegal "slot delay"'),
    ("slot distribution normal 1ms x", 'Illegal "slot jitter"'),
    ("slot distribution normal 1ms 0", "Non-positive jitter"),
    ("ecn", "ecn requested without loss model"),
    ("foo", 'What is "foo"?'),
]


@pytest.mark.parametrize(("options", "message"), NETEM_ERRORS)
async def test_netem_option_errors(
    autojump_clock: trio.testing.MockClock, lab: Lab, options: str, message: str
) -> None:
    h = nic_host(lab)
    before = state(h)
    with pytest.raises(ConfigError) as exc:
        h.tc(f"qdisc add dev eth0 root netem {options}")
    text = str(exc.value)
    assert text.split("\nUsage: ... netem")[0] == message
    usage = message.startswith(("What is", "reordering", "gap ", "ecn ", "distribution spec"))
    assert ("\nUsage: ... netem [ limit PACKETS ]\n" in text) == usage
    assert state(h) == before


async def test_netem_options_all_at_once(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = nic_host(lab)
    h.tc(
        "qdisc add dev eth0 root netem l 50 d 10ms 5ms 25% lo random 1% 5% re 25% 50% g 3 c 1% 10%"
        " du 2% 3% rate 1mbit -4 64 2 slot 1ms 2ms packets 5 bytes 1500 seed 7 ecn"
    )
    assert h.tc("qdisc show dev eth0") == (
        "qdisc netem 8001: root refcnt 2 limit 50 delay 10ms  5ms 25% loss 1% 5% duplicate 2% 3%"
        " reorder 25% 50% corrupt 1% 10% rate 1Mbit packetoverhead -4 cellsize 64 celloverhead 2"
        " slot 1ms 2ms packets 5 bytes 1500 seed 7 ecn  gap 3\n"
    )
    h.tc("qdisc change dev eth0 root netem loss state 1% 2% 3% 4% 5%")
    assert "loss state p13 1% p31 2% p32 3% p23 4% p14 5%" in h.tc("qdisc show dev eth0")
    h.tc("qdisc change dev eth0 root netem loss gemodel 1% 2% 3% 4%")
    assert "loss gemodel p 1% r 2% 1-h 3% 1-k 4%" in h.tc("qdisc show dev eth0")
    with pytest.raises(ConfigError) as exc:
        h.tc("qdisc change dev eth0 root netem help")
    assert str(exc.value).startswith("Usage: ... netem [ limit PACKETS ]\n")


def test_netem_distribution_tables_as_iproute2_generates_them() -> None:
    normal = netem_dist_table("normal")
    pareto = netem_dist_table("pareto")
    paretonormal = netem_dist_table("paretonormal")
    assert normal is not None and pareto is not None and paretonormal is not None
    assert len(normal) == len(pareto) == len(paretonormal) == 4096
    assert normal[:4] == (-32768, -28307, -26871, -25967)  # clamped to SHRT_MIN, then the tail
    assert list(normal) == sorted(normal) and list(pareto) == sorted(pareto)
    assert abs(stats.mean(normal)) < 20 and abs(stats.pstdev(normal) - 8192) < 20
    assert pareto[0] == -5461 and pareto[-1] == 32767  # (1 - 1.5) * 4/3 * 8192, then clamped
    assert netem_dist_table("uniform") is None and netem_dist_table("../x") is None


async def test_netem_distribution_options(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = nic_host(lab)
    h.tc("qdisc add dev eth0 root netem delay 10ms 2ms distribution paretonormal")
    h.tc("qdisc change dev eth0 root netem slot distribution normal 10ms 2ms packets 4")
    assert "slot distribution 10ms 2ms packets 4" in h.tc("qdisc show dev eth0")
    before = state(h)
    with pytest.raises(ConfigError) as exc:
        h.tc("qdisc change dev eth0 root netem delay 10ms distribution normal")
    assert str(exc.value).startswith("distribution specified but no latency and jitter values\n")
    no_table = (
        "No distribution data for uniform (/usr/lib/tc//uniform.dist: No such file or directory)"
    )
    with fails(no_table):
        h.tc("qdisc change dev eth0 root netem delay 10ms 1ms distribution uniform")
    with fails("Non-positive jitter"):
        h.tc("qdisc change dev eth0 root netem slot distribution normal 10ms 0")
    assert state(h) == before


async def test_changing_qdiscs_under_traffic_loses_nothing_silently(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    """Packets queued in a qdisc that is replaced are freed with a drop reason;
    a tbf change keeps what fits in its new limit; the device's counters and
    the new qdisc's stay consistent."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=1_000_000)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    assert await a.ping("10.0.0.2")
    a.tc("qdisc add dev eth0 root handle 1: tbf rate 100kbit burst 2kb limit 50kb")
    socks = [a.socket() for _ in range(3)]
    for i in range(90):
        socks[i % 3].sendto_nowait(b"x" * 400, ("10.0.0.2", 9))
    q = a.dev("eth0").qdisc
    queued = q.qlen
    assert queued == 89  # the bucket let one go at once
    a.tc("qdisc change dev eth0 root handle 1: tbf rate 100kbit burst 2kb limit 50kb")
    assert q.qlen == queued  # a change that still fits keeps every packet
    drops_before = a.drops().get("QUEUE_PURGE", 0)
    a.tc("qdisc replace dev eth0 root pfifo")
    assert a.drops().get("QUEUE_PURGE", 0) - drops_before == queued
    await trio.sleep(1)
    dev = a.dev("eth0").statistics()
    new = a.dev("eth0").qdisc.statistics()
    assert new.qlen == 0 and new.backlog == 0
    # the ARP request, the ping, a's first MLDv2 report and the one datagram tbf let go at
    # once; then, through the new pfifo, a's DAD probe and its second MLDv2 report
    assert (dev.tx_packets, new.packets) == (6, 2)


async def test_default_qdisc_sysctl_and_txqueuelen(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = lab.add_host("h")
    assert h.sysctl("net.core.default_qdisc") == "pfifo_fast"
    h.sysctl("net.core.default_qdisc=fq_codel")
    with fails('sysctl: setting key "net.core.default_qdisc": No such file or directory'):
        h.sysctl("net.core.default_qdisc=nosuch")
    assert h.sysctl("net.core.default_qdisc") == "fq_codel"
    lab.add_link("h:eth0", "h:eth1", kind="nic")
    assert h.tc("qdisc show dev eth0").startswith("qdisc fq_codel 0: root refcnt 2 limit 10240p")
    h.ip("link add d0 type dummy")  # IFF_NO_QUEUE: noqueue whatever the default
    h.ip("link set d0 up")
    assert h.tc("qdisc show dev d0") == "qdisc noqueue 0: root refcnt 2 \n"
    h.sysctl("net.core.default_qdisc=pfifo")
    lab.add_link("h:eth2", "h:eth3", kind="nic", up=False)
    h.ip("link set eth2 txqueuelen 25")
    h.ip("link set eth2 up")
    assert h.tc("qdisc show dev eth2") == "qdisc pfifo 0: root refcnt 2 limit 25p\n"
    assert "qlen 25" in h.ip("link show eth2")
    # a later txqueuelen leaves an existing pfifo's limit alone (fifo_init read it once) …
    h.ip("link set eth2 txqueuelen 40")
    assert h.tc("qdisc show dev eth2") == "qdisc pfifo 0: root refcnt 2 limit 25p\n"
    # … but a new pfifo reads the new value
    h.tc("qdisc add dev eth2 root handle 1: pfifo")
    assert h.tc("qdisc show dev eth2") == "qdisc pfifo 1: root refcnt 2 limit 40p\n"
    with fails('Error: argument "x" is wrong: Invalid "txqueuelen" value'):
        h.ip("link set eth2 txqueuelen x")
    h.ip("link set eth2 txqueuelen -1")  # iproute2 sends it as a u32, as C does
    assert "qlen -1" in h.ip("link show eth2")  # print_txqlen() prints it with %d


async def test_bql_statistics_on_the_tx_queue(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    """The ``byte_queue_limits/`` files of a NIC's tx queue, after traffic."""
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic", rate=10_000_000)
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    assert await a.ping("10.0.0.2")
    sock = a.socket()
    for _ in range(50):
        sock.sendto_nowait(b"x" * 1000, ("10.0.0.2", 9))
    await trio.sleep(0.5)
    dql = a.dev("eth0").tx_queues[0].dql
    st = dql.statistics()
    assert st.inflight == 0  # everything completed
    assert 0 < st.limit <= st.limit_max
    assert st.limit_min == 0 and st.hold_time == 1000  # ms: HZ jiffies of slack hold time
    bql = "class/net/eth0/queues/tx-0/byte_queue_limits"
    assert a.sysfs(f"{bql}/limit") == f"{st.limit}\n"
    assert a.sysfs(f"{bql}/inflight") == "0\n"
    assert a.sysfs(f"{bql}/hold_time") == "1000\n"
    assert a.sysfs(f"{bql}/limit_max") == f"{st.limit_max}\n"
    with fails(
        "cat: /sys/class/net/eth0/queues/tx-1/byte_queue_limits/limit: No such file or directory"
    ):
        a.sysfs("class/net/eth0/queues/tx-1/byte_queue_limits/limit")


# --- fuzzing: any command line either works or fails with a ConfigError ---------------

WORDS = [
    "qdisc", "class", "add", "del", "delete", "change", "replace", "link", "show", "ls",
    "list", "dev", "eth0", "eth9", "lo", "root", "parent", "handle", "1:", "1:1", "1:2",
    "2:", "ffff:", "10:", "pfifo", "bfifo", "pfifo_fast", "pfifo_head_drop", "noqueue",
    "prio", "tbf", "fq_codel", "netem", "limit", "bands", "priomap", "rate", "burst",
    "latency", "peakrate", "mtu", "minburst", "overhead", "linklayer", "atm", "ethernet",
    "flows", "target", "interval", "quantum", "ecn", "noecn", "ce_threshold",
    "memory_limit", "drop_batch", "delay", "distribution", "normal", "uniform", "loss",
    "random", "state", "gemodel", "duplicate", "corrupt", "reorder", "gap", "slot",
    "packets", "bytes", "seed", "1mbit", "10kbit", "1gbit", "2Mibit", "32kb", "10k", "1m",
    "1500", "0", "-1", "4294967296", "10ms", "1s", "100us", "5", "10%", "50%", "100%",
    "0.1%", "1e3", "nan", "inf", "-s", "-d", "-iec", "-r", "help",
]  # fmt: skip


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(
        st.one_of(st.sampled_from(WORDS), st.text(min_size=0, max_size=5)),
        min_size=0,
        max_size=12,
    )
)
@pytest.mark.slow
def test_fuzz_tc_command_lines(words: list[str]) -> None:
    """Each line works or raises ConfigError with a message; a refused line changes nothing."""

    async def main() -> None:
        async with open_lab() as lab:
            h = nic_host(lab)
            h.tc("qdisc add dev eth0 root handle 1: prio")
            h.tc("qdisc add dev eth0 parent 1:2 handle 10: netem delay 1ms")
            quoted = " ".join(shlex.quote(w) for w in words)
            for command in (quoted, f"qdisc add dev eth0 parent 1:1 {quoted}"):
                before = state(h)
                refusal: ConfigError | None = None
                try:
                    out = h.tc(command)
                except ConfigError as e:
                    refusal, out = e, str(e)
                assert isinstance(out, str)
                if refusal is not None:
                    assert out, command  # a refusal always says something
                    assert refusal.errno in (None, *errno.errorcode), command
                    assert state(h) == before, command
            sock = h.socket()  # whatever the qdiscs now are, traffic still flows through them
            h.ip("addr add 10.9.0.1/24 dev eth0")
            with contextlib.suppress(OSError):
                sock.sendto_nowait(b"x" * 100, ("10.9.0.2", 9))
            await trio.sleep(0.1)
            assert h.tc("qdisc show dev lo")

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
