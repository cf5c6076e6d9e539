"""Per-device IPv4 state: addresses (``ip addr``), device configuration, source selection.

Theory of operation: every device gets an :class:`InDevice` when it is
registered (kernel: ``inetdev_init``), holding its addresses and its
``net.ipv4.conf.DEV.*`` settings. Adding an address inserts it (a second
address in the same subnet becomes *secondary*) and tells the FIB, which adds
the ``local`` route (always) and, once the device is up, the prefix route and
the broadcast route (kernel: ``fib_add_ifaddr``). ``inet_select_addr`` picks
the source address for a destination, preferring a primary address of the
output device in the destination's subnet.

Kernel: net/ipv4/devinet.c, include/linux/inetdevice.h.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from netstack.core.slotcopy import attr_copier
from netstack.errors import ConfigError
from netstack.sites import kernel
from netstack.wire.ipv4 import inet_make_mask, ipv4_is_loopback
from netstack.wire.rtnetlink import (
    IFA_F_PERMANENT,
    IFA_F_SECONDARY,
    RT_SCOPE_HOST,
    RT_SCOPE_LINK,
    RT_SCOPE_UNIVERSE,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.igmp import IpMcList
    from netstack.ipv4.netns import Ipv4

__all__ = ["DEVCONF_FIELDS", "DevConf", "InDevice", "InIfaddr", "inet_select_addr"]

DEVCONF_FIELDS: Final = (
    "forwarding",
    "mc_forwarding",
    "proxy_arp",
    "accept_redirects",
    "secure_redirects",
    "send_redirects",
    "shared_media",
    "rp_filter",
    "accept_source_route",
    "bootp_relay",
    "log_martians",
    "tag",
    "arp_filter",
    "medium_id",
    "disable_xfrm",
    "disable_policy",
    "force_igmp_version",
    "arp_announce",
    "arp_ignore",
    "promote_secondaries",
    "arp_accept",
    "arp_notify",
    "accept_local",
    "src_valid_mark",
    "proxy_arp_pvlan",
    "route_localnet",
    "igmpv2_unsolicited_report_interval",
    "igmpv3_unsolicited_report_interval",
    "ignore_routes_with_linkdown",
    "drop_unicast_in_l2_multicast",
    "drop_gratuitous_arp",
    "bc_forwarding",
    "arp_evict_nocarrier",
)

_DEFAULTS: Final = {
    "accept_redirects": 1,
    "secure_redirects": 1,
    "send_redirects": 1,
    "shared_media": 1,
    "accept_source_route": 0,
    "igmpv2_unsolicited_report_interval": 10000,
    "igmpv3_unsolicited_report_interval": 1000,
    "arp_evict_nocarrier": 1,
}


class DevConf:
    """``net.ipv4.conf.{all,default,DEV}.*`` (kernel: ``struct ipv4_devconf``)."""

    __slots__ = DEVCONF_FIELDS

    # one annotation a field (tests/core/test_snmp.py checks them against
    # DEVCONF_FIELDS): the mypyc build makes the class native from them
    forwarding: int
    mc_forwarding: int
    proxy_arp: int
    accept_redirects: int
    secure_redirects: int
    send_redirects: int
    shared_media: int
    rp_filter: int
    accept_source_route: int
    bootp_relay: int
    log_martians: int
    tag: int
    arp_filter: int
    medium_id: int
    disable_xfrm: int
    disable_policy: int
    force_igmp_version: int
    arp_announce: int
    arp_ignore: int
    promote_secondaries: int
    arp_accept: int
    arp_notify: int
    accept_local: int
    src_valid_mark: int
    proxy_arp_pvlan: int
    route_localnet: int
    igmpv2_unsolicited_report_interval: int
    igmpv3_unsolicited_report_interval: int
    ignore_routes_with_linkdown: int
    drop_unicast_in_l2_multicast: int
    drop_gratuitous_arp: int
    bc_forwarding: int
    arp_evict_nocarrier: int

    def __init__(self, copy_from: DevConf | None = None) -> None:
        if copy_from is not None:
            _copy_devconf(self, copy_from)
            return
        for f in DEVCONF_FIELDS:
            setattr(self, f, _DEFAULTS.get(f, 0))


_copy_devconf: Final = attr_copier(DEVCONF_FIELDS)


class InIfaddr:
    """One IPv4 address of a device (kernel: ``struct in_ifaddr``)."""

    __slots__ = (
        "dev",
        "ifa_address",
        "ifa_broadcast",
        "ifa_flags",
        "ifa_label",
        "ifa_local",
        "ifa_mask",
        "ifa_prefixlen",
        "ifa_rt_priority",
        "ifa_scope",
        "preferred_lft",
        "valid_lft",
    )

    def __init__(
        self,
        dev: NetDevice,
        local: int,
        prefixlen: int,
        *,
        peer: int | None = None,
        broadcast: int = 0,
        scope: int | None = None,
        label: str | None = None,
        flags: int = IFA_F_PERMANENT,
        metric: int = 0,
    ) -> None:
        self.dev = dev
        self.ifa_local = local
        self.ifa_address = peer if peer is not None else local
        self.ifa_prefixlen = prefixlen
        self.ifa_mask = inet_make_mask(prefixlen)
        self.ifa_broadcast = broadcast
        if scope is None:
            scope = RT_SCOPE_HOST if ipv4_is_loopback(local) else RT_SCOPE_UNIVERSE
        self.ifa_scope = scope
        self.ifa_label = label or dev.name
        self.ifa_flags = flags
        self.ifa_rt_priority = metric
        self.valid_lft = 0xFFFFFFFF
        self.preferred_lft = 0xFFFFFFFF

    @property
    def prefix(self) -> int:
        return self.ifa_address & self.ifa_mask

    @kernel("inet_ifa_match")
    def match(self, addr: int) -> bool:
        """Is *addr* in this address's subnet? Kernel: inet_ifa_match()."""
        return not ((addr ^ self.ifa_address) & self.ifa_mask)

    def __repr__(self) -> str:
        from netstack.wire.ipv4 import ntoa

        return f"<InIfaddr {ntoa(self.ifa_local)}/{self.ifa_prefixlen} dev {self.dev.name}>"


