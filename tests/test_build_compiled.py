"""scripts/build_compiled.py (the optional mypyc build, issue 18): its module list
and source rewrites still match the tree. Nothing is compiled here (minutes of
gcc); the build itself is run by hand, see docs/performance.md."""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio
import trio.testing
from helpers import build_script

import netstack.ipv4.udp
import netstack.sites
from netstack.host import Lab
from netstack.ipv4 import ipv4_of
from netstack.ipv4.ip_output import ip_output
from netstack.testing.builders import open_test_lab, pair, routed

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def _charging() -> Iterator[list[str]]:
    """The sites charged while a spender is active (timed mode switched on after
    import, as the experiments do)."""
    charged: list[str] = []

    def spender(site: str, nbytes: int) -> None:
        charged.append(site)

    netstack.sites.activate(spender)
    try:
        yield charged
    finally:
        netstack.sites.deactivate(spender)


async def _one_datagram_charges(cli: Any, srv: Any, addr: tuple[str, int]) -> list[str]:
    """The sites a datagram from *cli* to *srv* charges while a spender is active:
    a first one resolves ARP uncounted, and a third, after, must charge none."""
    await cli.sendto(b"x", addr)
    await srv.recvfrom(100)
    with _charging() as charged:
        await cli.sendto(b"y", addr)
        assert (await srv.recvfrom(100))[0] == b"y"
    counted = len(charged)
    await cli.sendto(b"z", addr)
    assert (await srv.recvfrom(100))[0] == b"z"
    assert len(charged) == counted
    return charged


def test_the_modules_to_compile_exist_and_import() -> None:
    script = build_script()
    for path in script.MODULES:
        assert (ROOT / path).is_file(), path
        importlib.import_module(script._module_name(path))


def test_every_patch_still_applies() -> None:
    """A rewrite whose text is gone would stop the build: each old text occurs (once,
    but for ``del skb.x``, which the device core may write out in several functions)."""
    script = build_script()
    for path, old, new, why in script.PATCHES:
        assert path in script.MODULES and why
        count = (ROOT / path).read_text().count(old)
        assert count == 1 or (count > 1 and old.startswith("del skb.")), (path, old)
        ast.parse((ROOT / path).read_text().replace(old, new))
    assert "tstamp" in script.skb_rare_fields() and "mark" in script.skb_rare_fields()


def test_rewrite_keeps_the_markers_and_the_line_numbers() -> None:
    """The compiled copy loses its @kernel decorator lines but registers the same
    MARKERS entries, and every other line stays where it was."""
    script = build_script()
    path = "netstack/wire/checksum.py"
    text = (ROOT / path).read_text()
    out = script.rewrite(text, "netstack.wire.checksum", set())
    assert "@kernel(" not in out
    old_lines, new_lines = text.splitlines(), out.splitlines()
    for old, new in zip(old_lines, new_lines, strict=False):
        assert new == ("" if old.startswith("@kernel(") else old)
    tail = ast.parse("\n".join(new_lines[len(old_lines) :]))
    registered = next(
        ast.literal_eval(node.value.args[0])
        for node in tail.body
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    )
    before = {
        k: v for k, v in netstack.sites.MARKERS.items() if k.startswith("netstack.wire.checksum.")
    }
    assert registered == before  # the same entries the decorators made
    assert before["netstack.wire.checksum.ip_fast_csum"] == (
        "arch/x86/include/asm/checksum_64.h",
        "ip_fast_csum",
    )


def test_classes_subclassed_outside_the_build_allow_interpreted_subclasses() -> None:
    script = build_script()
    # IPv6's Rt6Info, DstEntry's interpreted subclass, is compiled since the tenth
    # round (ipv6/route.py, for the lab's memory): left out, DstEntry is subclassed
    modules = [path for path in script.MODULES if path != "netstack/ipv6/route.py"]
    subclassed = script.interpreted_bases(modules)
    assert {"Sock", "DstEntry"} <= subclassed
    assert "DstEntry" not in script.interpreted_bases(list(script.MODULES))
    out = script.rewrite(
        (ROOT / "netstack/core/dst.py").read_text(), "netstack.core.dst", subclassed
    )
    assert "@mypyc_attr(allow_interpreted_subclasses=True)\nclass DstEntry" in out
    assert len(out.splitlines()) > len((ROOT / "netstack/core/dst.py").read_text().splitlines())


