"""``netstack draw``: every topology is legible — boxes and labels apart, nothing cut off.

Each lab below is built from lab-file text (as ``netstack draw`` builds it) and
laid out by both engines: Graphviz's ``dot`` (skipped without it) and the
built-in fallback. The geometry the layout reports is checked: host boxes do
not overlap, link labels overlap neither each other nor a box, every label
lies inside the picture, and no line crosses a box other than its two ends'
(the GRE tunnel once ran straight through the transit router). The SVG
carries every label in full.
"""

from __future__ import annotations

import itertools
import xml.dom.minidom
from pathlib import Path

import pytest

from netstack.labs.draw import (
    Box,
    Geometry,
    HostInfo,
    LinkInfo,
    geometry,
    graphviz_available,
    lab_topology,
    render_svg,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _lab(name: str, hosts: dict[str, list[str]], links: list[str], extra: str = "") -> str:
    text = [f'[lab]\nname = "{name}"\n']
    for host, commands in hosts.items():
        text.append(f"[hosts.{host}]\ncommands = {commands!r}\n".replace("'", '"'))
    text.append(extra)
    for link in links:
        a, b, *kind = link.split()
        text.append(
            f'[[links]]\nends = ["{a}", "{b}"]\n' + (f'kind = "{kind[0]}"\n' if kind else "")
        )
    return "\n".join(text)


def chain() -> str:
    names = ["a", "b", "c", "d"]
    hosts: dict[str, list[str]] = {n: [] for n in names}
    links = []
    for k, (x, y) in enumerate(itertools.pairwise(names)):
        hosts[x].append(f"ip addr add 10.{k}.0.1/24 dev eth1")
        hosts[y].append(f"ip addr add 10.{k}.0.2/24 dev eth0")
        links.append(f"{x}:eth1 {y}:eth0")
    return _lab("chain", hosts, links)


def star() -> str:
    hosts = {"hub": [f"ip addr add 10.0.{i}.1/24 dev eth{i}" for i in range(5)]}
    hosts |= {f"leaf{i}": [f"ip addr add 10.0.{i}.2/24 dev eth0"] for i in range(5)}
    links = [f"hub:eth{i} leaf{i}:eth0" + (" nic" if i % 2 else "") for i in range(5)]
    return _lab("star", hosts, links)


def mesh() -> str:
    names = ["r1", "r2", "r3", "r4"]
    hosts: dict[str, list[str]] = {n: [] for n in names}
    links = []
    for k, (x, y) in enumerate(itertools.combinations(names, 2)):
        dx, dy = f"eth{len(hosts[x])}", f"eth{len(hosts[y])}"
        hosts[x].append(f"ip addr add 10.{k}.0.1/24 dev {dx}")
        hosts[y].append(f"ip addr add 10.{k}.0.2/24 dev {dy}")
        links.append(f"{x}:{dx} {y}:{dy}")
    return _lab("mesh", hosts, links)


def switched() -> str:
    hosts = {n: [f"ip addr add 10.0.0.{i + 1}/24 dev eth0"] for i, n in enumerate("abc")}
    hosts["r"] = ["ip addr add 10.0.0.254/24 dev eth0", "ip addr add 10.9.0.1/24 dev eth1"]
    hosts["w"] = ["ip addr add 10.9.0.2/24 dev eth0"]
    links = [f"{n}:eth0 s1" for n in "abc"] + ["r:eth0 s1", "r:eth1 w:eth0 nic"]
    return _lab("switched", hosts, links, extra="[switches.s1]\nvlan_filtering = false\n")


def tunnel() -> str:
    return (EXAMPLES / "gre_two_sites.toml").read_text(encoding="utf-8")


LABS = {"chain": chain, "star": star, "mesh": mesh, "switched": switched, "tunnel": tunnel}
ENGINES = [
    pytest.param(
        "graphviz",
        marks=pytest.mark.skipif(not graphviz_available(), reason="Graphviz (dot) not installed"),
    ),
    "builtin",
]


def check_legible(geo: Geometry, links: list[LinkInfo]) -> None:
    for (na, a), (nb, b) in itertools.combinations(geo.nodes.items(), 2):
        assert not a.overlaps(b), f"boxes of {na} and {nb} overlap"
    assert sorted(text for text, _ in geo.labels) == sorted(lk.label for lk in links)
    for text, box in geo.labels:
        assert box.inside(geo.canvas), f"label {text!r} is cut off: {box} not in {geo.canvas}"
        for name, node in geo.nodes.items():
            assert not box.overlaps(node), f"label {text!r} lies on {name}"
    for (ta, a), (tb, b) in itertools.combinations(geo.labels, 2):
        assert not a.overlaps(b), f"labels {ta!r} and {tb!r} overlap"
    assert len(geo.paths) == len(links)
    for ends, points in geo.paths:  # no line crosses a box but its own ends'
        assert len(points) > 8, ends
        for name, node in geo.nodes.items():
            if name in ends:
                continue
            inner = Box(node.x0 + 1, node.y0 + 1, node.x1 - 1, node.y1 - 1)
            for x, y in points:
                assert not inner.overlaps(Box(x, y, x, y)), f"the line {ends} crosses {name}"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(LABS))
def test_layout_is_legible(name: str, engine: str) -> None:
    spec, hosts, links = lab_topology(LABS[name](), f"{name}.toml")
    geo = geometry(hosts, links, spec.name, engine=engine)  # type: ignore[arg-type]
    assert set(geo.nodes) >= {h.name for h in hosts}
    check_legible(geo, links)
    svg = render_svg(hosts, links, spec.name, engine=engine)  # type: ignore[arg-type]
    xml.dom.minidom.parseString(svg)  # well-formed
    for lk in links:
        assert lk.label in svg


def test_star_labels_are_apart_and_whole() -> None:
    """The bug this layout replaced: five labels at one spot, one clipped to "th"."""
    _, _, links = lab_topology(star(), "star.toml")
    assert len(links) == 5
    assert sorted(lk.label for lk in links) == ["nic", "nic", "veth", "veth", "veth"]


def test_tunnel_is_a_labelled_dashed_line_between_its_ends() -> None:
    _, _, links = lab_topology(tunnel(), "gre_two_sites.toml")
    dashed = [lk for lk in links if lk.dashed]
    assert dashed == [LinkInfo(("gw1", "gre1"), ("gw2", "gre1"), "gre tunnel", dashed=True)]


def test_switches_are_drawn_as_switches() -> None:
    _, hosts, drawn = lab_topology(switched(), "switched.toml")
    assert HostInfo("s1", (), "switch") in hosts
    assert LinkInfo(("a", "eth0"), ("s1", ""), "veth") in drawn
    for engine in ("builtin", *(["graphviz"] if graphviz_available() else [])):
        svg = render_svg(hosts, drawn, "switched", engine=engine)  # type: ignore[arg-type]
        assert 'id="switch-s1"' in svg and 'id="host-a"' in svg


def test_a_lan_is_an_implicit_switch() -> None:
    text = (
        _lab("lan", {"a": [], "b": []}, [])
        .replace("[hosts.a]", '[hosts.a]\nlans = { eth0 = "A" }')
        .replace("[hosts.b]", '[hosts.b]\nlans = { eth0 = "A" }')
    )
    _, hosts, drawn = lab_topology(text, "lan.toml")
    assert HostInfo("A", (), "switch") in hosts
    assert {lk.b for lk in drawn} == {("A", "")}
