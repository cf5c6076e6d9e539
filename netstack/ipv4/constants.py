"""Routing constants: route types, scopes, protocols, rtable flags, address flags.

Kernel: include/uapi/linux/rtnetlink.h, include/uapi/linux/in_route.h,
include/uapi/linux/if_addr.h.
"""

from __future__ import annotations

from typing import Final

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

SCOPE_NAMES: Final = {0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere"}
ROUTE_SCOPE_NAMES: Final = {0: "universe", 200: "site", 253: "link", 254: "host", 255: "nowhere"}


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

# ifa_flags

# rtnetlink request flags

# flowi4 flags
FLOWI_FLAG_ANYSRC: Final = 0x01
FLOWI_FLAG_KNOWN_NH: Final = 0x02

IP_RT_MIN_PMTU: Final = 552
IP_MAX_MTU: Final = 0xFFFF
