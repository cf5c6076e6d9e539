"""Project-level checks: the public API, the kernel map, the CLI demo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import netstack
from netstack.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parent.parent


def test_public_api() -> None:
    assert sorted(netstack.__all__) == sorted(
        [
            "Capture",
            "ConfigError",
            "Host",
            "Lab",
            "Link",
            "NetstackError",
            "Patches",
            "PingReply",
            "PingResult",
            "Port",
            "SkbPanic",
            "TopologyError",
            "__version__",
            "open_lab",
            "run",
        ]
    )
    for name in netstack.__all__:
        assert hasattr(netstack, name)


def test_patches_are_the_seed_table() -> None:
    assert netstack.Patches.names() == (
        "gre_lltx",
        "gre_lltx_ioctl",
        "neigh_confirm_elide",
        "hh_fast_copy",
        "ipip_sit_gro",
        "qdisc_bulk_dequeue",
        "qdisc_validate_unlocked",
    )
    assert all(getattr(netstack.Patches(), n) for n in netstack.Patches.names())
    assert not any(getattr(netstack.Patches.none(), n) for n in netstack.Patches.names())
    before = netstack.Patches.before("hh_fast_copy")
    assert before.applied() == tuple(n for n in netstack.Patches.names() if n != "hh_fast_copy")


@pytest.mark.slow
def test_kernel_map_is_current() -> None:
    rc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_kernel_map.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert rc.returncode == 0, rc.stdout


@pytest.mark.slow
def test_kernel_markers_match_the_docstrings() -> None:
    """Every ``Kernel:`` line naming kernel files or functions has its
    ``@kernel(...)`` marker and no marker lacks one (scripts/kernel_markers.py)."""
    rc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "kernel_markers.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert rc.returncode == 0, rc.stdout


def test_demo_runs(capsys: object) -> None:
    assert cli_main(["demo"]) == 0


# tests/ mirrors netstack/: a test of netstack/X/… lives in tests/X/. These
# folders are cross-cutting on purpose and have no package of their own.
CROSS_CUTTING_TEST_DIRS = {
    "fuzz",  # hypothesis and mutated frames at every receive handler
    "packetdrill",  # .pkt scripts, run here and against the real kernel
    "reliability",  # issue 13's bounds: every table under floods of hostile input
}


def test_tests_mirror_the_packages() -> None:
    tests = ROOT / "tests"
    stray = []
    for d in sorted(tests.rglob("*")):
        rel = d.relative_to(tests)
        if not d.is_dir() or "__pycache__" in rel.parts or rel.parts[0] in CROSS_CUTTING_TEST_DIRS:
            continue
        if not any(d.glob("*.py")) and not any(p.is_dir() for p in d.iterdir()):
            continue  # what tests leave behind (captures, caches), not a layer
        if not (ROOT / "netstack" / rel).is_dir():
            stray.append(str(rel))
    assert sorted(d for d in CROSS_CUTTING_TEST_DIRS if not (tests / d).is_dir()) == []
    assert stray == [], (
        f"tests/{stray[0]} has no netstack/{stray[0]}: put the tests in the folder of "
        "the layer they test, or name the folder in CROSS_CUTTING_TEST_DIRS with a reason"
    )
