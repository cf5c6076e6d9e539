"""Build the UDP and TCP data paths' modules with mypyc (optional, experimental; issue 18).

    python scripts/build_compiled.py [--dest DIR] [--inplace] [--clean] [MODULE ...]

The pure-Python package is the product and stays as it is; this script only
measures what compilation gives. It copies ``netstack/`` to ``DIR/src``
(``.mypyc-build/src`` by default), rewrites a copy of each module to compile
(see below), and runs mypyc there (``build_ext --inplace``): the compiled
extension modules land next to the copies, so

    PYTHONPATH=.mypyc-build/src python benchmarks/udp_pps.py --callgrind

runs the compiled build (``PYTHONPATH`` comes before the editable install's
finder). ``--inplace`` also copies the extension modules into the worktree's
``netstack/`` (``*.so`` is git-ignored), where every run of this checkout then
imports them; ``--clean`` removes them again.

The one rewrite: mypyc compiles a class with any decorator other than its own
as a plain Python class (no native attributes, no property setters) and calls
a decorated function through its module global instead of directly. The
``@kernel`` markers of :mod:`netstack.sites` are metadata only, so the copy
loses the decorator lines (blank lines keep the line numbers) and registers
the same :data:`netstack.sites.MARKERS` entries at the end of the module.

The other rewrites are listed in :data:`PATCHES`, each with its reason.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES: tuple[str, ...] = (
    "netstack/wire/checksum.py",
    "netstack/core/skbuff.py",
    "netstack/core/dst.py",
    "netstack/core/ethernet.py",
    "netstack/core/xmit.py",
    "netstack/core/dev.py",
    "netstack/core/napi.py",
    "netstack/core/sock.py",
    "netstack/drivers/veth.py",
    "netstack/neigh/neighbour.py",
    "netstack/ipv4/fib.py",
    "netstack/ipv4/route.py",
    "netstack/ipv4/ip_output.py",
    "netstack/ipv4/ip_input.py",
    "netstack/ipv4/udp.py",
    "netstack/socket/socket.py",
    # what TCP bulk adds (benchmarks/tcp_bulk.py)
    "netstack/tcp/input.py",
    "netstack/tcp/output.py",
    "netstack/tcp/tcp.py",
    "netstack/tcp/sock.py",
    "netstack/tcp/timer.py",
    "netstack/tcp/rate.py",
    "netstack/tcp/recovery.py",
    "netstack/tcp/cubic.py",
    "netstack/tcp/cong.py",
    "netstack/tcp/helpers.py",
    "netstack/tcp/options.py",
    "netstack/tcp/minisocks.py",
    # interpreted per segment in the 59-module build (cProfile of the compiled
    # run, tcpseg): the Net's TCP state with its clock helpers (tcp_clock_us,
    # usecs_to_jiffies; its sysctls read on every ACK), header prediction and the
    # receive memory (rcvmem), inet_csk_schedule_ack (state), the established
    # lookup (hashtables) and the windowed min of min_rtt (win_minmax)
    "netstack/tcp/proto.py",
    "netstack/tcp/rcvmem.py",
    "netstack/tcp/state.py",
    "netstack/tcp/hashtables.py",
    "netstack/core/win_minmax.py",
    "netstack/ipv4/tcp_ipv4.py",
    "netstack/gro/core.py",
    "netstack/gro/tcp.py",
    "netstack/gro/eth.py",
    "netstack/gro/segment.py",
    # what the GRE and IPIP tunnels add (benchmarks/tunnel_pps.py): interpreted
    # per packet in the 33-module build (cProfile of the compiled run)
    "netstack/tunnels/ip_tunnel.py",
    "netstack/tunnels/ip_gre.py",
    "netstack/tunnels/ipip.py",
    "netstack/tunnels/gre_demux.py",
    "netstack/tunnels/tunnel4.py",
    "netstack/tunnels/offload.py",
    "netstack/core/gro_cells.py",
    "netstack/ipv4/offload.py",
    "netstack/cpu/clock.py",
    # what the 10,000-host lab's pings add (benchmarks/lab_scale.py, mypyclab): the
    # bridge's flood and forward, ARP, ICMP, the ping socket and the neighbour and
    # timer glue, interpreted per ping in the 42-module build (cProfile of the
    # compiled run)
    "netstack/bridge/br_forward.py",
    "netstack/bridge/br_input.py",
    "netstack/bridge/br_fdb.py",
    "netstack/bridge/br_vlan.py",
    "netstack/bridge/br_private.py",
    "netstack/ipv4/arp.py",
    "netstack/ipv4/icmp.py",
    "netstack/ipv4/ping.py",
    "netstack/neigh/nud.py",
    "netstack/wire/ipv4.py",
    "netstack/core/timer.py",
    "netstack/core/timerqueue.py",
    "netstack/cpu/spinlock.py",
    "netstack/cpu/cpu.py",
    # read on every packet through the generic attribute lookup while interpreted
    # (dev.features, dev.stats, dev.net…): native since the ninth round
    "netstack/core/netdevice.py",
    "netstack/core/net.py",
    "netstack/ipv4/netns.py",
    # the SNMP counters (mib.InReceives += 1 on every packet: a generic get and set
    # while interpreted) and the per-device IPv4 state and configuration read by
    # IPv4 input and output, ARP and the route lookup: native since the tenth round
    # (mypycsnmp)
    "netstack/core/snmp.py",
    "netstack/ipv4/snmp.py",
    "netstack/ipv6/snmp.py",
    "netstack/tcp/mib.py",
    "netstack/ipv4/devinet.py",
    # the lab's memory (mypycsnmp): an interpreted base left each native FibTable a
    # __dict__ for its two fields (by_len, lens), and an interpreted subclass of a
    # native class (Rt6Info of DstEntry, Fib6Table of a native PrefixBuckets) keeps
    # its fields in a dict of its own rather than CPython's inline values: some
    # 300 bytes a table and a route, three a host in the 10,000-host lab
    "netstack/core/prefix_table.py",
    "netstack/ipv6/route.py",
    # the ping program (eleventh round, pingbuild): 14 interpreted calls a ping in
    # the lab's profile; its _LiveLines (a list subclass) stays a Python class
    "netstack/userspace/iputils/ping.py",
)
"""The modules the batched UDP benchmark spends its time in (cProfile self time),
then TCP's and GRO's. ``tcp/minisocks.py`` must come with the other TCP modules:
left out, mypy (which mypyc runs over the rewritten copy) stops at "Cannot
determine type of tw_timer_handler" in ``tcp/proto.py``."""


