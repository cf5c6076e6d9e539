"""The lab-level commands Mininet users type first: nodes, net, links, dump, pingall, link.

Theory of operation: ``nodes``, ``net``, ``links``, ``dump``, ``pingall``
and ``link A B up|down`` look at the lab as Mininet's CLI looks at a
Mininet network — hosts, switches (``lab.switches``: hosts running a
bridge) and the links between them — and print what Mininet prints
(``h1 h1-eth0:s1-eth1``, ``*** Results: 0% dropped (6/6 received)``).
Interfaces are named lab-wide as Mininet names them: a switch port
``s1-eth1`` as it is, a host's ``eth0`` as ``h1-eth0``. ``pingall`` pings
every host from every other once, with a one-second
timeout, in virtual time. ``link`` sets both ends of every link between two
nodes down or up (``ip link set … down|up``), so a switch sees its port
lose carrier and STP reacts.

Mininet: mininet/cli.py (do_nodes, do_net, do_links, do_dump, do_pingall,
do_link), mininet/util.py (dumpNodeConnections), mininet/net.py (pingAll,
configLinkStatus).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.errors import NetstackError

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.host import Host, Lab
    from netstack.labs.session import Context

__all__ = ["cmd_dump", "cmd_link", "cmd_links", "cmd_net", "cmd_nodes", "cmd_pingall"]


def _hosts(lab: Lab) -> list[Host]:
    return [h for name, h in sorted(lab.hosts.items()) if name not in lab.switches]


def _switches(lab: Lab) -> list[Host]:
    return [lab.switches[name] for name in sorted(lab.switches)]


def _intf(dev: NetDevice) -> str:
    """A lab-wide interface name, Mininet style: ``s1-eth1`` as is, h1's ``eth0`` as ``h1-eth0``."""
    host = dev.net.name
    return dev.name if dev.name.startswith(f"{host}-") else f"{host}-{dev.name}"


def _peer_name(dev: NetDevice) -> str | None:
    peer = dev.ops.ndo_get_peer_dev(dev)
    if peer is None:
        nic_peer = getattr(getattr(dev.priv, "peer", None), "dev", None)
        peer = nic_peer
    return _intf(peer) if peer is not None else None


async def cmd_nodes(ctx: Context, argv: list[str]) -> int:
    """``nodes``: Mininet's ``available nodes are:`` line."""
    ctx.out("available nodes are: \n" + " ".join(sorted(ctx.lab.hosts)))
    return 0


async def cmd_net(ctx: Context, argv: list[str]) -> int:
    """``net``: each node's interfaces and what they connect to. Mininet: dumpNodeConnections()."""
    lab = ctx.lab
    for host in (*_hosts(lab), *_switches(lab)):
        parts = [host.name]
        if host.name in lab.switches:
            parts.append("lo: ")
        for dev in host.devices:
            if dev.name == "lo" or dev.kind == "bridge":
                continue
            peer = _peer_name(dev)
            parts.append(f"{dev.name}:{peer}" if peer is not None else f"{dev.name}:")
        ctx.out(" ".join(parts))
    return 0


def _state(dev: NetDevice) -> str:
    return "OK" if dev.flags & 0x1 and dev.carrier else "MISSING"


async def cmd_links(ctx: Context, argv: list[str]) -> int:
    """``links``: ``h1-eth0<->s1-eth1 (OK OK)``. Mininet: do_links()."""
    for link in ctx.lab.links:
        a, b = link.a, link.b
        ctx.out(f"{_intf(a)}<->{_intf(b)} ({_state(a)} {_state(b)}) ")
    return 0


def _addr(host: Host, dev: NetDevice) -> str:
    try:
        return host.addr(dev.name)
    except NetstackError:
        return "None"


async def cmd_dump(ctx: Context, argv: list[str]) -> int:
    """``dump``: one ``<Host h1: h1-eth0:10.0.0.1>`` line per node. Mininet: do_dump()."""
    lab = ctx.lab
    for host in (*_hosts(lab), *_switches(lab)):
        kind = "LinuxBridge" if host.name in lab.switches else "Host"
        devs = [
            d
            for d in host.devices
            if d.kind != "bridge" and (d.name != "lo" or host.name in lab.switches)
        ]
        intfs = ",".join(f"{d.name}:{_addr(host, d)}" for d in devs)
        ctx.out(f"<{kind} {host.name}: {intfs}>")
    return 0


async def cmd_pingall(ctx: Context, argv: list[str]) -> int:
    """``pingall [timeout]``: every host pings every other once. Mininet: pingAll()."""
    timeout = 1.0
    if argv:
        try:
            timeout = float(argv[0])
        except ValueError:
            ctx.err(f"*** Error: pingall: bad timeout {argv[0]!r}")
            return 2
    hosts = _hosts(ctx.lab)
    ctx.out("*** Ping: testing ping reachability")
    sent = received = 0
    for src in hosts:
        line = [f"{src.name} -> "]
        for dst in hosts:
            if dst is src:
                continue
            addr = ctx.resolve(dst.name)
            ok = False
            if addr is not None:
                result = await src.ping(addr, count=1, timeout=timeout)
                ok = bool(result.replies)
            sent += 1
            received += ok
            line.append(f"{dst.name if ok else 'X'} ")
        ctx.out("".join(line))
    dropped = 100.0 * (sent - received) / sent if sent else 0.0
    ctx.out(f"*** Results: {dropped:.0f}% dropped ({received}/{sent} received)")
    return 0 if received == sent else 1


async def cmd_link(ctx: Context, argv: list[str]) -> int:
    """``link NODE1 NODE2 up|down``. Mininet: do_link() / configLinkStatus()."""
    if len(argv) != 3:
        ctx.err("invalid number of args: link end1 end2 [up down]")
        return 2
    src, dst, status = argv
    lab = ctx.lab
    if status not in ("up", "down"):
        ctx.err(f"status must be up or down: {status}")
        return 2
    for name in (src, dst):
        if name not in lab.hosts:
            ctx.err(f"{'src' if name == src else 'dst'} not in network: {name}")
            return 1
    found = False
    for link in lab.links:
        ends = {link.a.net.name, link.b.net.name}
        if ends == {src, dst} or (src == dst and ends == {src}):
            for dev in (link.a, link.b):
                lab.hosts[dev.net.name].ip(f"link set {dev.name} {status}")
            found = True
    if not found:
        ctx.err(f"src and dst not connected: {src} {dst}")
        return 1
    return 0
