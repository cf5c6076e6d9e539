"""Link kinds and kernel modules: ``rtnl_link_ops`` by kind, ``request_module``.

Theory of operation: a driver that can be created with ``ip link add … type
KIND`` registers a :class:`RtnlLinkOps` for its kind on a Net
(:func:`rtnl_link_register`), as the kernel's ``rtnl_link_register`` puts it
on ``link_ops``. ``rtnl_newlink`` looks the kind up with
:func:`rtnl_link_ops_get`; when it is missing it asks for the module that
provides it — ``request_module("rtnl-link-KIND")`` — and looks again.
Likewise an ioctl on a device that does not exist loads ``netdev-NAME``
(``dev_load``): that is how ``ip tunnel add … mode gre`` finds ``gre0``.

Modules are emulated per Net (:class:`KernelModule`): the host registers the
modules it *could* load at boot (the ``modules.alias`` table) without loading
them; loading one runs its per-Net init, which registers its link ops and
protocol handlers and creates its fallback devices — which is why ``gre0``
appears in ``ip link`` only once the first GRE tunnel was made.

**The forwarding database (``bridge fdb``).** :func:`rtnl_fdb_add`,
:func:`rtnl_fdb_del` and :func:`rtnl_fdb_dump` are the kernel's RTM_NEWNEIGH /
RTM_DELNEIGH / RTM_GETNEIGH handlers for ``AF_BRIDGE``: they pick the device
(and, for a bridge port, its master) and call the device ops. The contract a
driver implements (``NetDeviceOps``; the defaults are ``ndo_dflt_fdb_*``, the
device's own address lists):

* ``ndo_fdb_add(ndm_state, ndm_flags, tb, dev, addr, vid, nlflags)`` — *tb*
  maps ``NDA_*`` to values: ``NDA_DST`` raw address bytes (4 or 16),
  ``NDA_PORT`` an int (host order), ``NDA_VNI`` / ``NDA_SRC_VNI`` ints,
  ``NDA_IFINDEX`` an ifindex. *addr* is the 6-byte MAC, *vid* 0 or the VLAN,
  *nlflags* the ``NLM_F_*`` of the request (``add`` = CREATE|EXCL, ``append``
  = CREATE|APPEND, ``replace`` = CREATE|REPLACE). For a bridge port the
  bridge's op is called with the port as *dev* (``master``); with ``self`` the
  device's own op. Errors are raised as :class:`~netstack.errors.ConfigError`
  with iproute2's text (use :func:`fdb_extack` / :func:`fdb_errno`).
* ``ndo_fdb_del(ndm_state, ndm_flags, tb, dev, addr, vid)`` — the same, for
  ``bridge fdb del``.
* ``ndo_fdb_dump(dev, filter_dev)`` — a list of :class:`FdbMsg`, one per
  entry, in the order the kernel dumps them.

Kernel: net/core/rtnetlink.c (rtnl_link_register, rtnl_link_ops_get,
rtnl_newlink, rtnl_fdb_add, rtnl_fdb_del, rtnl_fdb_dump, ndo_dflt_fdb_*),
kernel/kmod.c (request_module), net/core/dev_ioctl.c (dev_load).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.net_generic import NetKey
from netstack.errors import ConfigError
from netstack.sites import kernel
from netstack.wire.rtnetlink import NLM_F_APPEND, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = [
    "NDA_DST",
    "NDA_IFINDEX",
    "NDA_PORT",
    "NDA_SRC_VNI",
    "NDA_VNI",
    "NLM_F_APPEND",
    "NLM_F_CREATE",
    "NLM_F_EXCL",
    "NLM_F_REPLACE",
    "NTF_MASTER",
    "NTF_SELF",
    "NUD_NOARP",
    "NUD_PERMANENT",
    "NUD_REACHABLE",
    "NUD_STALE",
    "FdbMsg",
    "KernelModule",
    "Rtnl",
    "RtnlLinkOps",
    "dev_load",
    "fdb_errno",
    "fdb_extack",
    "ndo_dflt_fdb_add",
    "ndo_dflt_fdb_del",
    "ndo_dflt_fdb_dump",
    "register_module",
    "request_module",
    "rtnl_fdb_add",
    "rtnl_fdb_del",
    "rtnl_fdb_dump",
    "rtnl_link_ops_get",
    "rtnl_link_register",
    "rtnl_link_unregister",
    "rtnl_of",
]


@attrs.define(eq=False)
class RtnlLinkOps:
    """One link kind (kernel: ``struct rtnl_link_ops``).

    The callables receive the request's kind-specific data (``IFLA_INFO_DATA``)
    as the object the kind's iproute2 module built, and the common link
    attributes (name, mtu, address…) as ``tb``: a mapping of the IFLA_* the
    request carried.

    Attributes:
        kind: ``IFLA_INFO_KIND`` ("gre", "ipip"…).
        newlink: ``rtnl_newlink``'s create step — validate, alloc with setup,
            ``ops->newlink`` — returning the registered device.
        changelink: ``ip link set DEV type KIND …``.
        dellink: ``ip link del``; default ``unregister_netdevice``.
        get_info: what ``fill_info`` puts in ``IFLA_INFO_DATA`` (for ``ip -d``).
    """

    kind: str
    newlink: Callable[[Net, str | None, Any, dict[str, Any]], NetDevice]
    changelink: Callable[[NetDevice, Any, dict[str, Any]], None] | None = None
    dellink: Callable[[NetDevice], None] | None = None
    get_info: Callable[[NetDevice], Any] | None = None


@attrs.define(eq=False)
class KernelModule:
    """A loadable module: its name, the aliases modprobe knows it by, its per-Net init."""

    name: str
    aliases: tuple[str, ...]
    init: Callable[[Net], None]
    depends: tuple[str, ...] = ()


class Rtnl:
    """The per-Net tables: link ops by kind, available and loaded modules."""

    def __init__(self) -> None:
        self.link_ops: dict[str, RtnlLinkOps] = {}
        self.modules: dict[str, KernelModule] = {}
        self.aliases: dict[str, str] = {}
        self.loaded: list[str] = []
        self.requests: list[str] = []  # every request_module() call, for tests and lsmod-like views


def rtnl_of(net: Net) -> Rtnl:
    """The Net's rtnetlink/module tables (created on first use)."""
    return _RTNL_NET.get_or_create(net, Rtnl)


