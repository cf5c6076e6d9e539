"""``netstack draw``: a lab's topology as a picture (SVG written by hand; PNG via CairoSVG).

Theory of operation: :func:`draw_lab_file` builds the lab of a lab file in
virtual time — so the picture shows what the commands made: addresses,
routes' gateways, tunnel devices — and :func:`render_svg` lays it out:
hosts are boxes placed in columns by their distance (in links) from the
first host, each listing its devices with their kind and IPv4 addresses;
links are lines between device rows, labelled with their kind, rate and
delay. Devices that no link joins (tunnels, dummies) are listed in their
host's box with their kind, and point-to-point tunnels whose remote address
belongs to another host are drawn as dashed lines. PNG output goes through
CairoSVG (``pip install 'netstack[draw]'``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs
import trio

from netstack.core.netdevice import IFF_UP
from netstack.errors import NetstackError
from netstack.ipv4.constants import IFA_F_SECONDARY
from netstack.wire.ipv4 import ntoa

if TYPE_CHECKING:
    from netstack.host import Host, Lab

__all__ = ["draw_lab_file", "render_svg", "topology"]

_BOX_W = 230
_ROW_H = 18
_HEAD_H = 26
_COL_GAP = 150
_ROW_GAP = 40
_MARGIN = 30


@attrs.frozen
class DevInfo:
    name: str
    kind: str
    addrs: tuple[str, ...]
    remote: str | None = None


@attrs.frozen
class HostInfo:
    name: str
    devices: tuple[DevInfo, ...]


@attrs.frozen
class LinkInfo:
    a: tuple[str, str]
    b: tuple[str, str]
    label: str
    dashed: bool = False


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
    lab: Lab, link_labels: dict[tuple[str, str], str] | None = None
) -> tuple[list[HostInfo], list[LinkInfo]]:
    """Hosts, devices and links of a built lab, as the picture shows them."""
    hosts = []
    for host in lab.hosts.values():
        devs = tuple(
            DevInfo(d.name, d.kind or "device", _addrs(d), _remote(d))
            for d in host.devices
            # lo, and the fallback devices a tunnel module brings (gre0, tunl0…: down, unused)
            if d.name != "lo" and (d.flags & IFF_UP or _addrs(d) or _remote(d))
        )
        hosts.append(HostInfo(host.name, devs))
    links = []
    for link in lab.links:
        a = (_host_of(lab, link.a), link.a.name)
        b = (_host_of(lab, link.b), link.b.name)
        label = (link_labels or {}).get((f"{a[0]}:{a[1]}", f"{b[0]}:{b[1]}"), link.kind)
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
                links.append(LinkInfo((h.name, d.name), (peer, twin or ""), d.kind, dashed=True))
    return hosts, links


def _host_of(lab: Lab, dev: Any) -> str:
    for host in lab.hosts.values():
        if host.net is dev.net:
            return host.name
    return "?"


def _layout(hosts: list[HostInfo], links: list[LinkInfo]) -> dict[str, tuple[int, int]]:
    """Column and row of each host: BFS distance from the first host (by links)."""
    adj: dict[str, set[str]] = {h.name: set() for h in hosts}
    for link in links:
        if link.a[0] in adj and link.b[0] in adj and not link.dashed:
            adj[link.a[0]].add(link.b[0])
            adj[link.b[0]].add(link.a[0])
    col: dict[str, int] = {}
    for h in hosts:
        if h.name in col:
            continue
        start = max(col.values(), default=-1) + 1
        col[h.name] = start
        queue = [h.name]
        while queue:
            cur = queue.pop(0)
            for nxt in sorted(adj[cur], key=[x.name for x in hosts].index):
                if nxt not in col:
                    col[nxt] = col[cur] + 1
                    queue.append(nxt)
    rows: dict[int, int] = {}
    pos = {}
    for h in hosts:
        c = col[h.name]
        pos[h.name] = (c, rows.get(c, 0))
        rows[c] = rows.get(c, 0) + 1
    return pos


def render_svg(hosts: list[HostInfo], links: list[LinkInfo], title: str = "") -> str:
    """The topology as an SVG document."""
    pos = _layout(hosts, links)
    heights = {h.name: _HEAD_H + _ROW_H * max(len(h.devices), 1) + 8 for h in hosts}
    ncols = max((c for c, _ in pos.values()), default=0) + 1
    row_h = max(heights.values(), default=60) + _ROW_GAP
    nrows = max((r for _, r in pos.values()), default=0) + 1
    top = _MARGIN + (30 if title else 0)
    width = _MARGIN * 2 + ncols * _BOX_W + (ncols - 1) * _COL_GAP
    height = top + nrows * row_h + _MARGIN
    xy = {
        name: (_MARGIN + c * (_BOX_W + _COL_GAP), top + r * row_h) for name, (c, r) in pos.items()
    }
    anchors: dict[tuple[str, str], tuple[float, float, float]] = {}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, monospace" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    if title:
        parts.append(
            f'<text x="{_MARGIN}" y="{_MARGIN + 8}" font-size="16" font-weight="bold">'
            f"{html.escape(title)}</text>"
        )
    boxes = []
    for h in hosts:
        x, y = xy[h.name]
        boxes.append(
            f'<g class="host" id="host-{html.escape(h.name)}">'
            f'<rect x="{x}" y="{y}" width="{_BOX_W}" height="{heights[h.name]}" rx="6" '
            f'fill="#eef4fb" stroke="#2b5d8a" stroke-width="1.5"/>'
            f'<text x="{x + 10}" y="{y + 18}" font-size="14" font-weight="bold">'
            f"{html.escape(h.name)}</text>"
        )
        for i, d in enumerate(h.devices):
            ry = y + _HEAD_H + i * _ROW_H + 12
            text = f"{d.name} ({d.kind})" + (f" {', '.join(d.addrs)}" if d.addrs else "")
            boxes.append(f'<text x="{x + 10}" y="{ry}" class="dev">{html.escape(text)}</text>')
            anchors[(h.name, d.name)] = (x, x + _BOX_W, ry - 4)
        boxes.append("</g>")
    for link in links:
        a = anchors.get(link.a)
        b = anchors.get(link.b) or anchors.get((link.b[0], ""))
        if a is None or b is None:
            continue
        ax = a[1] if a[0] <= b[0] else a[0]
        bx = b[0] if a[0] <= b[0] else b[1]
        if a[0] == b[0]:  # same column: go around the right side
            ax, bx = a[1], b[1]
        dash = ' stroke-dasharray="6,4"' if link.dashed else ""
        color = "#b5651d" if link.dashed else "#333"
        parts.append(
            f'<line x1="{ax}" y1="{a[2]}" x2="{bx}" y2="{b[2]}" stroke="{color}" '
            f'stroke-width="2"{dash} class="link"/>'
        )
        mx, my = (ax + bx) / 2, min(a[2], b[2]) - 8
        parts.append(
            f'<text x="{mx}" y="{my}" text-anchor="middle" fill="{color}" font-size="11">'
            f"{html.escape(link.label)}</text>"
        )
    parts.extend(boxes)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


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


def draw_lab_file(path: str, output: str | None, *, out: TextIO, err: TextIO) -> int:
    """``netstack draw LAB.toml [-o FILE.svg|FILE.png]``."""
    from netstack.host import open_lab, run
    from netstack.labs.labfile import LabFileError, build_lab, load_lab
    from netstack.labs.session import Session

    try:
        spec = load_lab(path)
    except LabFileError as e:
        print(e, file=err)
        return 2
    target = Path(output) if output else Path(path).with_suffix(".svg")
    if target.suffix.lower() not in (".svg", ".png"):
        print(f"netstack draw: {target}: the output must end in .svg or .png", file=err)
        return 2

    async def main() -> str | None:
        async with open_lab(seed=spec.seed, hz=spec.hz) as lab, trio.open_nursery() as nursery:
            session = Session(lab, nursery)
            try:
                await build_lab(spec, lab, session, captures=False)
            except LabFileError as e:
                print(e, file=err)
                nursery.cancel_scope.cancel()
                return None
            labels = {(lk.a, lk.b): _link_label(lk) for lk in spec.links}
            hosts, links = topology(lab, labels)
            nursery.cancel_scope.cancel()
            return render_svg(hosts, links, spec.description or spec.name)

    svg = run(main)
    if svg is None:
        return 2
    if target.suffix.lower() == ".png":
        try:
            import cairosvg  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except (ImportError, OSError):
            print(
                "netstack draw: PNG output needs CairoSVG: pip install 'netstack[draw]' "
                "(or write .svg)",
                file=err,
            )
            return 2
        cairosvg.svg2png(bytestring=svg.encode(), write_to=str(target), scale=2.0)
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
