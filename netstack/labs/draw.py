"""``netstack draw``: a lab's topology as a picture (SVG; PNG via CairoSVG).

Theory of operation: :func:`lab_svg` builds the lab of a lab file in virtual
time — so the picture shows what the commands made: addresses, tunnel
devices, their remote ends — and :func:`topology` reads it back as hosts
(each a box listing its devices with their kind and IPv4 addresses),
switches, links (labelled with their kind, rate and delay) and tunnels
(dashed lines between the two ends' tunnel devices, labelled with the kind).

Layout is Graphviz's ``dot`` (``pip install 'netstack[draw]'`` for the
Python binding, and the ``graphviz`` system package for ``dot`` itself):
hosts are HTML-like tables whose rows are ports, so a link leaves the row of
its device; ``dot`` ranks the hosts left to right, routes the lines around
the boxes and places every link label as a node of its own, so no two labels
meet and none is cut off — a star, a mesh, a switched LAN and a tunnel across
a transit router stay legible. Without Graphviz a built-in layout draws the
same picture: hosts in columns by their distance in links from the first,
labels slid along their line until they meet nothing, tunnels as arcs over
the boxes; it is made for small labs. :func:`geometry` gives the boxes of
either layout (hosts and labels) for tests.

Switches (``[switches.NAME]`` or a LAN name in a lab file,
``lab.add_switch``) are drawn as a box of their own shape, without their
ports; a link to a switch ends on the box.
"""

from __future__ import annotations

import html
import importlib
import itertools
import json
import math
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import attrs
import trio

from netstack.core.netdevice import IFF_UP
from netstack.errors import NetstackError
from netstack.wire.ipv4 import ntoa
from netstack.wire.rtnetlink import IFA_F_SECONDARY

if TYPE_CHECKING:
    from netstack.host import Host, Lab
    from netstack.labs.labfile import LabSpec

__all__ = [
    "Box",
    "Geometry",
    "HostInfo",
    "LinkInfo",
    "draw_lab_file",
    "geometry",
    "graphviz_available",
    "lab_svg",
    "render_svg",
    "svg_only",
    "topology",
]

Engine = Literal["auto", "graphviz", "builtin"]

_FONT = "DejaVu Sans Mono"
_FONT_SIZE = 11
_LABEL_SIZE = 10
_CHAR_W = 0.62  # a monospace character's advance, in font sizes
_HOST_FILL, _HOST_LINE = "#eef4fb", "#2b5d8a"
_SWITCH_FILL, _SWITCH_LINE = "#fdf0d5", "#9a6b1f"
_TUNNEL = "#b5651d"


@attrs.frozen
class DevInfo:
    name: str
    kind: str
    addrs: tuple[str, ...]
    remote: str | None = None

    @property
    def text(self) -> str:
        return f"{self.name} ({self.kind})" + (f" {', '.join(self.addrs)}" if self.addrs else "")


@attrs.frozen
class HostInfo:
    name: str
    devices: tuple[DevInfo, ...]
    kind: str = "host"  # or "switch"


@attrs.frozen
class LinkInfo:
    """A line of the picture: ``(host, device)`` to ``(host, device)``; device "" for a
    switch (or a tunnel end whose device is unknown)."""

    a: tuple[str, str]
    b: tuple[str, str]
    label: str
    dashed: bool = False


