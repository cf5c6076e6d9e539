"""IPv6 routing and address constants: route flags, priorities, scopes, tables.

Kernel: include/uapi/linux/ipv6_route.h, include/net/ip6_route.h,
include/net/addrconf.h, include/uapi/linux/rtnetlink.h, include/uapi/linux/if_addr.h.
"""

from __future__ import annotations

from typing import Final

from netstack.sites import kernel
from netstack.wire.rtnetlink import RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_SITE, RT_SCOPE_UNIVERSE

# rt6i_flags / fib6_flags (include/uapi/linux/route.h, ipv6_route.h)
RTF_UP: Final = 0x0001
RTF_GATEWAY: Final = 0x0002
RTF_HOST: Final = 0x0004
RTF_DYNAMIC: Final = 0x0010
RTF_MODIFIED: Final = 0x0020
RTF_REJECT: Final = 0x0200
RTF_DEFAULT: Final = 0x00010000
RTF_ALLONLINK: Final = 0x00020000
RTF_ADDRCONF: Final = 0x00040000
RTF_PREFIX_RT: Final = 0x00080000
RTF_ANYCAST: Final = 0x00100000
RTF_NONEXTHOP: Final = 0x00200000
RTF_EXPIRES: Final = 0x00400000
RTF_ROUTEINFO: Final = 0x00800000
RTF_CACHE: Final = 0x01000000
RTF_FLOW: Final = 0x02000000
RTF_POLICY: Final = 0x04000000
RTF_PREF_MASK: Final = 0x18000000
RTF_PCPU: Final = 0x40000000
RTF_LOCAL: Final = 0x80000000


@kernel("RTF_PREF")
def RTF_PREF(pref: int) -> int:
    """Kernel: RTF_PREF()."""
    return pref << 27


@kernel("IPV6_EXTRACT_PREF")
def IPV6_EXTRACT_PREF(flags: int) -> int:
    """Kernel: IPV6_EXTRACT_PREF()."""
    return (flags & RTF_PREF_MASK) >> 27


# Route priorities (include/net/ip6_route.h)
IP6_RT_PRIO_USER: Final = 1024
IP6_RT_PRIO_ADDRCONF: Final = 256

# Route types and tables, shared with IPv4's numbering (rtnetlink.h)


# ifa_flags (include/uapi/linux/if_addr.h)

# inet6_ifaddr->scope bits (include/net/addrconf.h: IFA_HOST etc. are IPV6_ADDR_* scope bits)
IFA_GLOBAL: Final = 0x0000
IFA_HOST: Final = 0x0010
IFA_LINK: Final = 0x0020
IFA_SITE: Final = 0x0040

INFINITY_LIFE_TIME: Final = 0xFFFFFFFF


@kernel("rt_scope")
def rt_scope(ifa_scope: int) -> int:
    """``inet6_ifaddr->scope`` → the ``RT_SCOPE_*`` that netlink reports.

    Kernel: rt_scope().
    """
    if ifa_scope & IFA_HOST:
        return RT_SCOPE_HOST
    if ifa_scope & IFA_LINK:
        return RT_SCOPE_LINK
    if ifa_scope & IFA_SITE:
        return RT_SCOPE_SITE
    return RT_SCOPE_UNIVERSE


# Address states (enum inet6_ifaddr state)
INET6_IFADDR_STATE_PREDAD: Final = 0
INET6_IFADDR_STATE_DAD: Final = 1
INET6_IFADDR_STATE_POSTDAD: Final = 2
INET6_IFADDR_STATE_ERRDAD: Final = 3
INET6_IFADDR_STATE_DEAD: Final = 4

# inet6_dev if_flags
IF_RA_OTHERCONF: Final = 0x80
IF_RA_MANAGED: Final = 0x40
IF_RA_RCVD: Final = 0x20
IF_RS_SENT: Final = 0x10
IF_READY: Final = 0x80000000

# addr_gen_mode
IN6_ADDR_GEN_MODE_EUI64: Final = 0
IN6_ADDR_GEN_MODE_NONE: Final = 1
IN6_ADDR_GEN_MODE_STABLE_PRIVACY: Final = 2
IN6_ADDR_GEN_MODE_RANDOM: Final = 3

# IPV6_PMTUDISC_* socket option values
IPV6_PMTUDISC_DONT: Final = 0
IPV6_PMTUDISC_WANT: Final = 1
IPV6_PMTUDISC_DO: Final = 2
IPV6_PMTUDISC_PROBE: Final = 3
IPV6_PMTUDISC_INTERFACE: Final = 4
IPV6_PMTUDISC_OMIT: Final = 5

# Timers and limits (include/net/addrconf.h, ndisc.h, ipv6.h)
MAX_RTR_SOLICITATIONS: Final = -1  # unlimited (RFC 7559 backoff), since 4.9
RTR_SOLICITATION_INTERVAL_S: Final = 4
RTR_SOLICITATION_MAX_INTERVAL_S: Final = 3600
MAX_RTR_SOLICITATION_DELAY_S: Final = 1
MIN_VALID_LIFETIME_S: Final = 2 * 3600
IPV6_FRAG_TIMEOUT_S: Final = 60
IPV6_MAX_ADDRESSES: Final = 16
ARPHRD_ETHER: Final = 1
ARPHRD_LOOPBACK: Final = 772
ARPHRD_TUNNEL: Final = 768
ARPHRD_TUNNEL6: Final = 769
ARPHRD_SIT: Final = 776
ARPHRD_IPGRE: Final = 778
ARPHRD_IP6GRE: Final = 823
ARPHRD_NONE: Final = 0xFFFE
ARPHRD_RAWIP: Final = 519