def skb_rare_fields() -> list[str]:
    """The fields ``SkBuff`` declares with a class-level default (stored only when written)."""
    tree = ast.parse((ROOT / "netstack/core/skbuff.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "SkBuff":
            return [
                stmt.target.id
                for stmt in node.body
                if isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.value is not None
            ]
    raise SystemExit("netstack/core/skbuff.py: no class SkBuff")


_RARE_SKB_FIELDS = skb_rare_fields()


COUNTER_CLASSES: dict[str, frozenset[str]] = {
    "netstack/core/snmp.py": frozenset({"Mib"}),
    "netstack/ipv4/snmp.py": frozenset({"Mib"}),
    "netstack/ipv6/snmp.py": frozenset({"Mib", "UdpMib"}),
    "netstack/tcp/mib.py": frozenset({"Mib"}),
    "netstack/core/netdevice.py": frozenset({"DevStats"}),
}
"""Modules whose counter classes (a class named here, or deriving from one named
here) zero their counters with a generated function in the pure package: path ->
class names. Their copies declare each counter with a 0 default instead (below)."""


def counter_defaults(path: str, names: frozenset[str]) -> list[tuple[str, str, str, str]]:
    """PATCHES for the counter classes of *path*: each class's run of bare ``X: int``
    annotations becomes ``X: int = 0``.

    The pure classes are slotted (a default would clash with the slot) and zero
    their counters with ``attr_zeroer``'s generated function, a generic store per
    counter on a native instance; a native class sets its defaults in its C
    constructor. The annotations are the field tuples' one copy for the type
    checker (tests/core/test_snmp.py checks they agree)."""
    text = (ROOT / path).read_text()
    lines = text.splitlines(keepends=True)
    found: list[tuple[str, str, str, str]] = []
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
        if node.name not in names and not bases & names:
            continue
        run = [
            stmt
            for stmt in node.body
            if isinstance(stmt, ast.AnnAssign)
            and stmt.value is None
            and isinstance(stmt.target, ast.Name)
            and ast.unparse(stmt.annotation) == "int"
        ]
        if not run:
            continue
        first, last = run[0].lineno, run[-1].lineno
        if last - first + 1 != len(run):
            raise SystemExit(f"{path}: {node.name}'s counters are not one run of annotations")
        # from the line before the run: NetDeviceStats annotates DevStats's fields too
        old = "".join(lines[first - 2 : last])
        new = lines[first - 2] + "".join(
            line.replace(": int\n", ": int = 0\n") for line in lines[first - 1 : last]
        )
        found.append((path, old, new, f"{node.name}: its counters as native defaults"))
    return found


PATCHES: tuple[tuple[str, str, str, str], ...] = (
    (
        "netstack/core/dev.py",
        "        del skb.tstamp\n    skb.cb = None\n"
        "    if xnet and skb.mark:\n        del skb.mark\n",
        "        skb.tstamp = 0.0\n    skb.cb = None\n"
        "    if xnet and skb.mark:\n        skb.mark = 0\n",
        "a native attribute cannot be deleted back to its class default (skb_scrub_packet)",
    ),
    (
        "netstack/core/dev.py",
        "        del skb.tstamp\n    skb.cb = None\n    if skb.mark:\n        src = skb.dev\n"
        "        if src is None or src.net is not dev.net:  # xnet\n            del skb.mark\n",
        "        skb.tstamp = 0.0\n    skb.cb = None\n    if skb.mark:\n        src = skb.dev\n"
        "        if src is None or src.net is not dev.net:  # xnet\n            skb.mark = 0\n",
        "the same in dev_forward_skb's written-out skb_scrub_packet",
    ),
    (
        "netstack/core/skbuff.py",
        """        d = self.__dict__
        if d:  # the rare fields (cb, the holder's scratch, is a slot and not copied)
            new.__dict__.update(d)
""",
        "".join(f"        new.{name} = self.{name}\n" for name in _RARE_SKB_FIELDS),
        "a native class has no __dict__: the rare fields are native attributes",
    ),
    (
        "netstack/core/skbuff.py",
        """        d = self.__dict__
        if d:
            for name in ("inner_mac_header", "inner_network_header", "inner_transport_header"):
                if d.get(name, -1) >= 0:
                    d[name] += delta
""",
        """        if self.inner_mac_header >= 0:
            self.inner_mac_header += delta
        if self.inner_network_header >= 0:
            self.inner_network_header += delta
        if self.inner_transport_header >= 0:
            self.inner_transport_header += delta
""",
        "a native class has no __dict__: the rare fields are native attributes",
    ),
    (
        "netstack/core/skbuff.py",
        "        new = _new_skb(SkBuff)\n",
        "        new = SkBuff(self.buf, self.data, self.tail)\n",
        "object.__new__ refuses a native class (TypeError: not safe), and a native"
        " SkBuff.__new__ runs __init__ (which sets no more than clone then overwrites)",
    ),
    (
        "netstack/core/skbuff.py",
        "_new_skb: Final = object.__new__\n",
        "\n",
        "its one use is rewritten above (a new use then fails the build's mypy pass)",
    ),
    (
        "netstack/core/skbuff.py",
        """        d = self.__dict__
        if d:  # the rare fields
            new.__dict__.update(d)
""",
        "".join(f"        new.{name} = self.{name}\n" for name in _RARE_SKB_FIELDS),
        "a native class has no __dict__: clone copies the rare fields one by one",
    ),
    (
        "netstack/tunnels/ip_tunnel.py",
        "str(b) for b in buf[outer_nh + 12 : outer_nh + 16])",
        "str(b) for b in list(buf[outer_nh + 12 : outer_nh + 16]))",
        "mypyc 2.4 crashes on a generator over a bytearray slice (not a valid sequence)",
    ),
    (
        "netstack/tcp/sock.py",
        "        self.af_specific: InetConnectionSockAfOps = listener.af_ops\n",
        "        self.af_specific: InetConnectionSockAfOps = listener.af_ops\n"
        "        self._oow: Any = None\n",
        "req_ratelimit stores _oow on a RequestSock: a native class needs it declared",
    ),
    (
        "netstack/tcp/minisocks.py",
        "        req._oow = holder  # type: ignore[attr-defined]\n",
        "        req._oow = holder\n",
        "the ignore is unused once RequestSock declares _oow (mypy --strict rejects it)",
    ),
    # the lab's modules (mypyclab): br_flood's written-out skb_clone() for a native SkBuff
    (
        "netstack/bridge/br_forward.py",
        "_new_skb: Final = instance_allocator(SkBuff)\n",
        "_new_skb: Final = True\n",
        "instance_allocator is None for a native SkBuff, which took the skb.clone() path;"
        " the copy keeps the written-out clone, constructing each copy (below)",
    ),
    (
        "netstack/bridge/br_forward.py",
        "                skb2 = new_skb(SkBuff)\n",
        "                skb2 = SkBuff(buf, d, tail)\n",
        "object.__new__ refuses a native class; its __init__ sets no more than the"
        " stores below then overwrite",
    ),
    (
        "netstack/bridge/br_forward.py",
        "        rare = skb.__dict__\n",
        "\n",
        "a native class has no __dict__: the rare fields are native attributes (below)",
    ),
    (
        "netstack/bridge/br_forward.py",
        "                if rare:  # the rare fields\n"
        "                    skb2.__dict__.update(rare)\n",
        "".join(f"                skb2.{name} = skb.{name}\n" for name in _RARE_SKB_FIELDS),
        "a native class has no __dict__: the written-out clone copies the rare fields"
        " one by one, as SkBuff.clone's copy does",
    ),
    (
        "netstack/core/net.py",
        '    __slots__ = (\n        "__dict__",\n        "_net_tx_lot",\n',
        '    __slots__ = (\n        "_net_tx_lot",\n',
        "a native class has no __dict__, and nothing sets an undeclared attribute on a Net"
        " (the not-slow suite run with the slot removed)",
    ),
    (
        "netstack/ipv4/netns.py",
        '    __slots__ = (\n        "__dict__",\n        "_loopback",\n',
        '    __slots__ = (\n        "_loopback",\n',
        "a native class has no __dict__; what sets an undeclared attribute on an Ipv4 is"
        " the tests that replace ip_route_output_key on the instance (pure_python_layout)",
    ),
    (
        "netstack/core/netdevice.py",
        '        "__dict__",  # holds _xmit_lock and dql once made (FirstUse)\n',
        '        "_dql",\n        "_lock",\n',
        "a native class has no __dict__: NetdevQueue's first-use fields are properties"
        " over two declared fields (the transmit path reads its state, qdisc and lock"
        " owner on every packet)",
    ),
    (
        "netstack/core/netdevice.py",
        "    _xmit_lock = FirstUse(lambda txq: SpinLock("
        'f"{txq._lock_dev}:_xmit_lock[{txq.index}]"))\n'
        "    dql = FirstUse(lambda txq: Dql(txq.dev.net.clock))\n",
        """    _lock: SpinLock | None
    _dql: Dql | None

    @property
    def _xmit_lock(self) -> SpinLock:
        lock = self._lock
        if lock is None:
            lock = self._lock = SpinLock(f"{self._lock_dev}:_xmit_lock[{self.index}]")
        return lock

    @property
    def dql(self) -> Dql:
        dql = self._dql
        if dql is None:
            dql = self._dql = Dql(self.dev.net.clock)
        return dql
""",
        "the same: made on first read, as FirstUse makes them",
    ),
    (
        "netstack/core/netdevice.py",
        "        self.tx_packets = 0\n        self.tx_bytes = 0\n",
        "        self.tx_packets = 0\n        self.tx_bytes = 0\n"
        "        self._lock = None\n        self._dql = None\n",
        "the same: the two fields behind the properties",
    ),
    # native SNMP counters (mypycsnmp): each counter a native attribute with a 0
    # default, set by the C constructor instead of a generated zeroing function
    *(patch for path, names in COUNTER_CLASSES.items() for patch in counter_defaults(path, names)),
    (
        "netstack/core/snmp.py",
        "    def __init_subclass__(cls) -> None:\n"
        "        super().__init_subclass__()\n"
        '        slots = cls.__dict__.get("__slots__", ())\n'
        "        if slots and slots != cls.FIELDS:  # one field tuple, stated twice: keep in step\n"
        '            raise TypeError(f"{cls.__name__}: FIELDS is not its __slots__ tuple")\n'
        "        cls._zero = attr_zeroer(cls.FIELDS)\n"
        "\n"
        "    def __init__(self) -> None:\n"
        "        type(self)._zero(self)"
        "  # every counter 0 (a generated function: a host makes dozens)\n",
        "\n",
        "a native subclass sets its counters' 0 defaults in its constructor (above); no"
        " class attribute is set on a native class after it is made",
    ),
    (
        "netstack/core/netdevice.py",
        "    __slots__ = _STAT_FIELDS\n\n"
        "    def __init__(self) -> None:\n        _zero_stats(self)\n",
        "\n",
        "the same for DevStats (dev->stats): its counters are native defaults (mypyc"
        " ignores __slots__; interpreted, as a test runs the copy, slots would clash with"
        " the defaults)",
    ),
    # TCP (tcpseg): the Net's TCP state native
    (
        "netstack/tcp/proto.py",
        '        "TCP_TIMEWAIT_LEN",\n        "__dict__",\n',
        '        "TCP_TIMEWAIT_LEN",\n',
        "a native class has no __dict__, and nothing sets an undeclared attribute on a Tcp"
        " (tests/tcp, packetdrill, socket, userspace, ipv6 run with the slot removed)",
    ),
    (
        "netstack/tcp/rcvmem.py",
        "    for name in TcpSkbCb.__slots__:\n",
        '    for name in getattr(TcpSkbCb, "__slots__"):\n',
        "mypy refuses __slots__ read through a native class object; the copy of"
        " tcp/sock.py gives TcpSkbCb its __slots__ back at the end (rewrite)",
    ),
    # the typed data path (mypyctyped): dst_output()'s INDIRECT_CALL_INET() as the
    # kernel has it, a direct call of ip_output for an IPv4 unicast route (compiled code
    # then calls it natively, not through the MethodType and the wrapper that unpacks its
    # arguments); the pure package keeps the call through the route's output, which
    # costs it less than the test would
    (
        "netstack/ipv4/udp.py",
        "    output = rt.output  # dst_output(): through a local, as ip_local_out\n"
        "    rc = output(skb)\n",
        "    output = rt.output  # dst_output(): through a local, as ip_local_out\n"
        "    rc = ip_output(ipv4, skb) if output is ipv4.dst_output else output(skb)\n",
        "dst_output()'s INDIRECT_CALL_INET(): ip_output called directly (natively) for a"
        " unicast route",
    ),
    (
        "netstack/ipv4/udp.py",
        "from netstack.ipv4.route import Flowi4, ip_route_sock_flow\n",
        "from netstack.ipv4.ip_output import ip_output\n"
        "from netstack.ipv4.route import Flowi4, ip_route_sock_flow\n",
        "the same: ip_output imported (netstack imports ip_output before udp)",
    ),
    (
        "netstack/ipv4/ip_input.py",
        "    output = rt.output  # ip_forward_finish(): dst_output(), through a local as above\n"
        "    rc: int = output(skb)\n",
        "    output = rt.output  # ip_forward_finish(): dst_output(), through a local as above\n"
        "    rc: int = ip_output(ipv4, skb) if output is ipv4.dst_output else output(skb)\n",
        "the same in ip_forward_finish()'s dst_output()",
    ),
    (
        "netstack/ipv4/ip_input.py",
        "from netstack.ipv4.route import ip_dst_mtu_maybe_forward, ip_route_input_noref\n",
        "from netstack.ipv4.ip_output import ip_output\n"
        "from netstack.ipv4.route import ip_dst_mtu_maybe_forward, ip_route_input_noref\n",
        "the same: ip_output imported (netstack imports ip_output before ip_input)",
    ),
    # the tunnels (tuntyped): a GRO cell's queue as a list in the copy, whose append
    # and pop(0) compiled code does natively (a deque's are method calls by name, two a
    # tunnelled packet); the pure package keeps the deque, whose popleft costs it less
    # than a list's pop(0). pop(0) moves the rest of the list: cheaper than a deque's
    # method call at the depths a cell holds between polls (measured up to 64, one
    # budget), dearer for a cell backed up towards netdev_max_backlog (1,000: about
    # 155 ns an skb against 49, interpreted; review of the eleventh round)
    (
        "netstack/core/gro_cells.py",
        "        self.queues: list[collections.deque[SkBuff]] = []\n",
        "        self.queues: list[list[SkBuff]] = []\n",
        "a GRO cell's queue (struct gro_cell's napi_skbs) as a list: native append and pop",
    ),
    (
        "netstack/core/gro_cells.py",
        "            queue: collections.deque[SkBuff] = collections.deque()\n",
        "            queue: list[SkBuff] = []\n",
        "the same",
    ),
    (
        "netstack/core/gro_cells.py",
        "                kfree_skb(queue.popleft(), DropReason.QUEUE_PURGE)\n",
        "                kfree_skb(queue.pop(0), DropReason.QUEUE_PURGE)\n",
        "the same (gro_cells_destroy)",
    ),
    (
        "netstack/core/gro_cells.py",
        "    queue: collections.deque[SkBuff] = napi.priv\n",
        "    queue: list[SkBuff] = napi.priv\n",
        "the same (gro_cell_poll)",
    ),
    (
        "netstack/core/gro_cells.py",
        "        napi_gro_receive(napi, queue.popleft())\n",
        "        napi_gro_receive(napi, queue.pop(0))\n",
        "the same (gro_cell_poll: __skb_dequeue, the head first)",
    ),
    # devtyped
    (
        "netstack/ipv4/netns.py",
        "from typing import TYPE_CHECKING, Any\n",
        "from typing import TYPE_CHECKING, Any, Final\n",
        "Final for the spenders' alias that timed_from_spenders appends (TIMED_FROM_SPENDERS)",
    ),
    (
        "netstack/drivers/veth.py",
        "    net = dev.net\n",
        "    net = dev.net; _ipv4: Ipv4 | None = _v4 if isinstance(_v4 := net.ipv4, Ipv4)"
        " else None\n",
        "the namespace's IPv4, read once a poll, for the direct calls below",
    ),
    (
        "netstack/drivers/veth.py",
        "                func(skb, dev, matched, dev)\n",
        "                ip_rcv(_ipv4, skb, dev, matched, dev) if _ipv4 is not None and func is"
        " _ipv4.ip_rcv_func else arp_rcv(_ipv4, skb, dev, matched, dev) if _ipv4 is not None"
        " and func is _ipv4.arp_rcv_func else func(skb, dev, matched, dev)\n",
        "__netif_receive_skb_one_core()'s INDIRECT_CALL_INET (ipv6_rcv, ip_rcv there; arp_rcv"
        " is netstack's addition): veth_poll calls ip_rcv (and arp_rcv) directly when the"
        " handler is the namespace's own function (the macro compares the function, not the"
        " packet type), not through the MethodType and the compiled function's"
        " argument-parsing wrapper",
    ),
    (
        "netstack/drivers/veth.py",
        "from netstack.core.net import Net, PacketType\n",
        "from netstack.core.net import Net, PacketType\nfrom netstack.ipv4.arp import arp_rcv;"
        " from netstack.ipv4.ip_input import ip_rcv; from netstack.ipv4.netns import Ipv4\n",
        "the same: ip_rcv, arp_rcv and Ipv4 imported (netstack imports ipv4 before drivers)",
    ),
    (
        "netstack/ipv4/ip_input.py",
        "        protocol_handler = handler.handler  # a local: see dst_input above\n"
        "        protocol_handler(skb)\n",
        "        protocol_handler = handler.handler  # a local: see dst_input above\n"
        "        udp_rcv(ipv4, skb) if protocol_handler is ipv4.udp_rcv_func"
        " else icmp_rcv(ipv4, skb) if protocol_handler is ipv4.icmp_rcv_func"
        " else protocol_handler(skb)\n",
        "ip_protocol_deliver_rcu()'s INDIRECT_CALL_2 (tcp_v4_rcv, udp_rcv there; icmp_rcv is"
        " netstack's addition) in ip_rcv's written-out delivery: udp_rcv (and icmp_rcv) called"
        " directly when the handler is the namespace's own function",
    ),
    (
        "netstack/ipv4/ip_input.py",
        "        protocol_handler = handler.handler  # a local: see ip_rcv_finish\n"
        "        protocol_handler(skb)\n",
        "        protocol_handler = handler.handler  # a local: see ip_rcv_finish\n"
        "        udp_rcv(ipv4, skb) if protocol_handler is ipv4.udp_rcv_func"
        " else icmp_rcv(ipv4, skb) if protocol_handler is ipv4.icmp_rcv_func"
        " else protocol_handler(skb)\n",
        "the same in ip_local_deliver()'s ip_protocol_deliver_rcu()",
    ),
    (
        "netstack/ipv4/ip_input.py",
        "from netstack.ipv4.constants import ",
        "from netstack.ipv4.icmp import icmp_rcv; from netstack.ipv4.udp import udp_rcv;"
        " from netstack.ipv4.constants import ",
        "the same: udp_rcv and icmp_rcv imported (netstack imports icmp before ip_input, and"
        " udp imports nothing of ip_input)",
    ),
    # The clock's reads of Trio's MockClock (tunout): compiled code reads an attribute of
    # a Python object generically (~200 instructions), a dict item in ~130; the pure
    # package keeps the attribute reads, which CPython specialises (faster than a dict
    # subscript there). The copy keeps the instance's own dict (vars(): Trio's writes
    # land in it), checked for the two keys.
    (
        "netstack/cpu/clock.py",
        "from typing import Final\n",
        "from typing import Any, Final\n",
        "Any for the MockClock's attribute dict (Clock._mock in the copy)",
    ),
    (
        "netstack/cpu/clock.py",
        "        # the run's MockClock, read directly (the build's copy keeps its attribute dict:\n"
        "        # scripts/build_compiled.py)\n"
        "        self._mock: trio.testing.MockClock | None = None\n",
        "        self._mock: dict[str, Any] | None = None\n",
        "Clock._mock: the MockClock's attribute dict, read by key",
    ),
    (
        "netstack/cpu/clock.py",
        "            if (\n"
        "                isinstance(clock, trio.testing.MockClock)\n"
        '                and hasattr(clock, "_virtual_base")\n'
        '                and hasattr(clock, "_rate")\n'
        "            ):\n"
        "                self._mock = clock\n",
        '            attrs = getattr(clock, "__dict__", None)\n'
        "            if (\n"
        "                isinstance(clock, trio.testing.MockClock)\n"
        "                and isinstance(attrs, dict)\n"
        '                and "_virtual_base" in attrs\n'
        '                and "_rate" in attrs\n'
        "            ):\n"
        "                self._mock = attrs\n",
        "the same: follow_run_clock keeps the MockClock's own dict",
    ),
    (
        "netstack/cpu/clock.py",
        "        if mock is not None and not mock._rate:\n"
        "            base: float = mock._virtual_base\n",
        '        if mock is not None and not mock["_rate"]:\n'
        '            base: float = mock["_virtual_base"]\n',
        "the same: now() reads _rate and _virtual_base from the dict",
    ),
    (
        "netstack/cpu/clock.py",
        "            if mock is None or mock._rate:\n",
        '            if mock is None or mock["_rate"]:\n',
        "the same in hold()",
    ),
    (
        "netstack/cpu/clock.py",
        "            vbase = mock._virtual_base\n",
        '            vbase = mock["_virtual_base"]\n',
        "the same in jiffies",
    ),
    (
        "netstack/cpu/clock.py",
        "            if not mock._rate:  # now(), inline",
        '            if not mock["_rate"]:  # now(), inline',
        "the same in jiffies",
    ),
)
"""Textual rewrites of the copy: (path, old, new, why). What compiling needs beyond the markers."""

NON_NATIVE: dict[str, dict[str, str]] = {
    "netstack/core/net.py": {
        "SoftnetData": "its backlog (input_pkt_queue) is made on first use into its __dict__"
        " (FirstUse)",
    },
    "netstack/userspace/iputils/ping.py": {
        "_LiveLines": "a list subclass (mypyc: inheriting from most builtin types is"
        " unimplemented)",
    },
}
"""Classes of a compiled module that stay Python classes (``@mypyc_attr(native_class=False)``
in the copy): path -> {class: why}. Their methods are still compiled."""

GROUP = "netstack._compiled"
"""mypyc's shared library for the group (``netstack/_compiled__mypyc.*.so``)."""


def _module_name(path: str) -> str:
    return ".".join(Path(path).with_suffix("").parts).removesuffix(".__init__")


def interpreted_bases(compiled: list[str]) -> set[str]:
    """Names of classes that classes outside the *compiled* paths (or in tests) derive from."""
    names: set[str] = set()
    skip = {(ROOT / path).resolve() for path in compiled}
    for path in [*(ROOT / "netstack").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        if path.resolve() in skip:
            continue
        for bases in _CLASS_BASES.findall(path.read_text()):
            for base in bases.split(","):
                names.add(base.split("[")[0].strip().rsplit(".", 1)[-1])
    return names


_CLASS_BASES = re.compile(r"^\s*class\s+\w+(?:\[[^\]]*\])?\(([^)]*)\)", re.MULTILINE)


def compiled_bases(compiled: list[str]) -> set[str]:
    """Names of classes that classes in the *compiled* paths derive from."""
    names: set[str] = set()
    for path in compiled:
        for bases in _CLASS_BASES.findall((ROOT / path).read_text()):
            for base in bases.split(","):
                names.add(base.split("[")[0].strip().rsplit(".", 1)[-1])
    return names


def with_compiled_ancestors(subclassed: set[str], compiled: list[str]) -> set[str]:
    """*subclassed* and the classes of the *compiled* paths they derive from, transitively.

    mypyc refuses a class that allows interpreted subclasses when a compiled base
    does not ("Base class HeaderOps does not allow interpreted subclasses": the
    compiled ``EthHeaderOps`` allows them, so its base in ``core/netdevice.py`` must).
    """
    bases: dict[str, set[str]] = {}
    for path in compiled:
        for node in ast.parse((ROOT / path).read_text()).body:
            if isinstance(node, ast.ClassDef):
                names = {ast.unparse(b).split("[")[0].rsplit(".", 1)[-1] for b in node.bases}
                bases.setdefault(node.name, set()).update(names)
    out = set(subclassed)
    todo = list(out)
    while todo:
        for base in bases.get(todo.pop(), ()):
            if base in bases and base not in out:
                out.add(base)
                todo.append(base)
    return out


def rewrite(
    text: str,
    module: str,
    subclassed: set[str],
    natively_subclassed: frozenset[str] = frozenset(),
    non_native: frozenset[str] = frozenset(),
) -> str:
    """*text* without ``@kernel(...)`` decorator lines, registering the same markers at the end.

    A top-level class named in *subclassed* gets ``@mypyc_attr(allow_interpreted_subclasses=True)``,
    one named in *non_native* ``@mypyc_attr(native_class=False)``.
    """
    lines = text.splitlines(keepends=True)
    markers: dict[str, tuple[str, ...]] = {}
    opened: list[tuple[int, str]] = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name in non_native:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            opened.append((first - 1, "native_class=False"))
        elif isinstance(node, ast.ClassDef) and node.name in subclassed:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            opened.append((first - 1, "allow_interpreted_subclasses=True"))

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            qual = prefix + node.name
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Name)
                    and deco.func.id == "kernel"
                ):
                    refs = tuple(ast.literal_eval(arg) for arg in deco.args)
                    markers[f"{module}.{qual}"] = refs
                    end = deco.end_lineno if deco.end_lineno is not None else deco.lineno
                    for i in range(deco.lineno - 1, end):
                        lines[i] = "\n"
            if isinstance(node, ast.ClassDef):
                walk(node.body, qual + ".")
            else:
                walk(node.body, qual + ".<locals>.")

    walk(ast.parse(text).body, "")
    for i, attr in opened:
        lines[i] = f"@mypyc_attr({attr})\n" + lines[i]
    if opened:  # on the __future__ import's line: the other lines keep their numbers
        future = lines.index("from __future__ import annotations\n")
        lines[future] = (
            "from __future__ import annotations; from mypy_extensions import mypyc_attr\n"
        )
    # mypyc drops a native class's __slots__; code outside reads it (rcvmem's
    # _copy_cb copies TcpSkbCb's fields by it): the class gets it back afterwards,
    # unless a compiled class derives from it (mypyc then refuses to make the
    # subclass: "mypyc classes can't have __slots__")
    slots = [
        f'setattr({node.name}, "__slots__", {ast.get_source_segment(text, stmt.value)})\n'
        for node in ast.parse(text).body
        if isinstance(node, ast.ClassDef)
        and node.name not in natively_subclassed
        and node.name not in non_native
        for stmt in node.body
        if isinstance(stmt, ast.Assign)
        and [getattr(t, "id", None) for t in stmt.targets] == ["__slots__"]
    ]
    tail = ["\n", *slots] if slots else []
    if markers:
        tail += ["\n", "from netstack.sites import MARKERS as _MARKERS  # noqa: E402\n", "\n"]
        tail += ["_MARKERS.update(\n", "    {\n"]
        tail += [f"        {key!r}: {refs!r},\n" for key, refs in markers.items()]
        tail += ["    }\n", ")\n"]
    return "".join(lines) + "".join(tail)


def prepare(dest: Path, modules: list[str]) -> Path:
    """Copy the package to *dest*/src and rewrite the modules to compile; return src."""
    src = dest / "src"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(
        ROOT / "netstack", src / "netstack", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", src / "pyproject.toml")  # mypy's configuration
    subclassed = with_compiled_ancestors(interpreted_bases(modules), modules)
    natively = frozenset(compiled_bases(modules))
    for path in modules:
        text = patched(path, (src / path).read_text())
        non_native = frozenset(NON_NATIVE.get(path, {}))
        (src / path).write_text(rewrite(text, _module_name(path), subclassed, natively, non_native))
    return src


def patched(path: str, text: str) -> str:
    """*text* (the module at *path*) with its :data:`PATCHES` applied (and, for the
    modules of :data:`TIMED_FROM_SPENDERS`, :func:`timed_from_spenders`)."""
    for patch_path, old, new, _why in PATCHES:
        if patch_path == path:
            if old not in text:
                raise SystemExit(f"{path}: the text to patch is gone: {old!r}")
            text = text.replace(old, new)
    if path in TIMED_FROM_SPENDERS:
        text = timed_from_spenders(path, text)
    return text


TIMED_FROM_SPENDERS: tuple[str, ...] = (
    "netstack/core/ethernet.py",
    "netstack/core/sock.py",
    "netstack/core/xmit.py",
    "netstack/drivers/veth.py",
    "netstack/ipv4/fib.py",
    "netstack/ipv4/ip_input.py",
    "netstack/ipv4/ip_output.py",
    "netstack/ipv4/route.py",
    "netstack/ipv4/udp.py",
    "netstack/neigh/neighbour.py",
    # the GRE and IPIP tunnels' own per-packet code (tuntyped): ipip_tunnel_xmit/ipgre_xmit,
    # ip_tunnel_xmit, tunnel4_rcv/gre_rcv, ipip_rcv/ipgre_rcv, gre_parse_header,
    # ip_tunnel_lookup and ip_tunnel_rcv read TIMED some twelve times a tunnelled packet
    "netstack/tunnels/ip_tunnel.py",
    "netstack/tunnels/ip_gre.py",
    "netstack/tunnels/ipip.py",
    "netstack/tunnels/gre_demux.py",
    "netstack/tunnels/tunnel4.py",
    # TCP's send and receive paths (tcpnooff): each ``if TIMED:`` a lookup in the
    # module's dictionary per charge site, some ten a segment with its share of the
    # ACKs; the IPv4 header checksum (ip_send_check, ip_rcv) and GRO's TCP receive.
    # (tcp/tcp.py and tcp/timer.py name ETIMEDOUT, which the check of the copy,
    # test_timed_reads_the_spenders_list_in_the_copy, takes for a read of TIMED)
    "netstack/tcp/input.py",
    "netstack/tcp/output.py",
    "netstack/tcp/minisocks.py",
    "netstack/ipv4/tcp_ipv4.py",
    "netstack/gro/tcp.py",
    "netstack/wire/checksum.py",
    # the device core, the skb's frees, the device's queue tests, the namespace's
    # source check and the neighbour glue: read on every packet's path (dev_queue_xmit
    # three times a packet, consume_skb once), a dictionary lookup each (devtyped)
    "netstack/core/dev.py",
    "netstack/core/skbuff.py",
    "netstack/core/netdevice.py",
    "netstack/ipv4/netns.py",
    "netstack/ipv4/offload.py",
    "netstack/neigh/nud.py",
)
"""Compiled modules whose ``TIMED`` tests the copy makes tests of the spenders' list
(the typed data path, mypyctyped; :func:`timed_from_spenders`)."""

_SITES_IMPORT = "from netstack.sites import TIMED, kernel, spend\n"


def timed_from_spenders(path: str, text: str) -> str:
    """*text* with every read of ``TIMED`` made a test of ``netstack.sites._spender``.

    ``TIMED`` is a module global that :func:`netstack.sites.activate` rebinds in every
    charging module; compiled code reads a module global from the module's dictionary,
    a lookup by name per charge site (some thirty a UDP datagram). ``TIMED`` is
    ``bool(_spender)`` at every moment (``activate`` appends the spender and rebinds
    ``True`` with the first, ``deactivate`` removes it and rebinds ``False`` with the
    last), and the list is never replaced: the copy keeps it as a ``Final`` name, a C
    static whose length compiled code tests in a few instructions. The import of
    ``TIMED`` stays (``_rebind`` still finds and sets it).
    """
    if _SITES_IMPORT not in text:
        raise SystemExit(f"{path}: no {_SITES_IMPORT.strip()!r} to keep TIMED by")
    head, tail = text.split(_SITES_IMPORT, 1)
    tail = re.sub(r"\bTIMED\b", "_SPENDERS", tail)
    return (
        head
        + _SITES_IMPORT.replace("TIMED, ", "TIMED, _spender, ")
        + tail
        + "\n_SPENDERS: Final = _spender  # TIMED is bool(_spender) (netstack.sites)\n"
    )


def native_hazards(text: str) -> list[str]:
    """What a native class refuses at run time, found in *text* (a module to compile).

    ``x.__dict__`` (a native class has none), ``object.__new__`` (refused for a
    native class: ``TypeError: object.__new__(C) is not safe``), ``del x.attr``
    (a native attribute cannot be deleted back to a class default) and
    ``C.__init__`` taken from a class (on a native instance it runs nothing: the
    fields keep their values) and ``cast(T, None)`` (a typing lie compiled code
    checks: ``TypeError: T object expected; got None`` where T is native). mypy
    accepts all five, so the build succeeds and the failure comes only when the
    line runs (or, for ``__init__``, silently).
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            found.append(f"line {node.lineno}: .__dict__")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "__new__"
            and isinstance(node.value, ast.Name)
            and node.value.id == "object"
        ):
            found.append(f"line {node.lineno}: object.__new__")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "__init__"
            and isinstance(node.value, ast.Name)
            and node.value.id != "self"
        ):
            found.append(f"line {node.lineno}: {node.value.id}.__init__")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "cast"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value is None
        ):
            found.append(f"line {node.lineno}: cast(..., None)")
        elif isinstance(node, ast.Delete):
            found.extend(
                f"line {node.lineno}: del .{target.attr}"
                for target in node.targets
                if isinstance(target, ast.Attribute)
            )
    return sorted(found, key=lambda hazard: int(hazard.split(":")[0].removeprefix("line ")))


SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="netstack-compiled",
    packages=[],
    ext_modules=mypycify(sys.argv[2:], group_name={group!r}, opt_level={opt_level!r}),
    script_args=["build_ext", "--inplace"],
)
"""


def build(src: Path, modules: list[str], opt_level: str = "3") -> list[Path]:
    """Run mypyc over *modules* in *src*; return the extension modules it wrote."""
    (src / "_setup_compiled.py").write_text(SETUP.format(group=GROUP, opt_level=opt_level))
    subprocess.run([sys.executable, "_setup_compiled.py", "--", *modules], cwd=src, check=True)
    return sorted((src / "netstack").rglob("*.so"))


def clean() -> None:
    for so in (ROOT / "netstack").rglob("*.so"):
        so.unlink()
        print(f"removed {so.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"paths to compile (default: {len(MODULES)})")
    parser.add_argument("--dest", type=Path, default=ROOT / ".mypyc-build")
    parser.add_argument("--inplace", action="store_true", help="copy the .so files into netstack/")
    parser.add_argument("--clean", action="store_true", help="remove netstack/**/*.so and stop")
    parser.add_argument(
        "--opt-level",
        default="3",
        choices=["0", "1", "2", "3"],
        help="the C compiler's -O (0 builds several times faster: for running the tests)",
    )
    args = parser.parse_args()
    if args.clean:
        clean()
        return
    modules = list(args.modules) or list(MODULES)
    src = prepare(args.dest.resolve(), modules)
    built = build(src, modules, args.opt_level)
    for so in built:
        rel = so.relative_to(src)
        if args.inplace:
            shutil.copy(so, ROOT / rel)
        print(f"built {rel}")
    if not args.inplace:
        print(f"run with PYTHONPATH={src}")


if __name__ == "__main__":
    main()
