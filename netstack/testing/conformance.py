"""A conformance suite every network device driver can run (Trio's ``check_two_way_stream`` idea).

Theory of operation: :func:`check_net_device` takes a *pair maker* — a
function that joins two hosts of a lab with the driver under test and
returns ``(host_a, "dev_a", host_b, "dev_b")`` — and checks, through the
kernel's own paths and counters, what every ``net_device`` must do:

1. registration: both devices are found by name, with a driver kind and a
   ``statistics()`` snapshot carrying the ``rtnl_link_stats64`` fields;
2. administrative state: ``ip link set DEV down``/``up`` change ``IFF_UP``
   and ``netif_running``, and a device that is down transmits nothing;
3. delivery: IPv4 traffic (ARP, ICMP echo, UDP) crosses the pair both ways;
   every frame one end transmits arrives at the other byte for byte (short
   frames may arrive padded to 60 bytes, as on Ethernet), in order;
4. counters: the sender's ``tx_packets``/``tx_bytes`` grow by what was sent,
   the receiver's ``rx_packets``/``rx_bytes`` by what arrived, and nothing
   is counted as dropped or as an error;
5. MTU: ``ip link set DEV mtu N`` is obeyed — a DF datagram that does not
   fit fails with ``EMSGSIZE`` and one that fits goes through;
6. bursts: 200 datagrams sent back to back (in batches of 50) all arrive.

A driver that cannot do one of these (a point-to-point device without ARP,
say) passes ``skip={"arp"}`` and the like; see :func:`check_net_device`.

Pair makers: :func:`veth_pair`, :func:`nic_pair`, :func:`vlan_pair` and
:func:`tunnel_pair` (GRE, GRETAP, IPIP, SIT, VXLAN over a veth underlay).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from netstack.host import Host, Lab

__all__ = ["PairMaker", "check_net_device", "nic_pair", "tunnel_pair", "veth_pair", "vlan_pair"]

PairMaker = Callable[["Lab"], tuple["Host", str, "Host", str]]


def veth_pair(lab: Lab) -> tuple[Host, str, Host, str]:
    """Two hosts joined by a veth pair."""
    a, b = lab.add_host("ca"), lab.add_host("cb")
    lab.add_link("ca:veth0", "cb:veth0", kind="veth")
    return a, "veth0", b, "veth0"


def nic_pair(lab: Lab) -> tuple[Host, str, Host, str]:
    """Two hosts joined by emulated Ethernet NICs and a 1 Gbit/s cable."""
    a, b = lab.add_host("ca"), lab.add_host("cb")
    lab.add_link("ca:eth0", "cb:eth0", kind="nic", rate=1e9, delay=0.0001)
    return a, "eth0", b, "eth0"


def _underlay(lab: Lab) -> tuple[Host, Host]:
    """``ca`` 198.51.100.1/24 — veth — ``cb`` 198.51.100.2/24 (IPv4-only): the underlay."""
    from netstack.testing.builders import IPV4_ONLY

    a, b = lab.add_host("ca", sysctls=IPV4_ONLY), lab.add_host("cb", sysctls=IPV4_ONLY)
    lab.add_link("ca:eth0", "cb:eth0", kind="veth")
    a.ip("addr add 198.51.100.1/24 dev eth0")
    b.ip("addr add 198.51.100.2/24 dev eth0")
    return a, b


def vlan_pair(lab: Lab) -> tuple[Host, str, Host, str]:
    """VLAN 10 devices ``eth0.10`` on both ends of a veth pair (802.1Q tags on the wire)."""
    a, b = _underlay(lab)
    for host in (a, b):
        host.ip("link add link eth0 name eth0.10 type vlan id 10")
    return a, "eth0.10", b, "eth0.10"


def tunnel_pair(kind: str, options: str = "") -> PairMaker:
    """A pair maker: tunnels ``t0`` of *kind* between two hosts on a veth underlay.

    *kind* is an ``ip link add … type`` (``gre``, ``gretap``, ``ipip``, ``sit``,
    ``vxlan``: VNI 42, port 4789); *options* are appended to both ends' command.
    """

    def make(lab: Lab) -> tuple[Host, str, Host, str]:
        a, b = _underlay(lab)
        for host, local, remote in (
            (a, "198.51.100.1", "198.51.100.2"),
            (b, "198.51.100.2", "198.51.100.1"),
        ):
            vni = " id 42 dstport 4789" if kind == "vxlan" else ""
            host.ip(f"link add t0 type {kind}{vni} remote {remote} local {local} {options}")
        return a, "t0", b, "t0"

    make.__name__ = make.__qualname__ = f"{kind}_pair"
    return make


def _fail(what: str, detail: str) -> AssertionError:
    return AssertionError(f"net_device conformance: {what}: {detail}")


async def check_net_device(
    lab: Lab,
    make_pair: PairMaker,
    *,
    skip: frozenset[str] | set[str] = frozenset(),
    addr_a: str = "192.0.2.1",
    addr_b: str = "192.0.2.2",
) -> list[str]:
    """Run the suite on the pair *make_pair* builds in *lab*; returns the checks that ran.

    Args:
        skip: checks to leave out: ``"updown"``, ``"arp"``, ``"mtu"``, ``"burst"``.
        addr_a: the IPv4 address given to the first end (/24).
        addr_b: the IPv4 address given to the second end.

    Raises:
        AssertionError: the first property that does not hold, named.
    """
    ran = []
    ha, da, hb, db = make_pair(lab)
    dev_a, dev_b = ha.dev(da), hb.dev(db)
    for host, dev in ((ha, dev_a), (hb, dev_b)):
        if host.net.dev_get_by_name(dev.name) is not dev:
            raise _fail("registration", f"{host.name} does not find {dev.name} by name")
        stats = dev.statistics()
        for field in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped"):
            if not isinstance(getattr(stats, field, None), int):
                raise _fail("statistics", f"{dev.name}.statistics() has no integer {field}")
        if not dev.kind:
            raise _fail("registration", f"{dev.name} has no driver kind")
    ran.append("registration")
    for host, name in ((ha, da), (hb, db)):
        host.ip(f"link set {name} up")
    ha.ip(f"addr add {addr_a}/24 dev {da}")
    hb.ip(f"addr add {addr_b}/24 dev {db}")
    cap_a, cap_b = ha.capture(da), hb.capture(db)

    if "updown" not in skip:
        ha.ip(f"link set {da} down")
        if dev_a.is_up() or dev_a.netif_running():
            raise _fail("updown", f"{da} still up after 'ip link set {da} down'")
        before = dev_a.statistics().tx_packets
        sock = ha.socket()
        try:
            sock.sendto_nowait(b"x" * 10, (addr_b, 9))
        except OSError:
            pass
        sock.close()
        await trio.sleep(0.1)
        if dev_a.statistics().tx_packets != before:
            raise _fail("updown", f"{da} transmitted while down")
        ha.ip(f"link set {da} up")
        if not (dev_a.is_up() and dev_a.netif_running()):
            raise _fail("updown", f"{da} not running after 'ip link set {da} up'")
        await trio.sleep(0.1)
        ran.append("updown")

    sa0, sb0 = dev_a.statistics(), dev_b.statistics()
    result = await ha.ping(addr_b, count=3, interval=0.2)
    if result.received != 3:
        raise _fail("delivery", f"ping {addr_b} over {da}: {result.received}/3 replies")
    server = hb.socket()
    await server.bind((addr_b, 7777))
    client = ha.socket()
    payloads = [bytes([i]) * (20 + 37 * i) for i in range(8)]
    for p in payloads:
        await client.sendto(p, (addr_b, 7777))
    got: list[bytes] = []
    with trio.move_on_after(2):
        while len(got) < len(payloads):
            got.append((await server.recvfrom(65535))[0])
    if got != payloads:
        raise _fail("delivery", f"UDP datagrams arrived as {len(got)}/{len(payloads)}, or changed")
    ran.append("delivery")
    await trio.sleep(0.1)

    sent = [f for _, f, out in cap_a.frames if out]
    arrived = [f for _, f, out in cap_b.frames if not out]
    if len(arrived) < len(sent):
        raise _fail("frames", f"{len(sent)} frames sent on {da}, {len(arrived)} arrived on {db}")
    for n, (s, r) in enumerate(zip(sent, arrived, strict=False)):
        if r[: len(s)] != s or (len(r) != len(s) and (len(r) > 60 or any(r[len(s) :]))):
            raise _fail("frames", f"frame {n + 1} changed on the way: {s.hex()} → {r.hex()}")
    ran.append("frames")

    sa1, sb1 = dev_a.statistics(), dev_b.statistics()
    tx = sa1.tx_packets - sa0.tx_packets
    rx = sb1.rx_packets - sb0.rx_packets
    n_out = sum(1 for _, _, out in cap_a.frames if out)
    if tx < n_out - 1 or rx < n_out - 1:  # the frame sent while down may be counted or not
        raise _fail("counters", f"{da} tx_packets +{tx}, {db} rx_packets +{rx}, frames {n_out}")
    if tx != rx:
        raise _fail("counters", f"{da} tx_packets +{tx} but {db} rx_packets +{rx}")
    if sa1.tx_bytes - sa0.tx_bytes <= 0 or sb1.rx_bytes - sb0.rx_bytes <= 0:
        raise _fail("counters", "byte counters did not grow")
    for field in ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped"):
        for dev, s0, s1 in ((dev_a, sa0, sa1), (dev_b, sb0, sb1)):
            if getattr(s1, field) != getattr(s0, field):
                raise _fail("counters", f"{dev.name}.{field} grew with nothing to drop")
    ran.append("counters")

    if "mtu" not in skip:
        ha.ip(f"link set {da} mtu 1280")
        hb.ip(f"link set {db} mtu 1280")
        big = ha.socket()
        from netstack.core.sock import IP_MTU_DISCOVER, IP_PMTUDISC_DO, IPPROTO_IP

        big.setsockopt(IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        try:
            await big.sendto(bytes(1300), (addr_b, 7777))
        except OSError as e:
            if e.errno != errno.EMSGSIZE:
                raise _fail("mtu", f"oversize DF datagram: errno {e.errno}, not EMSGSIZE") from e
        else:
            raise _fail("mtu", "a 1300-byte DF datagram was sent on an MTU-1280 device")
        await big.sendto(bytes(1252), (addr_b, 7777))
        with trio.move_on_after(1) as cs:
            data, _ = await server.recvfrom(65535)
        if cs.cancelled_caught or len(data) != 1252:
            raise _fail("mtu", "a datagram filling the 1280-byte MTU did not arrive")
        big.close()
        ran.append("mtu")

    if "burst" not in skip:
        received = 0
        for _batch in range(4):
            for i in range(50):
                await client.sendto(i.to_bytes(2, "big") * 50, (addr_b, 7777))
            with trio.move_on_after(1):
                for _ in range(50):
                    await server.recvfrom(65535)
                    received += 1
        if received != 200:
            raise _fail("burst", f"{received}/200 datagrams of a burst arrived")
        ran.append("burst")
    client.close()
    server.close()
    cap_a.stop()
    cap_b.stop()
    return ran