@attrs.frozen
class Box:
    """An axis-aligned box, y growing downwards (SVG's coordinates)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box, margin: float = 0.0) -> bool:
        return not (
            self.x1 + margin <= other.x0
            or other.x1 + margin <= self.x0
            or self.y1 + margin <= other.y0
            or other.y1 + margin <= self.y0
        )

    def inside(self, other: Box) -> bool:
        return (
            self.x0 >= other.x0
            and self.y0 >= other.y0
            and self.x1 <= other.x1
            and self.y1 <= other.y1
        )


@attrs.frozen
class Geometry:
    """Where a layout put things: the canvas, each node's box, each label's box."""

    canvas: Box
    nodes: dict[str, Box]
    labels: list[tuple[str, Box]]
    # each line: its two nodes and points along it
    paths: list[tuple[tuple[str, str], list[tuple[float, float]]]] = attrs.field(factory=list)


# -- the lab as a picture's model --------------------------------------------------------------
def _addrs(dev: Any) -> tuple[str, ...]:
    in_dev = dev.ip_ptr
    if in_dev is None:
        return ()
    out = []
    for ifa in in_dev.ifa_list:
        text = f"{ntoa(ifa.ifa_local)}/{ifa.ifa_prefixlen}"
        out.append(text + (" (sec)" if ifa.ifa_flags & IFA_F_SECONDARY else ""))
    return tuple(out)


def _remote(dev: Any) -> str | None:
    """The remote address of a point-to-point tunnel device, if it has one (duck-typed)."""
    for owner in (dev, getattr(dev, "priv", None)):
        parms = getattr(owner, "parms", None)
        for candidate in (parms, owner):
            remote = getattr(candidate, "remote", None) or getattr(candidate, "daddr", None)
            if isinstance(remote, int) and remote:
                return ntoa(remote)
            if isinstance(remote, str) and remote:
                return remote
    return None


def topology(
    lab: Lab,
    link_labels: dict[tuple[str, str], str] | None = None,
    switches: Iterable[str] = (),
) -> tuple[list[HostInfo], list[LinkInfo]]:
    """Hosts, switches, devices and links of a built lab, as the picture shows them.

    *switches* names the lab's switches (drawn as switches, without their
    ports); a switch the lab does not hold as a host is added as a node.
    """
    switch_names = set(switches)
    switch_names.update(getattr(lab, "switches", None) or ())
    hosts = []
    for host in lab.hosts.values():
        if host.name in switch_names:
            hosts.append(HostInfo(host.name, (), "switch"))
            continue
        devs = tuple(
            DevInfo(d.name, d.kind or "device", _addrs(d), _remote(d))
            for d in host.devices
            # lo, and the fallback devices a tunnel module brings (gre0, tunl0…: down, unused)
            if d.name != "lo" and (d.flags & IFF_UP or _addrs(d) or _remote(d))
        )
        hosts.append(HostInfo(host.name, devs))
    hosts.extend(HostInfo(s, (), "switch") for s in sorted(switch_names - set(lab.hosts)))
    links = []
    for link in lab.links:
        a = (_host_of(lab, link.a), link.a.name)
        b = (_host_of(lab, link.b), link.b.name)
        label = (link_labels or {}).get((f"{a[0]}:{a[1]}", f"{b[0]}:{b[1]}"), link.kind)
        a = (a[0], "") if a[0] in switch_names else a
        b = (b[0], "") if b[0] in switch_names else b
        links.append(LinkInfo(a, b, label))
    owner = {addr.split("/")[0]: h.name for h in hosts for d in h.devices for addr in d.addrs}
    for h in hosts:
        for d in h.devices:
            if d.remote is not None and d.remote in owner and owner[d.remote] != h.name:
                peer = owner[d.remote]
                twin = next(
                    (
                        x.name
                        for x in next(hh for hh in hosts if hh.name == peer).devices
                        if x.kind == d.kind and x.remote is not None
                    ),
                    None,
                )
                if twin is not None and (peer, twin) < (h.name, d.name):
                    continue  # the other end draws it
                label = f"{d.kind} tunnel"
                links.append(LinkInfo((h.name, d.name), (peer, twin or ""), label, dashed=True))
    return hosts, links


def _host_of(lab: Lab, dev: Any) -> str:
    for host in lab.hosts.values():
        if host.net is dev.net:
            return host.name
    return "?"


# -- Graphviz ----------------------------------------------------------------------------------
def graphviz_available() -> bool:
    """True if the ``graphviz`` package and Graphviz's ``dot`` are both installed."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def _port(name: str) -> str:
    return "p_" + re.sub(r"\W", lambda m: f"_{ord(m[0]):x}", name)


def _host_label(h: HostInfo) -> str:
    rows = [f'<TR><TD ALIGN="LEFT"><B>{html.escape(h.name)}</B></TD></TR>']
    rows += [
        f'<TR><TD PORT="{_port(d.name)}" ALIGN="LEFT">{html.escape(d.text)}</TD></TR>'
        for d in h.devices
    ]
    if not h.devices:
        rows.append('<TR><TD ALIGN="LEFT"> </TD></TR>')
    return (
        f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" '
        f'BGCOLOR="{_HOST_FILL}" COLOR="{_HOST_LINE}" STYLE="rounded">{"".join(rows)}</TABLE>>'
    )


