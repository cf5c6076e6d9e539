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