_RTNL_NET: NetKey[Rtnl] = NetKey("rtnl")


@kernel("rtnl_link_register")
def rtnl_link_register(net: Net, ops: RtnlLinkOps) -> None:
    """Make a link kind creatable. Kernel: rtnl_link_register()."""
    rtnl = rtnl_of(net)
    if ops.kind in rtnl.link_ops:
        raise ValueError(f"link kind {ops.kind!r} already registered")
    rtnl.link_ops[ops.kind] = ops


@kernel("rtnl_link_unregister")
def rtnl_link_unregister(net: Net, kind: str) -> None:
    """Kernel: rtnl_link_unregister()."""
    rtnl_of(net).link_ops.pop(kind, None)


@kernel("rtnl_link_ops_get")
def rtnl_link_ops_get(net: Net, kind: str) -> RtnlLinkOps | None:
    """The ops registered for *kind*, or None. Kernel: rtnl_link_ops_get()."""
    return rtnl_of(net).link_ops.get(kind)


def register_module(net: Net, module: KernelModule) -> None:
    """Make *module* loadable on *net* (not loaded yet): an entry of modules.alias."""
    rtnl = rtnl_of(net)
    rtnl.modules[module.name] = module
    for alias in module.aliases:
        rtnl.aliases[alias] = module.name


def load_module(net: Net, name: str) -> bool:
    """``modprobe NAME``: load its dependencies, then run its init once."""
    rtnl = rtnl_of(net)
    if name in rtnl.loaded:
        return True
    module = rtnl.modules.get(name)
    if module is None:
        return False
    for dep in module.depends:
        load_module(net, dep)
    rtnl.loaded.append(name)
    module.init(net)
    net.log.debug("module_loaded", module=name)
    return True


@kernel("kernel/kmod.c", "__request_module")
def request_module(net: Net, alias: str) -> bool:
    """Load the module that provides *alias*; False if none does.

    Kernel: kernel/kmod.c, __request_module() (modprobe resolves the alias).
    """
    rtnl = rtnl_of(net)
    rtnl.requests.append(alias)
    name = rtnl.aliases.get(alias, alias if alias in rtnl.modules else None)
    if name is None:
        return False
    return load_module(net, name)


@kernel("net/core/dev_ioctl.c", "dev_load")
def dev_load(net: Net, name: str) -> NetDevice | None:
    """Find device *name*, loading ``netdev-NAME`` if it does not exist.

    Kernel: net/core/dev_ioctl.c, dev_load().
    """
    dev = net.dev_get_by_name(name)
    if dev is None and request_module(net, f"netdev-{name}"):
        dev = net.dev_get_by_name(name)
    return dev


# ---------------------------------------------------------------------------
# The forwarding database: RTM_NEWNEIGH / RTM_DELNEIGH / RTM_GETNEIGH, AF_BRIDGE
# ---------------------------------------------------------------------------

