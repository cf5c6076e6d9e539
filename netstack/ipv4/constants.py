"""Routing constants: route types, scopes, protocols, rtable flags, address flags.

Kernel: include/uapi/linux/rtnetlink.h, include/uapi/linux/in_route.h,
include/uapi/linux/if_addr.h.
"""

from __future__ import annotations

from typing import Final

RTN_UNSPEC: Final = 0
RTN_UNICAST: Final = 1
RTN_LOCAL: Final = 2
RTN_BROADCAST: Final = 3
RTN_ANYCAST: Final = 4
RTN_MULTICAST: Final = 5
RTN_BLACKHOLE: Final = 6
RTN_UNREACHABLE: Final = 7
RTN_PROHIBIT: Final = 8
RTN_THROW: Final = 9
RTN_NAT: Final = 10
RTN_XRESOLVE: Final = 11
RTN_NAMES: Final = (
    "unspec",
    "unicast",
    "local",
    "broadcast",
    "anycast",
    "multicast",
    "blackhole",
    "unreachable",
    "prohibit",
    "throw",
    "nat",
    "xresolve",
)

RT_SCOPE_UNIVERSE: Final = 0
RT_SCOPE_SITE: Final = 200
RT_SCOPE_LINK: Final = 253
RT_SCOPE_HOST: Final = 254
RT_SCOPE_NOWHERE: Final = 255
SCOPE_NAMES: Final = {0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere"}
ROUTE_SCOPE_NAMES: Final = {0: "universe", 200: "site", 253: "link", 254: "host", 255: "nowhere"}

RTPROT_UNSPEC: Final = 0
RTPROT_REDIRECT: Final = 1
RTPROT_KERNEL: Final = 2
RTPROT_BOOT: Final = 3
RTPROT_STATIC: Final = 4

RT_TABLE_UNSPEC: Final = 0
RT_TABLE_DEFAULT: Final = 253
RT_TABLE_MAIN: Final = 254
RT_TABLE_LOCAL: Final = 255
RT_TABLE_NAMES: Final = {253: "default", 254: "main", 255: "local"}

# rtable->rt_flags (RTCF_*)
RTCF_NOTIFY: Final = 0x00010000
RTCF_REDIRECTED: Final = 0x00040000
RTCF_DOREDIRECT: Final = 0x01000000
RTCF_DIRECTSRC: Final = 0x04000000
RTCF_DNAT: Final = 0x08000000
RTCF_BROADCAST: Final = 0x10000000
RTCF_MULTICAST: Final = 0x20000000
RTCF_LOCAL: Final = 0x80000000

# nexthop flags
RTNH_F_DEAD: Final = 1
RTNH_F_PERVASIVE: Final = 2
RTNH_F_ONLINK: Final = 4
RTNH_F_OFFLOAD: Final = 8
RTNH_F_LINKDOWN: Final = 16

# ifa_flags
IFA_F_SECONDARY: Final = 0x01
IFA_F_NODAD: Final = 0x02
IFA_F_OPTIMISTIC: Final = 0x04
IFA_F_DADFAILED: Final = 0x08
IFA_F_HOMEADDRESS: Final = 0x10
IFA_F_DEPRECATED: Final = 0x20
IFA_F_TENTATIVE: Final = 0x40
IFA_F_PERMANENT: Final = 0x80
IFA_F_MANAGETEMPADDR: Final = 0x100
IFA_F_NOPREFIXROUTE: Final = 0x200

# rtnetlink request flags
NLM_F_REPLACE: Final = 0x100
NLM_F_EXCL: Final = 0x200
NLM_F_CREATE: Final = 0x400
NLM_F_APPEND: Final = 0x800

# flowi4 flags
FLOWI_FLAG_ANYSRC: Final = 0x01
FLOWI_FLAG_KNOWN_NH: Final = 0x02

IP_RT_MIN_PMTU: Final = 552
IP_MAX_MTU: Final = 0xFFFF