def to_dot(hosts: list[HostInfo], links: list[LinkInfo], title: str = "") -> Any:
    """The picture as a ``graphviz.Graph`` (``dot``, left to right)."""
    import graphviz

    g = graphviz.Graph(
        "lab",
        graph_attr={
            "rankdir": "LR",
            "nodesep": "0.35",
            "ranksep": "0.8",
            "pad": "0.25",
            "fontname": _FONT,
            "fontsize": "14",
            "label": title,
            "labelloc": "t",
            "bgcolor": "white",
        },
        node_attr={"fontname": _FONT, "fontsize": str(_FONT_SIZE)},
        edge_attr={
            "fontname": _FONT,
            "fontsize": str(_LABEL_SIZE),
            "color": "#333333",
            "penwidth": "1.5",
        },
    )
    for h in hosts:
        if h.kind == "switch":
            g.node(
                h.name,
                label=f"{h.name}\nswitch",
                shape="box3d",
                style="filled",
                fillcolor=_SWITCH_FILL,
                color=_SWITCH_LINE,
                id=f"switch-{h.name}",
            )
        else:
            g.node(h.name, label=_host_label(h), shape="plain", id=f"host-{h.name}")
    kinds = {h.name: h.kind for h in hosts}
    for link in links:

        def end(e: tuple[str, str]) -> str:
            return e[0] if not e[1] or kinds.get(e[0]) == "switch" else f"{e[0]}:{_port(e[1])}"

        attrs_: dict[str, str] = {"label": link.label, "class": "link"}
        if link.dashed:
            attrs_.update(style="dashed", color=_TUNNEL, fontcolor=_TUNNEL, constraint="false")
        g.edge(end(link.a), end(link.b), **attrs_)
    return g


def svg_only(svg: str) -> str:
    """Graphviz's SVG without its XML prolog, doctype and comments."""
    start = svg.find("<svg")
    svg = re.sub(r"<!--.*?-->\n?", "", svg[start:], flags=re.DOTALL).replace("&#45;", "-")
    fallback = {
        _FONT: f"{_FONT}, Menlo, Consolas, monospace",
        "DejaVu Sans": "DejaVu Sans, sans-serif",
    }
    return re.sub(
        r'font-family="([^"]+)"', lambda m: f'font-family="{fallback.get(m[1], m[1])}"', svg
    )


def _dot_geometry(g: Any) -> Geometry:
    data = json.loads(g.pipe(format="json", engine="dot"))
    x0, y0, x1, y1 = (float(v) for v in data["bb"].split(","))
    height = y1

    def flip(x: float, y: float) -> tuple[float, float]:
        return x, height - y

    nodes: dict[str, Box] = {}
    for obj in data.get("objects", []):
        if "pos" not in obj:
            continue
        x, y = flip(*(float(v) for v in obj["pos"].split(",")))
        w, h = float(obj["width"]) * 72, float(obj["height"]) * 72
        nodes[obj["name"]] = Box(x - w / 2, y - h / 2, x + w / 2, y + h / 2)
    labels = []
    names = {obj["_gvid"]: obj.get("name", "") for obj in data.get("objects", [])}
    paths: list[tuple[tuple[str, str], list[tuple[float, float]]]] = []
    for edge in data.get("edges", []):
        points: list[tuple[float, float]] = []
        for op in edge.get("_draw_", []):
            if op["op"] in ("b", "B"):  # a B-spline as cubic Bézier segments: sample them
                pts = [flip(*p) for p in op["points"]]
                for i in range(0, len(pts) - 3, 3):
                    p0, p1, p2, p3 = pts[i : i + 4]
                    for k in range(9):
                        t = k / 8
                        points.append(
                            (
                                (1 - t) ** 3 * p0[0] + 3 * (1 - t) ** 2 * t * p1[0]
                                + 3 * (1 - t) * t * t * p2[0] + t**3 * p3[0],
                                (1 - t) ** 3 * p0[1] + 3 * (1 - t) ** 2 * t * p1[1]
                                + 3 * (1 - t) * t * t * p2[1] + t**3 * p3[1],
                            )
                        )  # fmt: skip
        paths.append(((names.get(edge["tail"], ""), names.get(edge["head"], "")), points))
        size = float(_LABEL_SIZE)
        for op in edge.get("_ldraw_", []):
            if op["op"] == "F":
                size = float(op["size"])
            elif op["op"] == "T":
                x, y = flip(*op["pt"])
                w = float(op["width"])
                left = {"l": x, "r": x - w}.get(op["align"], x - w / 2)
                labels.append((op["text"], Box(left, y - size, left + w, y + 0.3 * size)))
    return Geometry(Box(x0, 0.0, x1, y1 - y0), nodes, labels, paths)