def test_the_compiled_copies_use_nothing_a_native_class_refuses() -> None:
    """``x.__dict__``, ``object.__new__`` and ``del x.attr`` compile but fail when run
    (skb_clone's ``object.__new__(SkBuff)`` stopped every TCP connect in the build):
    after the rewrites, none is left in the modules to compile."""
    script = build_script()
    for path in script.MODULES:
        text = script.patched(path, (ROOT / path).read_text())
        assert script.native_hazards(text) == [], path
    assert script.native_hazards("x = object.__new__(C)\ndel s.a\nd = s.__dict__\n") == [
        "line 1: object.__new__",
        "line 2: del .a",
        "line 3: .__dict__",
    ]


def test_a_native_class_gets_its_slots_back() -> None:
    """mypyc drops ``__slots__``, which interpreted code reads (``rcvmem._copy_cb``
    copies ``TcpSkbCb``'s fields by it): the copy sets it again after the class."""
    from netstack.tcp.sock import TcpSkbCb

    script = build_script()
    out = script.rewrite((ROOT / "netstack/tcp/sock.py").read_text(), "netstack.tcp.sock", set())
    slots = {
        node.value.args[0].id: ast.literal_eval(node.value.args[2])
        for node in ast.parse(out).body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "setattr"
        and isinstance(node.value.args[0], ast.Name)
        and ast.literal_eval(node.value.args[1]) == "__slots__"
    }
    assert slots["TcpSkbCb"] == TcpSkbCb.__slots__
    # ... but not on a class a compiled class derives from: mypyc would refuse the subclass
    dst = (ROOT / "netstack/core/dst.py").read_text()
    assert "DstEntry" in script.compiled_bases(list(script.MODULES))
    natively = frozenset(script.compiled_bases(list(script.MODULES)))
    assert 'setattr(DstEntry, "__slots__"' not in script.rewrite(dst, "d", set(), natively)
    assert 'setattr(DstEntry, "__slots__"' in script.rewrite(dst, "d", set())


def test_taking_init_from_a_class_is_a_hazard() -> None:
    """``C.__init__`` taken from a native class and called on an instance runs
    nothing (mypyc's ``tp_init`` does not run the compiled ``__init__``): GRO once
    reused a flushed packet's cb unzeroed that way and merged nothing in the build.
    A module to compile may not take it (``GroNode.receive`` writes the reset out)."""
    script = build_script()
    assert script.native_hazards("init: Final = C.__init__\n") == ["line 1: C.__init__"]
    assert script.native_hazards("super().__init__(x)\nself.__init__(x)\n") == []


def test_the_lab_modules_are_compiled() -> None:
    """The 10,000-host lab's pings (``benchmarks/lab_scale.py``) ran the bridge's
    flood and forward (and the ports' and bridge's state), ARP, ICMP, the ping
    socket and the NUD and timer glue interpreted in the 42-module build; they
    are compiled too."""
    script = build_script()
    for path in (
        "netstack/bridge/br_forward.py",
        "netstack/bridge/br_input.py",
        "netstack/bridge/br_private.py",
        "netstack/ipv4/arp.py",
        "netstack/ipv4/icmp.py",
        "netstack/ipv4/ping.py",
        "netstack/neigh/nud.py",
    ):
        assert path in script.MODULES, path


def test_br_flood_clones_natively_in_the_copy() -> None:
    """``br_flood`` writes ``skb_clone()`` out with ``object.__new__`` and the
    original's ``__dict__`` (its rare fields); in the copy it constructs each clone
    and copies every rare field of ``SkBuff`` by name, as the copy's ``clone`` does."""
    script = build_script()
    path = "netstack/bridge/br_forward.py"
    text = script.patched(path, (ROOT / path).read_text())
    assert "SkBuff(buf, d, tail)" in text and "new_skb(SkBuff)" not in text
    for name in script.skb_rare_fields():
        assert f"skb2.{name} = skb.{name}\n" in text, name