# include/uapi/linux/neighbour.h
NDA_DST: Final = 1
NDA_LLADDR: Final = 2
NDA_CACHEINFO: Final = 3
NDA_VLAN: Final = 5
NDA_PORT: Final = 6
NDA_VNI: Final = 7
NDA_IFINDEX: Final = 8
NDA_MASTER: Final = 9
NDA_SRC_VNI: Final = 11
NTF_USE: Final = 0x01
NTF_SELF: Final = 0x02
NTF_MASTER: Final = 0x04
NTF_PROXY: Final = 0x08
NTF_EXT_LEARNED: Final = 0x10
NTF_OFFLOADED: Final = 0x20
NTF_STICKY: Final = 0x40
NTF_ROUTER: Final = 0x80
NUD_INCOMPLETE: Final = 0x01
NUD_REACHABLE: Final = 0x02
NUD_STALE: Final = 0x04
NUD_NOARP: Final = 0x40
NUD_PERMANENT: Final = 0x80
# include/uapi/linux/netlink.h (NEW requests)
VLAN_VID_MASK: Final = 0x0FFF


@attrs.frozen
class FdbMsg:
    """One RTM_NEWNEIGH of an ``AF_BRIDGE`` dump: ``struct ndmsg`` and its NDA_* attributes.

    ``None`` means the attribute is absent; ``vlan`` 0 means no ``NDA_VLAN``.
    ``used``/``updated`` are ``NDA_CACHEINFO``'s ages in USER_HZ (clock_t).
    """

    ifindex: int
    state: int
    flags: int
    lladdr: bytes
    master: int | None = None
    vlan: int = 0
    dst: bytes | None = None
    port: int | None = None
    vni: int | None = None
    src_vni: int | None = None
    via: int | None = None
    used: int | None = None
    updated: int | None = None


def fdb_extack(msg: str, err: int = errno.EINVAL) -> ConfigError:
    """A refusal with an extack message: iproute2 prints ``Error: MSG.``."""
    return ConfigError(f"Error: {msg}{'' if msg.endswith('.') else '.'}", err)


def fdb_errno(err: int) -> ConfigError:
    """A refusal without extack: iproute2 prints ``RTNETLINK answers: STRERROR``."""
    return ConfigError(f"RTNETLINK answers: {os.strerror(err)}", err)


def _is_multicast(addr: bytes) -> bool:
    return bool(addr[0] & 1)


@kernel("net/core/rtnetlink.c", "ndo_dflt_fdb_add")
def ndo_dflt_fdb_add(
    ndm_state: int,
    ndm_flags: int,
    tb: Mapping[int, Any],
    dev: NetDevice,
    addr: bytes,
    vid: int,
    nlflags: int,
) -> None:
    """Add *addr* to the device's own unicast or multicast list.

    Kernel: net/core/rtnetlink.c, ndo_dflt_fdb_add().
    """
    if ndm_state and not ndm_state & NUD_PERMANENT:
        # netdev_info(): "default FDB implementation only supports local addresses"
        raise fdb_errno(errno.EINVAL)
    if vid:
        # netdev_info(): "vlans aren't supported yet for dev_uc|mc_add()"
        raise fdb_errno(errno.EINVAL)
    if addr == bytes(6):
        raise fdb_errno(errno.EINVAL)
    lst = dev.mc if _is_multicast(addr) else dev.uc
    if addr in lst:  # dev_uc_add_excl() / dev_mc_add_excl()
        if not nlflags & NLM_F_EXCL:
            return
        raise fdb_errno(errno.EEXIST)
    lst.append(bytes(addr))


@kernel("net/core/rtnetlink.c", "ndo_dflt_fdb_del")
def ndo_dflt_fdb_del(
    ndm_state: int,
    ndm_flags: int,
    tb: Mapping[int, Any],
    dev: NetDevice,
    addr: bytes,
    vid: int,
) -> None:
    """Kernel: net/core/rtnetlink.c, ndo_dflt_fdb_del()."""
    if not ndm_state & NUD_PERMANENT:
        raise fdb_errno(errno.EINVAL)  # "FDB only supports static addresses"
    lst = dev.mc if _is_multicast(addr) else dev.uc
    if addr not in lst:
        raise fdb_errno(errno.ENOENT)
    lst.remove(addr)


@kernel("ndo_dflt_fdb_dump")
def ndo_dflt_fdb_dump(dev: NetDevice, filter_dev: NetDevice | None) -> list[FdbMsg]:
    """The device's own addresses, ``self permanent``. Kernel: ndo_dflt_fdb_dump()."""
    return [
        FdbMsg(dev.ifindex, NUD_PERMANENT, NTF_SELF, a) for lst in (dev.uc, dev.mc) for a in lst
    ]


def _fdb_target(net: Net, ifindex: int, tb: Mapping[int, Any], what: str) -> NetDevice:
    if not ifindex:
        raise fdb_extack("invalid ifindex")
    dev = net.dev_get_by_index(ifindex)
    if dev is None:
        raise fdb_extack("unknown ifindex", errno.ENODEV)
    return dev