class InDevice:
    """IPv4 state of one device (kernel: ``struct in_device``)."""

    # Slotted (a lab holds thousands of these); no __dict__: every field is
    # declared, so the class is native in the mypyc build (scripts/build_compiled.py).
    __slots__ = (
        "cnf",
        "conf_name",
        "dead",
        "dev",
        "ifa_list",
        "ipv4",
        "mc_hw_refs",
        "mc_list",
    )

    def __init__(self, ipv4: Ipv4, dev: NetDevice) -> None:
        self.ipv4 = ipv4
        self.dev = dev
        self.ifa_list: list[InIfaddr] = []
        self.cnf = DevConf(ipv4.devconf_dflt)
        self.dead = False
        self.conf_name = dev.name  # the name its sysctls were registered under
        self.mc_list: list[IpMcList] = []  # joined groups, newest first (netstack.ipv4.igmp)
        self.mc_hw_refs: dict[bytes, int] = {}  # groups per dev->mc MAC (its refcount)

    def primaries(self) -> Iterator[InIfaddr]:
        return (ifa for ifa in self.ifa_list if not ifa.ifa_flags & IFA_F_SECONDARY)

    # kernel IN_DEV_* helpers (all/dev combination rules)
    def forward(self) -> bool:
        """IN_DEV_FORWARD."""
        return bool(self.cnf.forwarding)

    def rx_redirects(self) -> bool:
        """IN_DEV_RX_REDIRECTS."""
        all_ = self.ipv4.devconf_all
        if self.forward():
            return bool(all_.accept_redirects and self.cnf.accept_redirects)
        return bool(all_.accept_redirects or self.cnf.accept_redirects)

    def tx_redirects(self) -> bool:
        """IN_DEV_TX_REDIRECTS (ORCONF)."""
        return bool(self.ipv4.devconf_all.send_redirects or self.cnf.send_redirects)

    def orconf(self, name: str) -> int:
        """IN_DEV_ORCONF: all OR device."""
        return int(getattr(self.ipv4.devconf_all, name) or getattr(self.cnf, name))

    def maxconf(self, name: str) -> int:
        """IN_DEV_MAXCONF: the larger of all and device (per received ARP: no max())."""
        a = getattr(self.ipv4.devconf_all, name)
        b = getattr(self.cnf, name)
        return int(a if a >= b else b)

    def ifa_for(self, local: int, prefixlen: int) -> InIfaddr | None:
        for ifa in self.ifa_list:
            if ifa.ifa_local == local and ifa.ifa_prefixlen == prefixlen:
                return ifa
        return None

    # -- adding and deleting addresses ------------------------------------------------
    @kernel("__inet_insert_ifa")
    def insert_ifa(self, ifa: InIfaddr) -> None:
        """Add an address. Kernel: __inet_insert_ifa()."""
        if ifa.ifa_local == 0:
            raise ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)
        last_primary = -1
        for i, other in enumerate(self.ifa_list):
            if not other.ifa_flags & IFA_F_SECONDARY:
                last_primary = i
            if other.ifa_mask == ifa.ifa_mask and other.match(ifa.ifa_address):
                if other.ifa_local == ifa.ifa_local:
                    raise ConfigError("Error: ipv4: Address already assigned.", errno.EEXIST)
                if other.ifa_scope != ifa.ifa_scope:
                    raise ConfigError("Error: ipv4: Invalid scope value.", errno.EINVAL)
                ifa.ifa_flags |= IFA_F_SECONDARY
        if ifa.ifa_flags & IFA_F_SECONDARY:
            self.ifa_list.append(ifa)
        else:
            self.ifa_list.insert(last_primary + 1, ifa)
        self.ipv4.rt_cache_flush()
        self.ipv4.fib.fib_add_ifaddr(ifa)
        self.ipv4.notify_addr(ifa, added=True)

    @kernel("__inet_del_ifa")
    def delete_ifa(self, ifa: InIfaddr) -> None:
        """Remove an address (and, without promote_secondaries, its secondaries).

        Kernel: __inet_del_ifa().
        """
        self.ifa_list.remove(ifa)
        victims = [ifa]
        if not ifa.ifa_flags & IFA_F_SECONDARY:
            same = [
                o
                for o in self.ifa_list
                if o.ifa_flags & IFA_F_SECONDARY
                and o.ifa_mask == ifa.ifa_mask
                and o.match(ifa.ifa_address)
            ]
            if same and self.orconf("promote_secondaries"):
                same[0].ifa_flags &= ~IFA_F_SECONDARY
            else:
                for o in same:
                    self.ifa_list.remove(o)
                victims.extend(same)
        for v in victims:
            self.ipv4.fib.fib_del_ifaddr(v)
            self.ipv4.notify_addr(v, added=False)
        if len(victims) > 1 or ifa.ifa_flags & IFA_F_SECONDARY == 0:
            for o in self.ifa_list:  # a promoted secondary gets its routes
                if (
                    not o.ifa_flags & IFA_F_SECONDARY
                    and o.ifa_mask == ifa.ifa_mask
                    and o.match(ifa.ifa_address)
                ):
                    self.ipv4.fib.fib_add_ifaddr(o)
        if not self.ifa_list:  # fib_inetaddr_event(NETDEV_DOWN): "Last address was deleted"
            self.ipv4.fib_disable_ip(self.dev)
        else:
            self.ipv4.rt_cache_flush()