# -- the built-in layout (no Graphviz) ---------------------------------------------------------
_BOX_PAD = 10
_ROW_H = 18
_HEAD_H = 26
_COL_GAP = 170
_ROW_GAP = 40
_MARGIN = 30


def _text_w(text: str, size: float) -> float:
    return len(text) * size * _CHAR_W


@attrs.define
class _Builtin:
    """The built-in layout: columns by BFS distance, labels slid along their lines."""

    hosts: list[HostInfo]
    links: list[LinkInfo]
    title: str
    boxes: dict[str, Box] = attrs.field(factory=dict)
    anchors: dict[tuple[str, str], tuple[float, float, float]] = attrs.field(factory=dict)
    lines: list[tuple[LinkInfo, list[tuple[float, float]], tuple[str, Box] | None]] = attrs.field(
        factory=list
    )
    canvas: Box = Box(0, 0, 0, 0)

    def layout(self) -> None:
        adj: dict[str, set[str]] = {h.name: set() for h in self.hosts}
        for link in self.links:
            if link.a[0] in adj and link.b[0] in adj and not link.dashed:
                adj[link.a[0]].add(link.b[0])
                adj[link.b[0]].add(link.a[0])
        order = [h.name for h in self.hosts]
        col: dict[str, int] = {}
        for h in self.hosts:
            if h.name in col:
                continue
            col[h.name] = max(col.values(), default=-1) + 1
            queue = [h.name]
            while queue:
                cur = queue.pop(0)
                for nxt in sorted(adj[cur], key=order.index):
                    if nxt not in col:
                        col[nxt] = col[cur] + 1
                        queue.append(nxt)
        ncols = max(col.values(), default=0) + 1
        widths = [0.0] * ncols
        size: dict[str, tuple[float, float]] = {}
        for h in self.hosts:
            if h.kind == "switch":
                w, hh = _text_w(h.name + " switch", _FONT_SIZE) + 2 * _BOX_PAD, 34.0
            else:
                texts = [h.name, *(d.text for d in h.devices)]
                w = max(_text_w(t, _FONT_SIZE) for t in texts) + 2 * _BOX_PAD
                hh = _HEAD_H + _ROW_H * max(len(h.devices), 1) + 8
            size[h.name] = (w, hh)
            widths[col[h.name]] = max(widths[col[h.name]], w)
        top = _MARGIN + (30 if self.title else 0) + 40  # room for tunnel arcs
        xs = [_MARGIN + sum(widths[:c]) + c * _COL_GAP for c in range(ncols)]
        ys = dict.fromkeys(range(ncols), float(top))
        for h in self.hosts:
            c = col[h.name]
            w, hh = size[h.name]
            self.boxes[h.name] = Box(xs[c], ys[c], xs[c] + w, ys[c] + hh)
            ys[c] += hh + _ROW_GAP
            for i, d in enumerate(h.devices):
                ry = ys[c] - hh - _ROW_GAP + _HEAD_H + i * _ROW_H + 8
                self.anchors[(h.name, d.name)] = (xs[c], xs[c] + w, ry)
        right = max((b.x1 for b in self.boxes.values()), default=0.0) + _MARGIN
        bottom = max((b.y1 for b in self.boxes.values()), default=0.0) + _MARGIN
        self.canvas = Box(0, 0, right, bottom)
        placed: list[Box] = []
        for link in self.links:
            pts = self._route(link)
            if pts is None:
                continue
            label = self._place_label(link.label, pts, placed)
            if label is not None:
                placed.append(label[1])
            self.lines.append((link, pts, label))
        right = max([self.canvas.x1, *(b.x1 + _MARGIN for b in placed)])
        bottom = max([self.canvas.y1, *(b.y1 + _MARGIN for b in placed)])
        self.canvas = Box(0, 0, right, bottom)

    def _anchor(self, end: tuple[str, str]) -> tuple[float, float, float] | None:
        box = self.boxes.get(end[0])
        if box is None:
            return None
        return self.anchors.get(end) or (box.x0, box.x1, (box.y0 + box.y1) / 2)

    def _route(self, link: LinkInfo) -> list[tuple[float, float]] | None:
        a, b = self._anchor(link.a), self._anchor(link.b)
        if a is None or b is None:
            return None
        if link.dashed:  # over the top of every box in between: an arc above the picture
            ax, bx = (a[0] + a[1]) / 2, (b[0] + b[1]) / 2
            ya, yb = self.boxes[link.a[0]].y0, self.boxes[link.b[0]].y0
            apex = _MARGIN + (30 if self.title else 0) + 10
            return [(ax, ya), (ax, apex), (bx, apex), (bx, yb)]
        if a[0] == b[0]:  # same column: around the right side
            out = a[1] + 30
            return [(a[1], a[2]), (out, a[2]), (out, b[2]), (b[1], b[2])]
        if a[0] < b[0]:
            return [(a[1], a[2]), (b[0], b[2])]
        return [(a[0], a[2]), (b[1], b[2])]

    def _place_label(
        self, text: str, pts: list[tuple[float, float]], placed: list[Box]
    ) -> tuple[str, Box] | None:
        if not text:
            return None
        w, h = _text_w(text, _LABEL_SIZE), _LABEL_SIZE * 1.3
        # the longest segment, at fractions from its middle outwards
        seg = max(range(len(pts) - 1), key=lambda i: math.dist(pts[i], pts[i + 1]))
        (x0, y0), (x1, y1) = pts[seg], pts[seg + 1]
        best: Box | None = None
        for t in (0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9):
            cx, cy = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
            for dy in (-h / 2 - 3, h / 2 + 3, -h - 6, h + 6):
                box = Box(cx - w / 2, cy + dy - h / 2, cx + w / 2, cy + dy + h / 2)
                best = best or box
                if (
                    box.x0 >= 0
                    and box.y0 >= 0
                    and not any(box.overlaps(o, 2) for o in placed)
                    and not any(box.overlaps(b, 2) for b in self.boxes.values())
                ):
                    return text, box
        assert best is not None
        return text, best

    def svg(self) -> str:
        width, height = self.canvas.x1, self.canvas.y1
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{_FONT}, monospace" '
            f'font-size="{_FONT_SIZE}">',
            f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
        ]
        if self.title:
            parts.append(
                f'<text x="{_MARGIN}" y="{_MARGIN + 8}" font-size="14" font-weight="bold">'
                f"{html.escape(self.title)}</text>"
            )
        for link, pts, label in self.lines:
            colour = _TUNNEL if link.dashed else "#333"
            dash = ' stroke-dasharray="6,4"' if link.dashed else ""
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            parts.append(
                f'<g class="edge link"><polyline points="{points}" fill="none" stroke="{colour}" '
                f'stroke-width="1.5"{dash}/>'
            )
            if label is not None:
                text, box = label
                parts.append(
                    f'<text x="{(box.x0 + box.x1) / 2:.1f}" y="{box.y1 - 4:.1f}" '
                    f'text-anchor="middle" fill="{colour}" font-size="{_LABEL_SIZE}">'
                    f"{html.escape(text)}</text>"
                )
            parts.append("</g>")
        for h in self.hosts:
            b = self.boxes[h.name]
            fill, line = (
                (_SWITCH_FILL, _SWITCH_LINE) if h.kind == "switch" else (_HOST_FILL, _HOST_LINE)
            )
            ident = f"switch-{h.name}" if h.kind == "switch" else f"host-{h.name}"
            parts.append(
                f'<g class="node" id="{html.escape(ident)}">'
                f'<rect x="{b.x0:.1f}" y="{b.y0:.1f}" width="{b.x1 - b.x0:.1f}" '
                f'height="{b.y1 - b.y0:.1f}" rx="6" fill="{fill}" stroke="{line}" '
                f'stroke-width="1.5"/>'
            )
            head = f"{h.name} switch" if h.kind == "switch" else h.name
            parts.append(
                f'<text x="{b.x0 + _BOX_PAD}" y="{b.y0 + 18}" font-weight="bold">'
                f"{html.escape(head)}</text>"
            )
            for d in h.devices:
                ry = self.anchors[(h.name, d.name)][2]
                parts.append(
                    f'<text x="{b.x0 + _BOX_PAD}" y="{ry + 4:.1f}">{html.escape(d.text)}</text>'
                )
            parts.append("</g>")
        parts.append("</svg>")
        return "\n".join(parts) + "\n"

    def geometry(self) -> Geometry:
        labels = [label for _, _, label in self.lines if label is not None]
        paths = []
        for link, pts, _ in self.lines:  # points every few pixels along the polyline
            along = [
                (x0 + (x1 - x0) * k / 20, y0 + (y1 - y0) * k / 20)
                for (x0, y0), (x1, y1) in itertools.pairwise(pts)
                for k in range(21)
            ]
            paths.append(((link.a[0], link.b[0]), along))
        return Geometry(self.canvas, dict(self.boxes), labels, paths)


