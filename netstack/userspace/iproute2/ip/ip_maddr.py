"""``ip maddress show``: the multicast addresses every device listens to.

Theory of operation: iproute2 reads three kernel files and merges them by
ifindex (``maddr_ins`` keeps each file's order within a device):
``/proc/net/dev_mcast`` (the link-layer filter, ``dev->mc``: ``link``
lines), ``/proc/net/igmp`` (IPv4 groups, ``in_dev->mc_list``, newest
first: ``inet`` lines) and ``/proc/net/igmp6`` (IPv6 groups: ``inet6``
lines). ``-0``/``-4``/``-6`` read only one of them; ``dev NAME`` keeps one
device. A count other than 1 prints as `` users N``.

Known gap: IPv6 groups do not put their ``33:33:…`` MACs on ``dev->mc``
here, so a device shows no ``link 33:33:…`` lines (Linux shows one per
IPv6 group).

iproute2: ip/ipmaddr.c. Kernel: net/core/dev_addr_lists.c (dev_mc_seq_show),
net/ipv4/igmp.c (igmp_mc_seq_show), net/ipv6/mcast.c (igmp6_mc_seq_show).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

from netstack.errors import ConfigError
from netstack.userspace.iproute2.ip.ip_common import (
    AF_INET,
    AF_INET6,
    AF_UNSPEC,
    Args,
    duparg2,
    ll_name_to_dev,
    matches,
    nodev,
)
from netstack.userspace.iproute2.utils import Iproute2Options
from netstack.wire.ipv4 import ntoa
from netstack.wire.ipv6 import ntoa as ntoa6

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["IPMADDR_USAGE", "do_multiaddr"]

AF_PACKET: Final = 17
IPMADDR_USAGE: Final = (
    "Usage: ip maddr [ add | del ] MULTIADDR dev STRING\n       ip maddr show [ dev STRING ]\n"
)


def _users(n: int) -> str:
    return f" users {n}" if n != 1 else ""


def _device_lines(dev: NetDevice, family: int) -> list[str]:
    lines: list[str] = []
    if family in (AF_UNSPEC, AF_PACKET):
        in_dev = dev.ip_ptr
        refs = in_dev.mc_hw_refs if in_dev is not None else {}
        lines.extend(f"\tlink  {mac.hex(':')}{_users(refs.get(mac, 1))}\n" for mac in dev.mc)
    if family in (AF_UNSPEC, AF_INET) and dev.ip_ptr is not None:
        lines.extend(
            f"\tinet  {ntoa(im.multiaddr)}{_users(im.users)}\n" for im in dev.ip_ptr.mc_list
        )
    idev = dev.ip6_ptr
    if family in (AF_UNSPEC, AF_INET6) and idev is not None:
        groups = reversed(list(idev.mc_list))  # /proc/net/igmp6: newest first
        lines.extend(f"\tinet6 {ntoa6(g)}{_users(idev.mc_list[g])}\n" for g in groups)
    return lines


def multiaddr_list(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip maddr show [dev NAME]``. iproute2: ip/ipmaddr.c, multiaddr_list()."""
    filter_dev: NetDevice | None = None
    while args:
        word = args.take()
        if word == "dev":
            if not args:
                raise ConfigError(IPMADDR_USAGE, errno.EINVAL)
            word = args.take()
        elif matches(word, "help"):
            raise ConfigError(IPMADDR_USAGE, errno.EINVAL)
        if filter_dev is not None:
            duparg2("dev", word)
        filter_dev = ll_name_to_dev(net, word)
        if filter_dev is None:
            nodev(word)
    for dev in sorted(net.dev_index.values(), key=lambda d: d.ifindex):
        if filter_dev is not None and dev is not filter_dev:
            continue
        lines = _device_lines(dev, opts.family)
        if lines:
            opts.write(f"{dev.ifindex}:\t{dev.name}\n")
            for line in lines:
                opts.write(line)


def do_multiaddr(net: Net, opts: Iproute2Options, args: Args) -> None:
    """``ip maddr …``. iproute2: ip/ipmaddr.c, do_multiaddr()."""
    if not args:
        multiaddr_list(net, opts, args)
        return
    word = args.take()
    if matches(word, "show") or matches(word, "lst") or matches(word, "list"):
        multiaddr_list(net, opts, args)
    elif matches(word, "help"):
        raise ConfigError(IPMADDR_USAGE, errno.EINVAL)
    else:
        raise ConfigError(f'Command "{word}" is unknown, try "ip maddr help".', errno.EINVAL)