@kernel("net/ipv4/devinet.c", "inet_select_addr")
def inet_select_addr(ipv4: Ipv4, dev: NetDevice | None, dst: int, scope: int) -> int:
    """Choose a source address on *dev* for *dst* within *scope*.

    Kernel: net/ipv4/devinet.c, inet_select_addr().
    """
    addr = 0
    if dev is not None:
        in_dev: InDevice | None = dev.ip_ptr
        if in_dev is not None:
            for ifa in in_dev.primaries():
                if ifa.ifa_scope > scope:
                    continue
                if not dst or ifa.match(dst):
                    return ifa.ifa_local
                if not addr:
                    addr = ifa.ifa_local
        if addr:
            return addr
    # Not on this device: any primary address of suitable scope elsewhere,
    # loopback first (it is first in the device list).
    for other in ipv4.net.devices.values():
        in_dev = other.ip_ptr
        if in_dev is None:
            continue
        for ifa in in_dev.primaries():
            if ifa.ifa_scope != RT_SCOPE_LINK and ifa.ifa_scope <= scope:
                return ifa.ifa_local
    return 0


@kernel("inet_ifa_byprefix")
def inet_ifa_byprefix(in_dev: InDevice, prefix: int, mask: int) -> InIfaddr | None:
    """Kernel: inet_ifa_byprefix()."""
    for ifa in in_dev.primaries():
        if ifa.ifa_mask == mask and ifa.match(prefix):
            return ifa
    return None