def test_the_compiled_ancestors_of_a_subclassed_class_allow_interpreted_subclasses() -> None:
    """mypyc refuses ``allow_interpreted_subclasses`` on a class whose compiled base
    lacks it ("Base class HeaderOps does not allow interpreted subclasses"):
    drivers subclass the compiled ``EthHeaderOps``, so ``HeaderOps`` needs it too."""
    script = build_script()
    modules = list(script.MODULES)
    subclassed = script.interpreted_bases(modules)
    assert "EthHeaderOps" in subclassed and "HeaderOps" not in subclassed
    closed = script.with_compiled_ancestors(subclassed, modules)
    assert "HeaderOps" in closed and subclassed <= closed
    out = script.rewrite(
        (ROOT / "netstack/core/netdevice.py").read_text(), "netstack.core.netdevice", closed
    )
    assert "@mypyc_attr(allow_interpreted_subclasses=True)\nclass HeaderOps" in out


def test_a_class_that_needs_a_dict_stays_a_python_class() -> None:
    """A native class has no ``__dict__``: a compiled module's class with ``FirstUse``
    fields (stored into the instance's ``__dict__`` on first read) left after the
    PATCHES is listed in NON_NATIVE, and the copy makes it ``native_class=False``."""
    script = build_script()
    for path in script.MODULES:
        text = script.patched(path, (ROOT / path).read_text())
        for node in ast.parse(text).body:
            if not isinstance(node, ast.ClassDef):
                continue
            src = ast.get_source_segment(text, node) or ""
            if "FirstUse(" in src:
                assert node.name in script.NON_NATIVE.get(path, {}), (path, node.name)
    path = "netstack/core/net.py"
    out = script.rewrite(
        (ROOT / path).read_text(),
        "netstack.core.net",
        set(),
        non_native=frozenset(script.NON_NATIVE[path]),
    )
    assert "@mypyc_attr(native_class=False)\nclass SoftnetData" in out
    assert 'setattr(Net, "__slots__"' in out


def test_netdev_queue_makes_its_lock_and_dql_on_first_use_in_the_copy() -> None:
    """NetdevQueue's FirstUse fields become properties over declared fields in the
    copy (a native class has no ``__dict__`` to store them in); the queue then
    behaves as the pure one: nothing made until read, the same object after."""
    script = build_script()
    path = "netstack/core/netdevice.py"
    text = script.patched(path, (ROOT / path).read_text())
    assert "FirstUse(" not in text and '"__dict__"' not in text
    namespace: dict[str, object] = {}
    exec(compile(text, path, "exec"), namespace)  # the patched module, interpreted
    queue_cls: Any = namespace["NetdevQueue"]
    dev = SimpleNamespace(name="eth0", net=SimpleNamespace(noop_qdisc=None, clock=None))
    dev.net.cacheline = lambda kind: None
    txq = queue_cls(dev, 0)
    assert txq._lock is None and txq._dql is None
    lock = txq._xmit_lock
    assert lock.name == "eth0:_xmit_lock[0]" and txq._xmit_lock is lock and txq._lock is lock


def test_net_and_ipv4_lose_their_dict_slot_in_the_copy() -> None:
    """``Net`` and ``Ipv4`` keep a ``__dict__`` slot in the pure package for what is
    set on them later; nothing in the package does (the not-slow suite passes with
    the slot removed, but for the tests marked ``pure_python_layout`` that replace
    ``Ipv4.ip_route_output_key`` on an instance): the native copies have none."""
    script = build_script()
    for path, cls in (("netstack/core/net.py", "Net"), ("netstack/ipv4/netns.py", "Ipv4")):
        assert path in script.MODULES
        text = script.patched(path, (ROOT / path).read_text())
        node = next(
            n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == cls
        )
        slots = next(
            ast.literal_eval(s.value)
            for s in node.body
            if isinstance(s, ast.Assign) and getattr(s.targets[0], "id", "") == "__slots__"
        )
        assert "__dict__" not in slots and len(slots) > 40, (cls, slots)


