"""The ``net.ipv6.*`` sysctl tables: globals, ``icmp.*``, ``route.*``, ``conf.X``.

Theory of operation: :func:`ipv6_sysctl_net_init` registers the per-Net
``net.ipv6.*``, ``net.ipv6.icmp.*`` and ``net.ipv6.route.*`` entries,
:func:`addrconf_sysctl_register_conf` one ``net.ipv6.conf.X`` directory
(``__addrconf_sysctl_register``); both run lazily, when a key under their
prefix is first used. ``forwarding`` and ``disable_ipv6`` have handlers
(:func:`addrconf_fixup_forwarding`, :func:`addrconf_disable_ipv6`) that
walk the devices, as addrconf.c's do.

Kernel: net/ipv6/sysctl_net_ipv6.c (ipv6_sysctl_net_init), net/ipv6/addrconf.c
(addrconf_sysctl, __addrconf_sysctl_register), net/ipv6/route.c
(ipv6_route_table_template), net/ipv6/icmp.c (ipv6_icmp_table_template).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Final

from netstack.core.dev import NETDEV_DOWN, NETDEV_UP
from netstack.core.sysctl import invalid
from netstack.errors import ConfigError
from netstack.ipv6 import icmp as _icmp
from netstack.ipv6.addrconf import DEVCONF6, DEVCONF6_READONLY, DevConf6, Inet6Dev
from netstack.ipv6.route import IP6_MAX_MTU
from netstack.sites import kernel
from netstack.wire.ipv6 import IPV6_MIN_MTU

if TYPE_CHECKING:
    from netstack.ipv6.netns import Ipv6

__all__ = [
    "addrconf_disable_ipv6",
    "addrconf_fixup_forwarding",
    "addrconf_forward_change",
    "addrconf_sysctl_register_conf",
    "ipv6_sysctl_net_init",
]


def _int(text: str, name: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise invalid(name) from None


# per-device conf entries with their own handler or limits (addrconf_sysctl[])
_CONF_RANGES: Final[dict[str, tuple[int | None, int | None]]] = {
    "hop_limit": (1, 255),
    "addr_gen_mode": (0, 3),
    "accept_ra_min_hop_limit": (0, 255),
}


@kernel("__addrconf_sysctl_register")
def addrconf_sysctl_register_conf(
    ipv6: Ipv6, prefix: str, cnf: DevConf6, idev: Inet6Dev | None
) -> None:
    """Register one ``net.ipv6.conf.X`` directory.

    Kernel: __addrconf_sysctl_register().
    """
    s = ipv6.net.sysctl
    for name in s.wanted(f"{prefix}.", DEVCONF6):
        key = f"{prefix}.{name}"
        if name == "forwarding":

            def set_fwd(text: str, key: str = key) -> None:
                addrconf_fixup_forwarding(ipv6, cnf, idev, 1 if _int(text, key) else 0)

            s.register(key, lambda: str(cnf.forwarding), set_fwd)
        elif name == "disable_ipv6":

            def set_dis(text: str, key: str = key) -> None:
                addrconf_disable_ipv6(ipv6, cnf, idev, 1 if _int(text, key) else 0)

            s.register(key, lambda: str(cnf.disable_ipv6), set_dis)
        elif name == "mtu":

            def get_mtu() -> str:
                return str(cnf.mtu6)

            def set_mtu(text: str, key: str = key) -> None:
                value = _int(text, key)
                limit = idev.dev.mtu if idev is not None else IP6_MAX_MTU
                if not IPV6_MIN_MTU <= value <= limit:  # addrconf_sysctl_mtu()
                    raise invalid(key)
                cnf.mtu6 = value
                ipv6.rt6_genid_bump()

            s.register(key, get_mtu, set_mtu)
        elif name in DEVCONF6_READONLY:

            def get_ro(name: str = name) -> str:
                return str(getattr(cnf, name))

            s.register(key, get_ro)
        else:
            lo, hi = _CONF_RANGES.get(name, (None, None))
            s.register_int(key, cnf, name, minimum=lo, maximum=hi)


@kernel("net/ipv6/addrconf.c", "addrconf_fixup_forwarding")
def addrconf_fixup_forwarding(ipv6: Ipv6, cnf: DevConf6, idev: Inet6Dev | None, newf: int) -> None:
    """``net.ipv6.conf.*.forwarding``.

    Kernel: net/ipv6/addrconf.c, addrconf_fixup_forwarding().
    """
    old = cnf.forwarding
    cnf.forwarding = newf
    if cnf is ipv6.devconf_dflt:
        return
    if cnf is ipv6.devconf_all:
        ipv6.devconf_dflt.forwarding = newf
        addrconf_forward_change(ipv6, newf)
    elif (not newf) != (not old) and idev is not None:
        ipv6.addrconf.dev_forward_change(idev)
    if newf:
        ipv6.rt6_purge_dflt_routers()
    ipv6.rt6_genid_bump()


@kernel("addrconf_forward_change")
def addrconf_forward_change(ipv6: Ipv6, newf: int) -> None:
    """Every device follows ``all.forwarding``.

    Kernel: addrconf_forward_change().
    """
    for dev in list(ipv6.net.devices.values()):
        idev = dev.ip6_ptr
        if idev is None:
            continue
        changed = (not idev.cnf.forwarding) != (not newf)
        idev.cnf.forwarding = newf
        if changed:
            ipv6.addrconf.dev_forward_change(idev)


@kernel("addrconf_disable_ipv6", "dev_disable_change")
def addrconf_disable_ipv6(ipv6: Ipv6, cnf: DevConf6, idev: Inet6Dev | None, newf: int) -> None:
    """``net.ipv6.conf.*.disable_ipv6``.

    Kernel: addrconf_disable_ipv6() / dev_disable_change().
    """
    old = cnf.disable_ipv6
    cnf.disable_ipv6 = newf
    if cnf is ipv6.devconf_dflt:
        return
    if cnf is ipv6.devconf_all:
        ipv6.devconf_dflt.disable_ipv6 = newf
        for dev in list(ipv6.net.devices.values()):
            d = dev.ip6_ptr
            if d is None:
                continue
            changed = (not d.cnf.disable_ipv6) != (not newf)
            d.cnf.disable_ipv6 = newf
            if changed:
                _dev_disable_change(ipv6, d)
        return
    if (not old) != (not newf) and idev is not None:
        _dev_disable_change(ipv6, idev)


@kernel("dev_disable_change")
def _dev_disable_change(ipv6: Ipv6, idev: Inet6Dev) -> None:
    """Kernel: dev_disable_change()."""
    dev = idev.dev
    ipv6.addrconf.addrconf_notify(NETDEV_DOWN if idev.cnf.disable_ipv6 else NETDEV_UP, dev)


def ipv6_sysctl_net_init(ipv6: Ipv6) -> None:
    """``net.ipv6.*``, ``.icmp.*``, ``.route.*`` (``.conf.{all,default}`` and
    ``.neigh.default``: :func:`inet6_init`)."""
    s = ipv6.net.sysctl
    p = "net.ipv6"
    s.register_int(f"{p}.bindv6only", ipv6, "bindv6only", minimum=0, maximum=1)
    s.register_int(f"{p}.ip_nonlocal_bind", ipv6, "ip_nonlocal_bind", minimum=0, maximum=1)
    s.register_int(
        f"{p}.anycast_src_echo_reply", ipv6, "anycast_src_echo_reply", minimum=0, maximum=1
    )
    s.register_int(
        f"{p}.flowlabel_consistency", ipv6, "flowlabel_consistency", minimum=0, maximum=1
    )

    def flowlabel_changed(_value: int) -> None:
        ipv6.flowlabel_gen += 1  # sockets' cached labels are stale

    s.register_int(
        f"{p}.auto_flowlabels",
        ipv6,
        "auto_flowlabels",
        minimum=0,
        maximum=3,
        on_change=flowlabel_changed,
    )
    s.register_int(f"{p}.fwmark_reflect", ipv6, "fwmark_reflect", minimum=0, maximum=1)
    s.register_int(f"{p}.idgen_retries", ipv6, "idgen_retries")
    s.register_int(f"{p}.idgen_delay", ipv6, "idgen_delay")
    s.register_int(
        f"{p}.flowlabel_state_ranges",
        ipv6,
        "flowlabel_state_ranges",
        minimum=0,
        maximum=1,
        on_change=flowlabel_changed,
    )
    s.register_int(f"{p}.max_dst_opts_number", ipv6, "max_dst_opts_number")
    s.register_int(f"{p}.max_hbh_opts_number", ipv6, "max_hbh_opts_number")
    s.register_int(f"{p}.max_dst_opts_length", ipv6, "max_dst_opts_length")
    s.register_int(f"{p}.max_hbh_length", ipv6, "max_hbh_length")
    s.register_int(
        f"{p}.fib_multipath_hash_policy", ipv6, "fib_multipath_hash_policy", minimum=0, maximum=3
    )
    s.register_int(f"{p}.ip6frag_high_thresh", ipv6, "ip6frag_high_thresh", minimum=0)
    s.register_int(f"{p}.ip6frag_low_thresh", ipv6, "ip6frag_low_thresh", minimum=0)
    s.register_int(f"{p}.ip6frag_time", ipv6, "ip6frag_time", minimum=0)
    # net.ipv6.icmp.*
    s.register_int(f"{p}.icmp.ratelimit", ipv6, "icmpv6_ratelimit", minimum=0)
    for name in ("echo_ignore_all", "echo_ignore_multicast", "echo_ignore_anycast"):
        s.register_int(f"{p}.icmp.{name}", ipv6, f"icmpv6_{name}", minimum=0, maximum=1)

    def get_mask() -> str:
        return _icmp.format_ratemask(ipv6.icmpv6_ratemask)

    def set_mask(text: str) -> None:
        mask = _icmp.parse_ratemask(text)
        if mask is None:
            raise invalid(f"{p}.icmp.ratemask")
        ipv6.icmpv6_ratemask = mask

    s.register(f"{p}.icmp.ratemask", get_mask, set_mask)
    # net.ipv6.route.* (ipv6_route_table_template)
    r = f"{p}.route"
    s.register_int(f"{r}.gc_thresh", ipv6, "ip6_rt_gc_thresh")
    s.register_int(f"{r}.max_size", ipv6, "ip6_rt_max_size")
    s.register_int(f"{r}.gc_timeout", ipv6, "ip6_rt_gc_timeout")
    s.register_int(f"{r}.gc_interval", ipv6, "ip6_rt_gc_interval")
    s.register_int(f"{r}.gc_elasticity", ipv6, "ip6_rt_gc_elasticity")
    s.register_int(f"{r}.mtu_expires", ipv6, "ip6_rt_mtu_expires")
    s.register_int(f"{r}.min_adv_mss", ipv6, "ip6_rt_min_advmss")

    def get_gc_ms() -> str:
        return str(ipv6.ip6_rt_gc_min_interval_ms)

    def set_gc_ms(text: str) -> None:
        ipv6.ip6_rt_gc_min_interval_ms = _int(text, f"{r}.gc_min_interval_ms")

    def get_gc_s() -> str:  # proc_dointvec_jiffies: whole seconds
        return str(ipv6.ip6_rt_gc_min_interval_ms // 1000)

    def set_gc_s(text: str) -> None:
        ipv6.ip6_rt_gc_min_interval_ms = _int(text, f"{r}.gc_min_interval") * 1000

    s.register(f"{r}.gc_min_interval", get_gc_s, set_gc_s)
    s.register(f"{r}.gc_min_interval_ms", get_gc_ms, set_gc_ms)
    s.register_int(
        f"{r}.skip_notify_on_dev_down", ipv6, "skip_notify_on_dev_down", minimum=0, maximum=1
    )

    @kernel("ipv6_sysctl_rtcache_flush", "fib6_run_gc")
    def flush(text: str) -> None:
        """Kernel: ipv6_sysctl_rtcache_flush() → fib6_run_gc()."""
        ipv6.fib6.fib6_run_gc()

    def flush_denied() -> str:
        raise ConfigError(f"sysctl: permission denied on key '{r}.flush'", errno.EACCES)

    s.register(f"{r}.flush", flush_denied, flush)
