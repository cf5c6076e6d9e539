"""``/sys/class/net/DEV/*``: a few of a device's sysfs attributes, as ``cat`` prints them.

Theory of operation: each attribute is read off the
:class:`~netstack.core.netdevice.NetDevice` and formatted as
net/core/net-sysfs.c formats it. ``features`` is the attribute of the 2.6.3x
kernels (removed by 3.2, when ethtool's ``ETHTOOL_GFEATURES`` took over):
the legacy numeric word of the device's *current* features, ``%#lx`` — so
an ``ip tunnel add … mode gre`` device of a kernel without seed 3's fix reads
``0x6000`` (NETNS_LOCAL|GRO) and one with LLTX ``0x7000``, as in the seed's
report (where a 2012 IPIP device, without today's ``IPIP_FEATURES``, read
``0x7000`` too).

Kernel: net/core/net-sysfs.c (2.6.39 for ``features``).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from netstack.core.features import legacy_features_word
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import IF_OPER_DOWN
from netstack.errors import ConfigError
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["SYSFS_GROUPS", "SYSFS_NET_ATTRS", "sysfs"]

# attribute groups a module adds under /sys/class/net/<dev>/<group>/ (the bridge's)
SYSFS_GROUPS: NetKey[dict[str, Callable[[NetDevice, str], str | None]]] = NetKey("sysfs_groups")

OPERSTATES: Final = ("unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up")


def _mac(addr: bytes) -> str:
    """``sysfs_format_mac``: ``%*phC``."""
    return ":".join(f"{b:02x}" for b in addr)


def _operstate(dev: NetDevice) -> str:
    state = dev.operstate if dev.running else IF_OPER_DOWN
    return OPERSTATES[state] if 0 <= state < len(OPERSTATES) else "unknown"


def _carrier(dev: NetDevice) -> str:
    if not dev.running:
        raise OSError(errno.EINVAL, "Invalid argument")
    return "1" if dev.carrier else "0"


SYSFS_NET_ATTRS: Final[dict[str, Callable[[NetDevice], str]]] = {
    "features": lambda d: f"{legacy_features_word(d.features):#x}",
    "mtu": lambda d: str(d.mtu),
    "ifindex": lambda d: str(d.ifindex),
    "iflink": lambda d: str(d.ops.ndo_get_iflink(d)),
    "type": lambda d: str(d.type),
    "flags": lambda d: f"{d.flags:#x}",
    "tx_queue_len": lambda d: str(d.tx_queue_len),
    "address": lambda d: _mac(d.dev_addr),
    "broadcast": lambda d: _mac(d.broadcast),
    "addr_len": lambda d: str(d.addr_len),
    "operstate": _operstate,
    "carrier": _carrier,
}


# queues/tx-N/byte_queue_limits/*: Dql.statistics() field for each file
BQL_ATTRS: Final = {
    "limit": "limit",
    "limit_max": "limit_max",
    "limit_min": "limit_min",
    "inflight": "inflight",
    "hold_time": "hold_time",
    "stall_thrs": "stall_thrs",
    "stall_cnt": "stall_cnt",
    "stall_max": "stall_max",
}


@kernel("net-sysfs.c")
def _bql(net: Net, parts: list[str], full: str) -> str:
    """``class/net/DEV/queues/tx-N/byte_queue_limits/ATTR``. Kernel: net-sysfs.c, bql_show_*()."""
    dev = net.dev_get_by_name(parts[2])
    field = BQL_ATTRS.get(parts[6])
    queue = parts[4]
    if dev is None or field is None or parts[5] != "byte_queue_limits":
        raise ConfigError(f"cat: {full}: No such file or directory", errno.ENOENT)
    if not (queue.startswith("tx-") and queue[3:].isdigit()):
        raise ConfigError(f"cat: {full}: No such file or directory", errno.ENOENT)
    index = int(queue[3:])
    if index >= dev.real_num_tx_queues:
        raise ConfigError(f"cat: {full}: No such file or directory", errno.ENOENT)
    return f"{getattr(dev.get_tx_queue(index).dql.statistics(), field)}\n"


def sysfs(net: Net, path: str) -> str:
    """Read ``/sys/PATH`` (``class/net/DEV/ATTR``); returns the text with its newline.

    Raises:
        ConfigError: ``cat``'s message for a missing file or a failed read.
    """
    rel = path.removeprefix("/sys/").strip("/")
    parts = rel.split("/")
    full = f"/sys/{rel}"
    if len(parts) == 7 and parts[:2] == ["class", "net"] and parts[3] == "queues":
        return _bql(net, parts, full)
    if len(parts) == 5 and parts[:2] == ["class", "net"]:
        # attribute groups a module registered (the bridge's bridge/ and brport/)
        groups = SYSFS_GROUPS.find(net)
        group = groups.get(parts[3]) if groups is not None else None
        gdev = net.dev_get_by_name(parts[2])
        value = group(gdev, parts[4]) if group is not None and gdev is not None else None
        if value is None:
            raise ConfigError(f"cat: {full}: No such file or directory", errno.ENOENT)
        return f"{value}\n"
    if len(parts) != 4 or parts[:2] != ["class", "net"]:
        raise ConfigError(f"cat: {full}: No such file or directory", errno.ENOENT)
    dev = net.dev_get_by_name(parts[2])
    attr = SYSFS_NET_ATTRS.get(parts[3])
    if dev is None or attr is None:
        raise ConfigError(f"cat: {full}: No such file or directory", errno.ENOENT)
    try:
        return attr(dev) + "\n"
    except OSError as e:
        raise ConfigError(f"cat: {full}: {e.strerror}", e.errno or errno.EIO) from None
