# ruff: noqa: E501 - lab-file snippets and their messages read best on one line
"""Lab files: the schema, positions of errors, building, steps and checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

import netstack
from netstack.labs.labfile import SCHEMA, LabFileError, build_lab, parse_lab, run_lab
from netstack.labs.session import Session
from netstack.labs.tomlpos import locate
from netstack.labs.units import parse_rate, parse_size, parse_time

GOOD = """\
[lab]
name = "t"
seed = 3

[hosts.a]
commands = ["ip addr add 10.0.0.1/24 dev eth0"]

[hosts.b]
cpus = 2
sysctls = { "net.ipv4.ip_forward" = 1 }
commands = [
    "ip addr add 10.0.0.2/24 dev eth0",
]

[[links]]
ends = ["a:eth0", "b:eth0"]
kind = "nic"
rate = "10mbit"
delay = "2ms"
mtu = 1400
"""


def problems(text: str) -> list[str]:
    with pytest.raises(LabFileError) as info:
        parse_lab(text, "lab.toml")
    return info.value.problems


def test_good_file_parses() -> None:
    spec = parse_lab(GOOD, "lab.toml")
    assert spec.name == "t" and spec.seed == 3
    assert [h.name for h in spec.hosts] == ["a", "b"]
    assert spec.hosts[1].cpus == 2 and spec.hosts[1].sysctls == {"net.ipv4.ip_forward": 1}
    assert spec.hosts[1].commands[0].where == "lab.toml:12:5"
    link = spec.links[0]
    assert (link.a, link.b, link.kind, link.rate, link.delay, link.mtu) == (
        "a:eth0", "b:eth0", "nic", 10e6, 0.002, 1400,
    )  # fmt: skip


def test_steps_after_a_table_belong_to_it() -> None:
    # TOML: `steps` after [[links]] is a key of that link — reported with its line
    assert problems(GOOD + 'steps = ["a ping -c 1 b"]\n') == [
        "lab.toml:21:1: unknown key 'steps' in [[links]]",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[hosts.a]\ncpu = 2\n", ["lab.toml:2:1: unknown key 'cpu' in [hosts.a] (did you mean 'cpus'?)"]),
        ("[hosts.a]\n[hosts.a]\n", ["lab.toml:2:9: duplicate host 'a' (a [hosts.a] table already exists)"]),
        ("[hosts.a]\n[[links]]\nends = [\"a:eth0\", \"b:eth0\"]\n",
         ["lab.toml:3:19: link to unknown host 'b' (hosts: a)"]),
        ("[hosts.a]\n[hosts.b]\n[[links]]\nends = [\"a:eth0\", \"b:eth0\"]\n"
         "[[links]]\nends = [\"a:eth0\", \"b:eth1\"]\n",
         ["lab.toml:6:9: device a:eth0 is already used by the link at lab.toml:3:1"]),
        ("[hosts.a]\ncpus = \"two\"\n", ["lab.toml:2:1: 'cpus' must be an integer, not a string"]),
        ("[hosts.a]\ncpus = 0\n", ["lab.toml:2:1: cpus: must be 1..8192 (NR_CPUS)"]),
        ("[hosts.a]\n[hosts.b]\n[[links]]\nends = [\"a:eth0\", \"b:eth0\"]\nrate = \"fast\"\n",
         ["lab.toml:5:1: rate: invalid rate 'fast'"]),
        ("[hosts.a]\n[hosts.b]\n[[links]]\nends = [\"a:eth0\", \"b:eth0\"]\nrate = \"1mbit\"\n",
         ["lab.toml:5:1: veth links have no rate or delay; use kind = \"nic\""]),
        ("[[links]]\nkind = \"nic\"\n", ["lab.toml:1:1: [[links]] needs 'ends'"]),
        ("[hosts.a]\npatches = { hh_fast = false }\n", ["lab.toml:2:1: patches: unknown patch 'hh_fast'"]),
        ("[hosts.a]\n[[captures]]\ndev = \"z:eth0\"\n", ["lab.toml:3:1: capture on unknown host 'z'"]),
        ("checks = [\"a ping b\", 3]\n", ["lab.toml:1:1: checks: item 2 is not a string"]),
        ("[lab]\nname = \n", ["lab.toml:2:8: Invalid value"]),
        ("bogus = 1\n", ["lab.toml:1:1: unknown key 'bogus' in the lab file"]),
    ],
)  # fmt: skip
def test_errors_point_at_the_line(text: str, expected: list[str]) -> None:
    got = problems(text)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.startswith(e), (g, e)


def test_every_problem_is_reported_at_once() -> None:
    got = problems(
        '[hosts.a]\ncpu = 1\n[hosts.b]\nhz = "x"\n[[links]]\nends = ["a:eth0", "c:eth0"]\n'
    )
    assert [p.split(": ")[0] for p in got] == ["lab.toml:2:1", "lab.toml:4:1", "lab.toml:6:19"]


def test_schema_documents_every_key() -> None:
    for table, keys in SCHEMA.items():
        for key in keys:
            assert key.doc, (table, key.name)
            if table:
                assert key.example, (table, key.name)


def test_locate_positions() -> None:
    text = '[a]\nx = [\n  "1",  # c\n  \'2\',\n]\ny = { "p.q" = 1, r.s = 2 }\n[[l]]\nz = """\n[x]\n"""\n[[l]]\nz = 1\n'
    pos = locate(text)
    assert pos[("a", "x", 0)] == (3, 3)
    assert pos[("a", "x", 1)] == (4, 3)
    assert pos[("a", "y", "p.q")] == (6, 7)
    assert pos[("a", "y", "r", "s")] == (6, 18)
    assert pos[("l", 0, "z")] == (8, 1)
    assert pos[("l", 1, "z")] == (12, 1)
    assert ("x",) not in pos  # inside a multi-line string


def test_units() -> None:
    assert parse_rate("100mbit") == 1e8 and parse_rate("1gbit") == 1e9 and parse_rate(5e6) == 5e6
    assert parse_rate("1mbps") == 8e6 and parse_rate("1kibit") == 1024
    assert parse_time("5ms") == 0.005 and parse_time("250us") == 0.00025 and parse_time(2) == 2.0
    assert parse_size("32kb") == 32768 and parse_size(100) == 100
    for bad in ("fast", "-1mbit", "10 parsecs"):
        with pytest.raises(ValueError, match="invalid rate"):
            parse_rate(bad)


async def build_and_run(text: str, tmp_path: Path | None = None) -> tuple[object, list[str]]:
    spec = parse_lab(text, "lab.toml")
    lines: list[str] = []
    error: LabFileError | None = None
    report = None
    async with netstack.open_lab(seed=spec.seed) as lab, trio.open_nursery() as nursery:
        session = Session(lab, nursery, out=lines.append, err=lines.append)
        try:
            await build_lab(spec, lab, session, pcap_dir=tmp_path, echo=lines.append)
            report = await run_lab(spec, session)
        except LabFileError as e:
            error = e
        nursery.cancel_scope.cancel()
    if error is not None:
        raise error
    return report, lines


ROUTED = """\
[hosts.a]
commands = ["ip addr add 10.0.1.1/24 dev eth0", "ip route add default via 10.0.1.254"]
[hosts.r]
commands = ["ip addr add 10.0.1.254/24 dev eth0", "ip addr add 10.0.2.254/24 dev eth1",
            "sysctl -w net.ipv4.ip_forward=1"]
