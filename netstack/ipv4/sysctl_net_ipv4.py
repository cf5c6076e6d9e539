"""The ``net.ipv4.*`` sysctl tables: globals, ``conf.{all,default,DEV}``.

Theory of operation: :func:`ipv4_sysctl_init_net` registers the per-Net
``net.ipv4.*`` entries (``ipv4_net_table``), :func:`devinet_sysctl_register`
one ``net.ipv4.conf.X`` directory (``__devinet_sysctl_register``); both run
lazily, when a key under their prefix is first read or written
(``register_lazy``). Writing ``forwarding`` goes through
:func:`inet_forward_change`, as ``devinet_sysctl_forward`` does.

Kernel: net/ipv4/sysctl_net_ipv4.c (ipv4_net_table), net/ipv4/devinet.c
(__devinet_sysctl_register, devinet_sysctl_forward, inet_forward_change).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netstack.core.inetpeer import inet_peer_params
from netstack.ipv4.devinet import DEVCONF_FIELDS, DevConf
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.ipv4.netns import Ipv4

__all__ = ["devinet_sysctl_register", "inet_forward_change", "ipv4_sysctl_init_net"]


def devinet_sysctl_register(
    ipv4: Ipv4, prefix: str, cnf: DevConf, dev: NetDevice | None, *, is_all: bool = False
) -> None:
    s = ipv4.net.sysctl
    for f in s.wanted(f"{prefix}.", DEVCONF_FIELDS):
        if f == "forwarding":

            def set_fwd(text: str, cnf: DevConf = cnf, name: str = f"{prefix}.forwarding") -> None:
                value = _int_or_invalid(text, name)
                if is_all:
                    inet_forward_change(ipv4, value)
                else:
                    cnf.forwarding = 1 if value else 0
                    ipv4.rt_cache_flush()

            def get_fwd(cnf: DevConf = cnf) -> str:
                return str(cnf.forwarding)

            s.register(f"{prefix}.forwarding", get_fwd, set_fwd)
        else:
            s.register_int(f"{prefix}.{f}", cnf, f)


@kernel("net/ipv4/devinet.c", "inet_forward_change")
def inet_forward_change(ipv4: Ipv4, on: int) -> None:
    """``net.ipv4.ip_forward`` / ``conf.all.forwarding``: every device follows.

    Kernel: net/ipv4/devinet.c, inet_forward_change().
    """
    on = 1 if on else 0
    ipv4.devconf_all.forwarding = on
    ipv4.devconf_dflt.forwarding = on
    for dev in ipv4.net.devices.values():
        in_dev = dev.ip_ptr
        if in_dev is not None:
            in_dev.cnf.forwarding = on
    ipv4.rt_cache_flush()


def _int_or_invalid(text: str, name: str) -> int:
    from netstack.core.sysctl import invalid

    try:
        return int(text.strip())
    except ValueError:
        raise invalid(name) from None


def ipv4_sysctl_init_net(ipv4: Ipv4) -> None:
    s = ipv4.net.sysctl

    def get_fwd() -> str:
        return str(ipv4.devconf_all.forwarding)

    def set_fwd(text: str) -> None:
        inet_forward_change(ipv4, _int_or_invalid(text, "net.ipv4.ip_forward"))

    s.register("net.ipv4.ip_forward", get_fwd, set_fwd)
    s.register_int("net.ipv4.ip_default_ttl", ipv4, "ip_default_ttl", minimum=1, maximum=255)
    s.register_int("net.ipv4.ip_no_pmtu_disc", ipv4, "ip_no_pmtu_disc", minimum=0, maximum=3)
    s.register_int("net.ipv4.ip_nonlocal_bind", ipv4, "ip_nonlocal_bind", minimum=0, maximum=1)
    s.register_int(
        "net.ipv4.ip_forward_update_priority", ipv4, "ip_fwd_update_priority", minimum=0, maximum=1
    )
    s.register_int("net.ipv4.ip_forward_use_pmtu", ipv4, "ip_fwd_use_pmtu", minimum=0, maximum=1)
    for name in (
        "icmp_echo_ignore_all",
        "icmp_echo_ignore_broadcasts",
        "icmp_ignore_bogus_error_responses",
        "icmp_errors_use_inbound_ifaddr",
    ):
        s.register_int(f"net.ipv4.{name}", ipv4, name, minimum=0, maximum=1)
    s.register_int("net.ipv4.icmp_ratelimit", ipv4, "icmp_ratelimit", minimum=0)
    s.register_int("net.ipv4.icmp_ratemask", ipv4, "icmp_ratemask", minimum=0)
    s.register_int("net.ipv4.icmp_msgs_per_sec", ipv4, "icmp_msgs_per_sec", minimum=0)
    s.register_int("net.ipv4.icmp_msgs_burst", ipv4, "icmp_msgs_burst", minimum=0)
    s.register_int("net.ipv4.ipfrag_high_thresh", ipv4, "ipfrag_high_thresh", minimum=0)
    s.register_int("net.ipv4.ipfrag_low_thresh", ipv4, "ipfrag_low_thresh", minimum=0)
    s.register_int("net.ipv4.ipfrag_time", ipv4, "ipfrag_time", minimum=0)
    s.register_int("net.ipv4.route.min_pmtu", ipv4, "ip_rt_min_pmtu", minimum=68)
    peer_params = inet_peer_params(ipv4.net)
    for name in ("inet_peer_threshold", "inet_peer_minttl", "inet_peer_maxttl"):
        s.register_int(f"net.ipv4.{name}", peer_params, name, minimum=0)
    s.register_int("net.ipv4.route.mtu_expires", ipv4, "ip_rt_mtu_expires", minimum=0)

    def pair_getter(attr: str) -> Any:
        return lambda: "{}\t{}".format(*getattr(ipv4, attr))

    def pair_setter(attr: str, name: str, lo_min: int, hi_max: int, ordered: bool) -> Any:
        def set_(text: str) -> None:
            from netstack.core.sysctl import invalid

            parts = text.split()
            if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
                raise invalid(name)
            a, b = int(parts[0]), int(parts[1])
            if a < lo_min or b > hi_max or (ordered and a > b):
                raise invalid(name)
            setattr(ipv4, attr, (a, b))

        return set_

    s.register(
        "net.ipv4.ip_local_port_range",
        pair_getter("ip_local_port_range"),
        pair_setter("ip_local_port_range", "net.ipv4.ip_local_port_range", 1, 65535, True),
    )
    s.register(
        "net.ipv4.ping_group_range",
        pair_getter("ping_group_range"),
        pair_setter("ping_group_range", "net.ipv4.ping_group_range", 0, 2147483647, False),
    )
