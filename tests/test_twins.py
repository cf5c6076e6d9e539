"""The Twin: lines of per-family twins name each other (scripts/twins.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _twins() -> ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("twins", ROOT / "scripts" / "twins.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def test_twin_lines_are_parsed_from_docstrings() -> None:
    twins = _twins()
    doc = """Do it.

    Twin: netstack.ipv6.a.f, ``netstack.ipv6.a.g``.
    Kernel: net/ipv4/a.c, f().
    """
    assert twins.twins_of(doc) == ("netstack.ipv6.a.f", "netstack.ipv6.a.g")
    assert twins.twins_of("No twin. Kernel: f().") == ()


def test_a_missing_or_one_sided_twin_is_reported() -> None:
    twins = _twins()
    p = ROOT / "netstack" / "x.py"
    index = {
        "netstack.ipv4.a.f": (p, 1, ("netstack.ipv6.a.f6",)),
        "netstack.ipv6.a.f6": (p, 2, ()),  # does not name f back
        "netstack.ipv4.a.g": (p, 3, ("netstack.ipv6.a.gone",)),
        "netstack.ipv4.a.h": (p, 4, ("netstack.ipv6.a.h6",)),
        "netstack.ipv6.a.h6": (p, 5, ("netstack.ipv4.a.h",)),
    }
    assert twins.problems(index) == [
        "netstack/x.py:1: netstack.ipv4.a.f: Twin netstack.ipv6.a.f6 does not name it back"
        " (add a Twin: line there)",
        "netstack/x.py:3: netstack.ipv4.a.g: Twin netstack.ipv6.a.gone does not exist",
    ]


@pytest.mark.slow
def test_every_twin_in_the_tree_names_its_twin_back() -> None:
    twins = _twins()
    index = twins.twins()
    assert twins.problems(index) == []
    assert index["netstack.ipv4.ip_output.ip_finish_output2"][2] == (
        "netstack.ipv6.ip6_output.ip6_finish_output2",
    )
