"""The benchmarks' anchors and the targets table run, at tiny sizes (issue 18).

No timing is asserted (the machines are shared): the tests check that every
anchor gives a figure or says why not, that the kernel anchor says it was
skipped without root (``os.geteuid`` patched) or without network namespaces,
and that ``benchmarks/targets.py`` prints its table with every row present and
every number parseable.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import netstack

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks import anchors, targets  # noqa: E402

NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?"


def number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.fixture
def not_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)


def test_trio_floor_gives_packets_and_gbits_per_cpu_second() -> None:
    for anchor in (
        anchors.trio_udp_floor(200, 64),
        anchors.trio_udp_floor(50, 1),
        anchors.trio_bulk_floor(1, 65160),
    ):
        assert anchor.value is not None and anchor.value > 0
        m = re.fullmatch(
            rf"  anchor Trio memory-channel floor: ({NUMBER}) (.+) \((.+)\)", anchor.line()
        )
        assert m is not None, anchor.line()
        assert number(m[1]) > 0
        assert m[2] in ("packets/s per CPU s", "Gbit/s per CPU s")
    assert "lists of 64" in anchors.trio_udp_floor(200, 64).detail
    assert "one per item" in anchors.trio_udp_floor(50, 1).detail


@pytest.mark.usefixtures("not_root")
def test_kernel_anchors_say_skipped_without_root() -> None:
    for anchor in (
        anchors.kernel_udp(100, 64),
        anchors.kernel_udp(100, 1),
        anchors.kernel_tcp(1, 65160),
        anchors.kernel_tcp(1, 65160, tso="off", gso="off", gro="off"),
        anchors.kernel_vxlan_ratio(100, 64),
    ):
        assert anchor.value is None
        assert anchor.line().endswith("kernel anchor skipped: needs root and ip netns (not root)")
        assert anchor.short().endswith(": skipped")


def test_kernel_anchor_says_skipped_when_ip_netns_add_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, ...]] = []

    def ip(*args: str) -> None:
        calls.append(args)
        raise subprocess.CalledProcessError(1, ["ip", *args], "", "mount --make-shared: denied")

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/sbin/{name}")
    monkeypatch.setattr(anchors, "_ip", ip)
    anchor = anchors.kernel_udp(100, 64)
    assert anchor.value is None
    assert anchor.detail == (
        "kernel anchor skipped: needs root and ip netns (ip netns add: mount --make-shared: denied)"
    )
    assert calls == [("netns", "add", calls[0][2])]  # nothing else tried, nothing to delete


@pytest.mark.slow  # two pairs of namespaces, four Python processes
@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_kernel_anchors_run_as_root_and_clean_up() -> None:
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    udp = anchors.kernel_udp(200, 64)
    assert udp.value is not None and udp.value > 0, udp.line()
    tcp = anchors.kernel_tcp(1, 65160, tso="off", gso="off", gro="off")
    if shutil.which("ethtool") is None:
        assert tcp.value is None and tcp.detail.endswith("(no ethtool)"), tcp.line()
    else:
        assert tcp.value is not None and tcp.value > 0, tcp.line()
        assert "IPv4, TSO off, GSO off, GRO off" in tcp.detail
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "nsanc-" not in after.replace(before, "")


@pytest.mark.usefixtures("not_root")
def test_targets_table_has_every_row_with_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    rows = targets.main(["--scale", "0.005"])
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(rf"netstack targets \(issue 18\): .*load average {NUMBER} .*", out[0])
    assert out[1] == f"netstack measured: {targets.which_netstack()}"
    assert out[2:4] == ["| target | figure | anchor(s) | met/missed |", "|---|---|---|---|"]
    assert out[4:-1] == [row.markdown() for row in rows]
    assert out[-1].startswith("load average after: ")
    assert [row.target.split(" ≥ ")[0].split(" adds")[0] for row in rows] == [
        "UDP 200 B, sendmmsg/recvmmsg of 64",
        "UDP 200 B, one send/recv per datagram",
        "Router hop ≤ 3 µs of CPU per packet (routed less direct)",
        "UDP through GRE",
        "UDP through IPIP",
        "TCP bulk, GSO+GRO",
        "TCP bulk, every offload off",
    ]
    for row in rows:
        assert row.verdict in ("met", "missed")
        figure = re.match(rf"(?:adds )?(-?{NUMBER})", row.figure)
        assert figure is not None, row.figure
        number(figure[1])
        assert "kernel" in row.anchors and "skipped" in row.anchors
    udp, per_call = rows[0], rows[1]
    for row in (udp, per_call):
        floor = re.search(rf"Trio memory-channel floor ({NUMBER})", row.anchors)
        assert floor is not None and number(floor[1]) > 0
    assert "no anchor: no gre/ipip module" in rows[3].anchors


def test_lab_rows_run_lab_scale_in_a_process_of_its_own() -> None:
    """``targets.py --lab N``: the build, peak RSS and ping rows from lab_scale's JSON line."""
    rows = targets.lab_rows(12, verbose=False)
    assert [row.target for row in rows] == [
        "12 hosts (+ 3 routers) built in ≤ 10 s of CPU",
        "12 hosts (+ 3 routers): peak RSS ≤ 1 GB",
        "12 hosts (+ 3 routers): each pings a neighbour, all at once, in ≤ 2 s of CPU",
    ]
    assert all(row.verdict in ("met", "missed") for row in rows)
    assert re.fullmatch(rf"{NUMBER} s", rows[0].figure)
    assert re.fullmatch(
        rf"{NUMBER} GB \(built {NUMBER} MB, after the pings {NUMBER} MB\)", rows[1].figure
    )
    assert rows[2].figure.endswith("s (12 answered)")


def test_targets_measures_the_netstack_on_pythonpath(tmp_path: Path) -> None:
    """A build made with ``build_compiled.py --dest DIR`` is run with
    ``PYTHONPATH=DIR``: ``targets.py`` must import that netstack, not this
    checkout's (it put the checkout first on ``sys.path`` before importing, and
    measured the pure package whatever PYTHONPATH said)."""
    (tmp_path / "netstack").symlink_to(ROOT / "netstack")
    code = (
        "import runpy\n"
        f"runpy.run_path({str(ROOT / 'benchmarks' / 'targets.py')!r}, run_name='not_main')\n"
        "import netstack\n"
        "print(netstack.__file__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path.parent,
        env=env,
        text=True,
        capture_output=True,
        check=True,
    ).stdout
    assert out.strip() == str(tmp_path / "netstack" / "__init__.py")


def test_targets_says_which_netstack_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the pure package here, a build in CI's compiled step
    assert targets.which_netstack().startswith(("the pure package (", "a compiled build ("))
    fake = tmp_path / "netstack"
    (fake / "core").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    for name in ("_compiled__mypyc", "core/dev", "core/skbuff"):
        (fake / f"{name}.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    monkeypatch.setattr(netstack, "__file__", str(fake / "__init__.py"))
    assert targets.which_netstack() == f"a compiled build (2 modules compiled, {fake})"