@kernel("fdb_vid_parse")
def _fdb_vid(tb: Mapping[int, Any]) -> int:
    """Kernel: fdb_vid_parse()."""
    vid = tb.get(NDA_VLAN)
    if vid is None:
        return 0
    vid = int(vid) & 0xFFFF
    if not vid or vid >= VLAN_VID_MASK:
        raise fdb_extack("invalid vlan id")
    return vid


@kernel("net/core/rtnetlink.c", "rtnl_fdb_add")
def rtnl_fdb_add(
    net: Net, ifindex: int, ndm_state: int, ndm_flags: int, tb: Mapping[int, Any], nlflags: int
) -> None:
    """RTM_NEWNEIGH for ``AF_BRIDGE``: the master's op for a port, then ``self``.

    Kernel: net/core/rtnetlink.c, rtnl_fdb_add().
    """
    dev = _fdb_target(net, ifindex, tb, "add")
    addr = tb.get(NDA_LLADDR)
    if not isinstance(addr, bytes | bytearray) or len(addr) != 6:
        raise fdb_extack("invalid address")
    if dev.type != 1:  # ARPHRD_ETHER
        raise fdb_extack("FDB add only supported for Ethernet devices")
    addr = bytes(addr)
    vid = _fdb_vid(tb)
    err: ConfigError | None = fdb_errno(errno.EOPNOTSUPP)
    master = dev.master
    if (not ndm_flags or ndm_flags & NTF_MASTER) and master is not None and _is_port(dev):
        master.ops.ndo_fdb_add(ndm_state, ndm_flags, tb, dev, addr, vid, nlflags)
        ndm_flags &= ~NTF_MASTER
        err = None
    if ndm_flags & NTF_SELF:
        dev.ops.ndo_fdb_add(ndm_state, ndm_flags, tb, dev, addr, vid, nlflags)
        err = None
    if err is not None:
        raise err


@kernel("net/core/rtnetlink.c", "rtnl_fdb_del")
def rtnl_fdb_del(
    net: Net, ifindex: int, ndm_state: int, ndm_flags: int, tb: Mapping[int, Any]
) -> None:
    """RTM_DELNEIGH for ``AF_BRIDGE``. Kernel: net/core/rtnetlink.c, rtnl_fdb_del()."""
    dev = _fdb_target(net, ifindex, tb, "del")
    addr = tb.get(NDA_LLADDR)
    if not isinstance(addr, bytes | bytearray) or len(addr) != 6:
        raise fdb_extack("invalid address")
    if dev.type != 1:
        raise fdb_extack("FDB delete only supported for Ethernet devices")
    addr = bytes(addr)
    vid = _fdb_vid(tb)
    err: ConfigError | None = fdb_errno(errno.EOPNOTSUPP)
    master = dev.master
    if (not ndm_flags or ndm_flags & NTF_MASTER) and master is not None and _is_port(dev):
        master.ops.ndo_fdb_del(ndm_state, ndm_flags, tb, dev, addr, vid)
        ndm_flags &= ~NTF_MASTER
        err = None
    if ndm_flags & NTF_SELF:
        dev.ops.ndo_fdb_del(ndm_state, ndm_flags, tb, dev, addr, vid)
        err = None
    if err is not None:
        raise err


@kernel("netif_is_bridge_port")
def _is_port(dev: NetDevice) -> bool:
    """Kernel: netif_is_bridge_port() (IFF_BRIDGE_PORT with an rx_handler)."""
    return bool(dev.priv_flags & 0x200) and dev.rx_handler is not None


@kernel("net/core/rtnetlink.c", "rtnl_fdb_dump")
def rtnl_fdb_dump(
    net: Net, *, brport: NetDevice | None = None, br: NetDevice | None = None
) -> list[FdbMsg]:
    """RTM_GETNEIGH dump for ``AF_BRIDGE``, every device in ifindex order.

    For each device: if it is a bridge port, its master's entries for it
    (``master``), then the device's own (``self``).

    Kernel: net/core/rtnetlink.c, rtnl_fdb_dump().
    """
    out: list[FdbMsg] = []
    for ifindex in sorted(net.dev_index):
        dev = net.dev_index[ifindex]
        if brport is not None and dev is not brport:
            continue
        if br is None:
            master = dev.master if _is_port(dev) else None
        else:
            if dev is not br and not _is_port(dev):
                continue
            if br is not dev.master and not dev.priv_flags & 0x2:  # IFF_EBRIDGE
                continue
            master = br
        if _is_port(dev) and master is not None:
            out.extend(master.ops.ndo_fdb_dump(master, dev))
        out.extend(dev.ops.ndo_fdb_dump(dev, None))
    return out