def _engine(engine: Engine) -> Literal["graphviz", "builtin"]:
    if engine == "auto":
        return "graphviz" if graphviz_available() else "builtin"
    return engine


def render_svg(
    hosts: list[HostInfo], links: list[LinkInfo], title: str = "", *, engine: Engine = "auto"
) -> str:
    """The topology as an SVG document: laid out by Graphviz if it is installed
    (*engine* ``"auto"``), else by the built-in layout."""
    if _engine(engine) == "graphviz":
        svg: str = to_dot(hosts, links, title).pipe(format="svg", engine="dot", encoding="utf-8")
        return svg_only(svg)
    b = _Builtin(hosts, links, title)
    b.layout()
    return b.svg()


def geometry(
    hosts: list[HostInfo], links: list[LinkInfo], title: str = "", *, engine: Engine = "auto"
) -> Geometry:
    """Where the layout of :func:`render_svg` puts the nodes and the labels."""
    if _engine(engine) == "graphviz":
        return _dot_geometry(to_dot(hosts, links, title))
    b = _Builtin(hosts, links, title)
    b.layout()
    return b.geometry()


# -- lab files ---------------------------------------------------------------------------------
def _link_label(link: Any) -> str:
    label: str = link.kind
    if link.rate:
        rate = link.rate
        unit = next(
            (u for u, n in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)) if rate >= n),
            "bit/s",
        )
        scale = {"Gbit/s": 1e9, "Mbit/s": 1e6, "kbit/s": 1e3, "bit/s": 1}[unit]
        label += f", {rate / scale:g} {unit}"
    if link.delay:
        label += f", {link.delay * 1000:g} ms"
    if link.mtu:
        label += f", mtu {link.mtu}"
    return label


