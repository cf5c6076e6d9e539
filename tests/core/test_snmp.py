"""The SNMP counter classes: each declares its counters once as a field tuple
(``__slots__``, ``FIELDS``: the /proc order) and once as ``int`` annotations, which
the type checker reads and the mypyc build turns into native attributes
(``scripts/build_compiled.py``): the two lists must agree, in order."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import build_script

import netstack.ipv4.snmp  # the IPv4 MIBs (Mib.__subclasses__)
import netstack.ipv6.snmp  # the IPv6 MIBs
import netstack.tcp.mib
from netstack.core.netdevice import _STAT_FIELDS, DevStats
from netstack.core.snmp import Mib, UdpMib
from netstack.ipv4.devinet import _DEFAULTS, DEVCONF_FIELDS, DevConf

ROOT = Path(__file__).resolve().parents[2]


def _mibs() -> list[type[Mib]]:
    out: list[type[Mib]] = []
    todo = list(Mib.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def _class_body(cls: type) -> ast.ClassDef:
    """*cls*'s definition, from its module's source (a native class of the mypyc
    build keeps neither ``__annotations__`` nor, when subclassed, ``__slots__``)."""
    path = ROOT / (cls.__module__.replace(".", "/") + ".py")
    return next(
        node
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__
    )


def _annotated(cls: type) -> tuple[str, ...]:
    """The names *cls*'s body annotates ``int``."""
    return tuple(
        stmt.target.id
        for stmt in _class_body(cls).body
        if isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and ast.unparse(stmt.annotation) == "int"
    )


def _assigned(cls: type, name: str) -> str | None:
    """The source of the expression *cls*'s body assigns to *name*."""
    for stmt in _class_body(cls).body:
        if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == [name]:
            return ast.unparse(stmt.value)
    return None


def test_every_mib_annotates_its_field_tuple_in_order() -> None:
    mibs = _mibs()
    assert {m.__name__ for m in mibs} >= {
        "UdpMib",
        "IpMib",
        "IpExtMib",
        "IcmpMib",
        "Ip6Mib",
        "Icmp6Mib",
        "Udp6Mib",
        "TcpMib",
        "TcpExtMib",
    }
    for cls in mibs:
        slots = _assigned(cls, "__slots__")
        if slots != "()":
            assert slots is not None and _assigned(cls, "FIELDS") == slots, cls
            assert _annotated(cls) == cls.FIELDS and cls.FIELDS, cls
        else:  # a renamed MIB keeps its parent's counters
            parent: type[Mib] = cls.__mro__[1]
            assert cls.FIELDS == parent.FIELDS and not _annotated(cls)


def test_a_new_mib_is_zeroed_and_its_snapshot_keeps_the_proc_order() -> None:
    for cls in _mibs():
        mib = cls()
        snap = mib.snapshot()
        assert tuple(name for name, _ in snap.values) == cls.FIELDS
        if cls.__name__ != "TcpMib":  # RtoAlgorithm, RtoMin… are set (tcp_mib_init)
            assert all(v == 0 for _, v in snap.values), cls
    udp = UdpMib()
    udp.InDatagrams += 2
    assert udp.snapshot()["InDatagrams"] == 2 and udp.snapshot().NoPorts == 0
    tcp = netstack.tcp.mib.TcpMib().snapshot()
    assert (tcp.RtoAlgorithm, tcp.RtoMin, tcp.RtoMax, tcp.MaxConn) == (1, 200, 120000, -1)


def test_devconf_and_devstats_annotate_every_field() -> None:
    """Every field declared: the build's native DevConf and DevStats have exactly
    these attributes (an undeclared one would be an AttributeError there)."""
    assert _annotated(DevConf) == DEVCONF_FIELDS
    conf = DevConf()
    assert {f: getattr(conf, f) for f in DEVCONF_FIELDS} == {
        f: _DEFAULTS.get(f, 0) for f in DEVCONF_FIELDS
    }
    assert set(_annotated(DevStats)) == set(_STAT_FIELDS)
    assert all(getattr(DevStats(), f) == 0 for f in _STAT_FIELDS)


def test_the_build_gives_every_counter_a_native_default() -> None:
    """The copy declares each counter ``X: int = 0`` (set by the native constructor)
    in place of the pure package's generated zeroing function."""
    script = build_script()
    patched = {
        path: script.patched(path, (ROOT / path).read_text()) for path in script.COUNTER_CLASSES
    }
    for cls in [*_mibs(), DevStats]:
        path = "netstack/" + cls.__module__.removeprefix("netstack.").replace(".", "/") + ".py"
        for name in _annotated(cls):
            assert f"    {name}: int = 0\n" in patched[path], (cls, name)
    assert "_zero(self)" not in patched["netstack/core/snmp.py"]
    assert "_zero_stats(self)" not in patched["netstack/core/netdevice.py"]


def test_an_in_device_has_no_dict() -> None:
    """``InDevice`` declares every field (no ``__dict__`` slot "for what is set
    later"): nothing sets another, and the build makes it native."""
    import netstack
    from netstack.ipv4.devinet import InDevice

    async def main() -> None:
        async with netstack.open_lab() as lab:
            host = lab.add_host("h")
            in_dev = host.net.devices["lo"].ip_ptr
            assert isinstance(in_dev, InDevice) and not hasattr(in_dev, "__dict__")
            with pytest.raises(AttributeError):
                setattr(in_dev, "undeclared", 1)  # noqa: B010

    netstack.run(main)


@pytest.mark.pure_python_layout(
    "the build's copy drops Mib.__init_subclass__ (its native counters take their 0"
    " defaults in the constructor), and with it this check of the pure layout"
)
def test_a_mib_whose_fields_are_not_its_slots_is_refused() -> None:
    with pytest.raises(TypeError, match="FIELDS is not its __slots__ tuple"):

        class Forgot(Mib):  # FIELDS left at the parent's ()
            __slots__ = ("InThings",)
            InThings: int