[hosts.b]
commands = ["ip addr add 10.0.2.2/24 dev eth0", "ip route add default via 10.0.2.254"]
[[links]]
ends = ["a:eth0", "r:eth0"]
[[links]]
ends = ["r:eth1", "b:eth0"]
kind = "nic"
rate = "100mbit"
delay = "1ms"
[[captures]]
dev = "r:eth1"
"""


async def test_build_run_checks(autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    text = ROUTED.replace(
        "[hosts.a]",
        'steps = ["b tcpdump -c 2 -i eth0 icmp &", "a ping -c 2 b", "wait"]\n'
        'checks = ["a ping -c 1 b", "r expect IpForwDatagrams >= 4", "! a ping -c 1 -W 1 10.9.9.9",\n'
        '          "b expect eth0.rx_packets == 0"]\n[hosts.a]',
        1,
    )
    report, lines = await build_and_run(text, tmp_path)
    assert [c.passed for c in report.checks] == [True, True, True, False]  # type: ignore[attr-defined]
    assert "r# sysctl -w net.ipv4.ip_forward=1" in lines and "net.ipv4.ip_forward = 1" in lines
    failed = report.checks[3]  # type: ignore[attr-defined]
    assert failed.status == 1 and "expected == 0" in failed.output
    assert report.summary().startswith("4 checks: 3 passed, 1 failed")  # type: ignore[attr-defined]
    assert (tmp_path / "r-eth1.pcap").stat().st_size > 24


async def test_failing_command_stops_with_line_and_iproute2s_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    text = ROUTED.replace(
        '"ip addr add 10.0.2.2/24 dev eth0"', '"ip addr add 10.0.2.2/33 dev eth0"'
    )
    with pytest.raises(LabFileError) as info:
        await build_and_run(text)
    assert str(info.value) == (
        "lab.toml:7:13: b: ip addr add 10.0.2.2/33 dev eth0: "
        'Error: any valid prefix is expected rather than "10.0.2.2/33".'
    )


async def test_capture_on_missing_device(autojump_clock: trio.testing.MockClock) -> None:
    with pytest.raises(
        LabFileError, match=r'lab\.toml:15:1: capture: Cannot find device "eth9" on r'
    ):
        await build_and_run(ROUTED.replace('dev = "r:eth1"', 'dev = "r:eth9"'))


async def test_failing_step(autojump_clock: trio.testing.MockClock) -> None:
    text = 'steps = ["a ping -c 1 -W 1 10.9.9.9"]\n' + ROUTED
    with pytest.raises(
        LabFileError, match=r"lab.toml:1:10: step failed: a ping -c 1 -W 1 10.9.9.9"
    ):
        await build_and_run(text)


def test_example_lab_files_are_valid() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    files = sorted(examples.glob("*.toml"))
    assert files
    for path in files:
        parse_lab(path.read_text(), path)


def test_demo_lab_is_the_example() -> None:
    from netstack.cli.demo import DEMO_LAB

    examples = Path(__file__).resolve().parents[2] / "examples"
    assert DEMO_LAB.read_text() == (examples / "demo.toml").read_text()