def test_casting_none_is_a_hazard() -> None:
    """``cast(T, None)`` passes mypy, but compiled code checks the value against a
    native T: ``parp_redo`` handed ``arp_rcv`` ``cast("PacketType", None)`` and,
    once ``core/net.py`` was compiled, every delayed proxy ARP reply raised
    ``TypeError: netstack.core.net.PacketType object expected; got None``."""
    script = build_script()
    assert script.native_hazards('f(cast("PacketType", None))\n') == ["line 1: cast(..., None)"]
    assert script.native_hazards("x = cast(int, y)\ncast(str)\n") == []


def test_the_data_path_reads_typed_values() -> None:
    """A value typed ``Any`` is read by compiled code through the generic attribute
    lookup, and every ``int`` it gives is boxed: the socket of ``udp_sendmsg`` and the
    routes and devices of the UDP, forwarding and output paths are typed (the native
    ``Sock``, ``Rtable`` and ``NetDevice``), as the struct reads are (ints)."""
    functions = {
        "netstack/ipv4/udp.py": ("udp_sendmsg", "_udp_route", "udp_rcv"),
        "netstack/ipv4/ip_output.py": ("ip_output", "ip_finish_output", "ip_finish_output2"),
        "netstack/ipv4/ip_input.py": ("ip_rcv", "ip_rcv_finish", "ip_forward"),
    }
    for path, names in functions.items():
        tree = ast.parse((ROOT / path).read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in names:
                annotations = [arg.annotation for arg in node.args.args]
                annotations += [
                    n.annotation for n in ast.walk(node) if isinstance(n, ast.AnnAssign)
                ]
                for annotation in annotations:
                    assert annotation is not None and "Any" not in ast.unparse(annotation), (
                        path,
                        node.name,
                        ast.unparse(annotation) if annotation is not None else None,
                    )
        for node in tree.body:  # the struct reads these functions make
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.target.id in ("_IPV4_HDR_FIELDS", "_ADDRS_UDP_HDR", "_SADDR_SPORT"):
                    assert "tuple[int" in ast.unparse(node.annotation), node.target.id


async def test_dst_output_calls_ip_output_directly_in_the_copy(lab: Lab) -> None:
    """The copy's udp_sendmsg and ip_forward call ip_output directly when the route's
    output is the namespace's ``dst_output`` (dst_output()'s INDIRECT_CALL_INET), which
    is ip_output bound to the namespace."""
    script = build_script()
    for path in ("netstack/ipv4/udp.py", "netstack/ipv4/ip_input.py"):
        text = script.patched(path, (ROOT / path).read_text())
        assert "ip_output(ipv4, skb) if output is ipv4.dst_output else output(skb)" in text
        assert "from netstack.ipv4.ip_output import ip_output\n" in text
    ipv4 = ipv4_of(lab.add_host("h").net)
    assert ipv4.dst_output.__func__ is ip_output


def test_timed_reads_the_spenders_list_in_the_copy() -> None:
    """The copy of a data-path module tests ``netstack.sites._spender`` (a ``Final``
    alias: a C static) where the source reads the rebindable ``TIMED`` (a lookup in
    the module's dictionary per charge site); the two agree at every moment."""
    script = build_script()
    for path in script.TIMED_FROM_SPENDERS:
        assert path in script.MODULES, path
        text = script.patched(path, (ROOT / path).read_text())
        lines = text.splitlines()
        imports = [line for line in lines if line.startswith("from netstack.sites import")]
        assert imports == ["from netstack.sites import TIMED, _spender, kernel, spend"], path
        assert [line for line in lines if "TIMED" in line and line not in imports] == [
            "_SPENDERS: Final = _spender  # TIMED is bool(_spender) (netstack.sites)"
        ], path
        assert "from typing import" in text and "Final" in text, path
        ast.parse(text)


async def test_every_rewritten_module_charges_while_a_spender_is_active(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """What the rewrite must keep, run on whichever package imports (the pure one,
    or the build under ``scripts/check --compiled``): a datagram routed through a
    router charges a site in every module of ``TIMED_FROM_SPENDERS`` on its path
    while a spender is active (timed mode switched on after import, as the
    experiments do), and none once it is gone."""
    async with open_test_lab() as lab:
        a, _r, b = routed(lab)
        srv = b.socket()
        await srv.bind(("10.0.2.1", 9))
        charged = await _one_datagram_charges(a.socket(), srv, ("10.0.2.1", 9))
    # one site of each rewritten module the datagram crosses
    for site in ("udp_sendmsg", "ip_local_out", "ip_rcv", "ip_forward", "veth_xmit"):
        assert site in charged, (site, charged)


def test_the_tunnel_classes_read_per_packet_are_native() -> None:
    """mypyc compiles a decorated class (attrs) as a Python class, whose fields compiled
    code reads and writes through the generic attribute lookup: the classes a tunnelled
    packet reads (the parameters ``ip_tunnel_lookup`` matches, the header
    ``gre_parse_header`` fills in, tunnel4's handlers) are plain classes of compiled
    modules, undecorated in the copy (tuntyped)."""
    script = build_script()
    classes = {
        "netstack/tunnels/ip_tunnel.py": {"IpTunnelParm", "TnlPtkInfo", "IpTunnel", "IpTunnelNet"},
        "netstack/tunnels/ip_gre.py": {"IpGreNet"},
        "netstack/tunnels/gre_demux.py": {"GreProtocol", "GreDemux"},
        "netstack/tunnels/tunnel4.py": {"XfrmTunnel", "Tunnel4"},
    }
    for path, names in classes.items():
        assert path in script.MODULES, path
        text = script.patched(path, (ROOT / path).read_text())
        found = {
            node.name: node
            for node in ast.parse(text).body
            if isinstance(node, ast.ClassDef) and node.name in names
        }
        assert set(found) == names, path
        for name, node in found.items():
            assert node.decorator_list == [], (path, name)


async def test_the_tunnel_modules_charge_while_a_spender_is_active(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The tunnel modules of ``TIMED_FROM_SPENDERS`` (tuntyped) charge their sites for a
    datagram through a GRE and an IPIP tunnel while a spender is active, and none once
    it is gone (run on whichever package imports: the pure one, or the build)."""
    from helpers import build_sites

    for kind, sites in (
        ("gre", ("ipgre_xmit", "gre_rcv", "gre_parse_header", "__ipgre_rcv")),
        ("ipip", ("ipip_tunnel_xmit", "tunnel4_rcv", "ipip_rcv", "ipip_tunnel_rcv")),
    ):
        async with open_test_lab() as lab:
            h = build_sites(lab, "", kind=kind)
            srv = h["s2"].socket()
            await srv.bind(("10.2.0.1", 9))
            charged = await _one_datagram_charges(h["s1"].socket(), srv, ("10.2.0.1", 9))
        for site in (*sites, "ip_tunnel_xmit", "ip_tunnel_lookup", "ip_tunnel_rcv"):
            assert site in charged, (kind, site, charged)


def test_the_tunnels_struct_reads_are_typed() -> None:
    """The struct methods a tunnelled packet calls are bound once as ``Final`` names
    (compiled code calls them without a lookup by name) and the reads are typed ints
    (tuntyped): the outer addresses ipip_rcv and ipgre_rcv look the tunnel up by, the
    GRE flags gre_parse_header tests."""
    reads = {
        "netstack/tunnels/ip_tunnel.py": "IPV4_ADDRS_UNPACK",
        "netstack/tunnels/gre_demux.py": "_GRE_HDR_UNPACK",
    }
    for path, name in reads.items():
        tree = ast.parse((ROOT / path).read_text())
        found = [
            node
            for node in tree.body
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ]
        assert len(found) == 1, (path, name)
        assert "tuple[int, int]" in ast.unparse(found[0].annotation), (path, name)
    for path in (
        "netstack/tunnels/ip_tunnel.py",
        "netstack/tunnels/ipip.py",
        "netstack/tunnels/ip_gre.py",
    ):
        text = (ROOT / path).read_text()
        assert "IPV4_ADDRS.unpack_from(" not in text and "IPV4_HDR.pack_into(" not in text, path


async def test_every_rewritten_tcp_module_charges_while_a_spender_is_active(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The TCP block of ``TIMED_FROM_SPENDERS`` (tcpnooff), run on whichever package
    imports: a connection's handshake, data through GRO and its ACKs charge a site
    in every module of the block while a spender is active, and none once it is
    gone."""
    async with open_test_lab() as lab:
        a, b = pair(lab)
        b.ethtool("-K eth0 gro on")
        srv = b.socket(socket.AF_INET, socket.SOCK_STREAM)
        await srv.bind(("10.0.0.2", 80))
        srv.listen()
        with _charging() as charged:
            cli = a.socket(socket.AF_INET, socket.SOCK_STREAM)
            await cli.connect(("10.0.0.2", 80))
            conn, _ = await srv.accept()
            await cli.sendall(b"x" * 20_000)
            got = 0
            while got < 20_000:
                got += len(await conn.recv(65536))
        for site in (
            "tcp_check_req",  # tcp/minisocks.py
            "tcp_v4_rcv",  # ipv4/tcp_ipv4.py
            "tcp_ack",  # tcp/input.py
            "__tcp_transmit_skb",  # tcp/output.py
            "tcp_gro_receive",  # gro/tcp.py
            "ip_fast_csum",  # wire/checksum.py
        ):
            assert site in charged, (site, sorted(set(charged)))
        counted = len(charged)
        await cli.send(b"z")
        assert await conn.recv(1) == b"z"
        assert len(charged) == counted


async def test_the_receive_handlers_are_called_directly_in_the_copy(lab: Lab) -> None:
    """devtyped: the copy's veth_poll calls ip_rcv (and arp_rcv) directly when the
    matched packet type's function is the namespace's own (__netif_receive_skb_one_core()'s
    INDIRECT_CALL_INET), and ip_rcv's delivery and ip_local_deliver call udp_rcv (and
    icmp_rcv) directly when the protocol is (ip_protocol_deliver_rcu()'s
    INDIRECT_CALL_2); what inet_init registers is those very handlers, bound to the
    namespace."""
    from netstack.ipv4.arp import arp_rcv
    from netstack.ipv4.icmp import icmp_rcv
    from netstack.ipv4.ip_input import ip_rcv
    from netstack.ipv4.udp import udp_rcv
    from netstack.wire.ethernet import ETH_P_ARP, ETH_P_IP
    from netstack.wire.ipv4 import IPPROTO_ICMP, IPPROTO_UDP

    script = build_script()
    veth = script.patched(
        "netstack/drivers/veth.py", (ROOT / "netstack/drivers/veth.py").read_text()
    )
    assert (
        "ip_rcv(_ipv4, skb, dev, matched, dev) if _ipv4 is not None and func is"
        " _ipv4.ip_rcv_func else arp_rcv(_ipv4, skb, dev, matched, dev)" in veth
    )
    ip_input = script.patched(
        "netstack/ipv4/ip_input.py", (ROOT / "netstack/ipv4/ip_input.py").read_text()
    )
    assert ip_input.count("udp_rcv(ipv4, skb) if protocol_handler is ipv4.udp_rcv_func") == 2
    net = lab.add_host("h").net
    ipv4 = ipv4_of(net)
    assert net.ptype_base[ETH_P_IP] == [ipv4.ip_packet_type]
    assert net.ptype_base[ETH_P_ARP] == [ipv4.arp_packet_type]
    assert ipv4.ip_packet_type.func.__func__ is ip_rcv  # type: ignore[attr-defined]
    assert ipv4.arp_packet_type.func.__func__ is arp_rcv  # type: ignore[attr-defined]
    assert ipv4.inet_protos[IPPROTO_UDP] is ipv4.udp_protocol
    assert ipv4.inet_protos[IPPROTO_ICMP] is ipv4.icmp_protocol
    assert ipv4.udp_protocol.handler.__func__ is udp_rcv  # type: ignore[attr-defined]
    assert ipv4.icmp_protocol.handler.__func__ is icmp_rcv  # type: ignore[attr-defined]
    # the functions the copy compares a handler with (a replaced one is called:
    # tests/ipv4/test_handler_swap.py)
    assert ipv4.ip_packet_type.func is ipv4.ip_rcv_func
    assert ipv4.arp_packet_type.func is ipv4.arp_rcv_func
    assert ipv4.udp_protocol.handler is ipv4.udp_rcv_func
    assert ipv4.icmp_protocol.handler is ipv4.icmp_rcv_func
    assert ipv4.ip_packet_type.func.__self__ is ipv4  # (a MethodType, narrowed above)
    assert ipv4.udp_protocol.handler.__self__ is ipv4


def test_packet_types_and_inet_protocols_are_plain_classes() -> None:
    """devtyped: ``PacketType`` and ``InetProtocol`` carry no decorator (mypyc keeps a
    decorated class, attrs' included, a Python class: every ``pt.dev``, ``pt.func``
    and ``handler.handler`` of the receive path was a generic read in the build)."""
    for path, name in (
        ("netstack/core/net.py", "PacketType"),
        ("netstack/ipv4/netns.py", "InetProtocol"),
    ):
        tree = ast.parse((ROOT / path).read_text())
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        assert cls.decorator_list == [], (path, name)
    from netstack.core.net import PacketType
    from netstack.ipv4.netns import InetProtocol

    def func(*args: object) -> None:
        pass

    pt = PacketType(0x0800, func, name="x")
    assert (pt.proto, pt.func, pt.dev, pt.ignore_outgoing, pt.name) == (
        0x800,
        func,
        None,
        False,
        "x",
    )
    assert repr(pt).startswith("PacketType(proto=2048, func=")
    proto = InetProtocol(func)
    assert (proto.handler, proto.err_handler) == (func, None)


async def test_the_device_core_charges_while_a_spender_is_active(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """devtyped: the device core, the skb's frees and the device's queue tests are in
    ``TIMED_FROM_SPENDERS`` too; a routed datagram charges a site of each while a
    spender is active, on the pure package and on the build alike, and none after."""
    script = build_script()
    for path in ("netstack/core/dev.py", "netstack/core/skbuff.py", "netstack/core/netdevice.py"):
        assert path in script.TIMED_FROM_SPENDERS
    async with open_test_lab() as lab:
        a, _r, b = routed(lab)
        srv = b.socket()
        await srv.bind(("10.0.2.1", 9))
        charged = await _one_datagram_charges(a.socket(), srv, ("10.0.2.1", 9))
    for site in ("__dev_queue_xmit", "consume_skb", "netif_tx_queue_stopped"):
        assert site in charged, (site, charged)


def test_the_ping_program_is_compiled_its_list_subclass_a_python_class() -> None:
    """The lab's pings run the ping program (``userspace/iputils/ping.py``; 14
    interpreted calls a ping in the 59-module build). mypyc refuses a native class
    deriving from a builtin ("Inheriting from most builtin types is
    unimplemented"): a compiled module's class with such a base is in NON_NATIVE,
    and the copy makes ``_LiveLines(list[str])`` ``native_class=False``."""
    script = build_script()
    path = "netstack/userspace/iputils/ping.py"
    assert path in script.MODULES
    builtins = {"list", "dict", "set", "tuple", "str", "bytes", "int", "float", "bytearray"}
    for module in script.MODULES:
        for node in ast.parse((ROOT / module).read_text()).body:
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).split("[")[0] for b in node.bases}
                if bases & builtins:
                    assert node.name in script.NON_NATIVE.get(module, {}), (module, node.name)
    out = script.rewrite(
        (ROOT / path).read_text(),
        "netstack.userspace.iputils.ping",
        set(),
        non_native=frozenset(script.NON_NATIVE[path]),
    )
    assert "@mypyc_attr(native_class=False)\nclass _LiveLines(list[str])" in out
    # where ping() and its state take the lines, a ``list`` annotation would have the
    # compiled code append to the list directly, past _LiveLines.append: the lab's
    # `ping` printed no line (tests/cli, tests/labs against the -O0 build)
    tree = ast.parse((ROOT / path).read_text())
    seen = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for arg in node.args.args + node.args.kwonlyargs:
                if arg.arg == "output" and arg.annotation is not None:
                    assert "list" not in ast.unparse(arg.annotation), node.name
                    seen += 1
    assert seen == 2  # ping(), _PingState.__init__
