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

Kernel: net/core/rtnetlink.c (rtnl_link_register, rtnl_link_ops_get,
rtnl_newlink), kernel/kmod.c (request_module), net/core/dev_ioctl.c (dev_load).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = [
    "KernelModule",
    "Rtnl",
    "RtnlLinkOps",
    "dev_load",
    "register_module",
    "request_module",
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
    rtnl = net.proto_data.get("rtnl")
    if rtnl is None:
        rtnl = net.proto_data["rtnl"] = Rtnl()
    assert isinstance(rtnl, Rtnl)
    return rtnl


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