def lab_topology(
    text: str, path: str | Path = "<lab>"
) -> tuple[LabSpec, list[HostInfo], list[LinkInfo]]:
    """Build the lab of lab-file *text* in virtual time and read its picture's model.

    Raises:
        LabFileError: the file is not a valid lab, or a command of it failed.
    """
    from netstack.host import open_lab, run
    from netstack.labs.labfile import build_lab, parse_lab
    from netstack.labs.session import Session

    spec = parse_lab(text, path)

    async def main() -> tuple[list[HostInfo], list[LinkInfo]]:
        async with open_lab(seed=spec.seed, hz=spec.hz) as lab, trio.open_nursery() as nursery:
            try:
                await build_lab(spec, lab, Session(lab, nursery), captures=False)
            finally:
                nursery.cancel_scope.cancel()
            labels = {(lk.a, lk.b): _link_label(lk) for lk in spec.links}
            return topology(lab, labels, (sw.name for sw in spec.switches))

    hosts, links = run(main)
    return spec, hosts, links


def lab_svg(text: str, path: str | Path = "<lab>", *, engine: Engine = "auto") -> str:
    """The picture of lab-file *text* (what ``netstack draw`` writes), as SVG.

    Raises:
        LabFileError: the file is not a valid lab, or a command of it failed.
    """
    spec, hosts, links = lab_topology(text, path)
    return render_svg(hosts, links, spec.description or spec.name, engine=engine)


def draw_lab_file(path: str, output: str | None, *, out: TextIO, err: TextIO) -> int:
    """``netstack draw LAB.toml [-o FILE.svg|FILE.png]``."""
    from netstack.labs.labfile import LabFileError

    target = Path(output) if output else Path(path).with_suffix(".svg")
    if target.suffix.lower() not in (".svg", ".png"):
        print(f"netstack draw: {target}: the output must end in .svg or .png", file=err)
        return 2
    png: Any = None
    if target.suffix.lower() == ".png":
        try:
            png = importlib.import_module("cairosvg")
        except (ImportError, OSError):
            print(
                "netstack draw: PNG output needs CairoSVG: pip install 'netstack[draw]' "
                "(or write .svg)",
                file=err,
            )
            return 2
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        print(f"{path}: {e.strerror}", file=err)
        return 2
    try:
        svg = lab_svg(text, path)
    except LabFileError as e:
        print(e, file=err)
        return 2
    if png is not None:
        png.svg2png(bytestring=svg.encode(), write_to=str(target), scale=2.0)
    else:
        target.write_text(svg, encoding="utf-8")
    print(f"wrote {target}", file=out)
    return 0


def host_devices(host: Host) -> list[str]:
    """Device names of *host* other than ``lo`` (for callers that list them)."""
    try:
        return [d.name for d in host.devices if d.name != "lo"]
    except NetstackError:
        return []
