"""rtnetlink's uapi numbers both families use: route types, scopes, protocols, tables,
next-hop flags, request flags, address flags.

Theory of operation: these are the values of ``include/uapi/linux/rtnetlink.h``
(``RTN_*``, ``RT_SCOPE_*``, ``RTPROT_*``, ``RT_TABLE_*``, ``RTNH_F_*``),
``netlink.h`` (``NLM_F_*``) and ``if_addr.h`` (``IFA_F_*``): one numbering for
IPv4 and IPv6 (a ``struct rtmsg`` is the same for both), so one home below
both families. ``netstack.ipv4.constants`` and ``netstack.ipv6.constants``
re-export them next to what is their own; iproute2 keeps its own copy of the
uapi headers, as the real one does.

Kernel: include/uapi/linux/rtnetlink.h, include/uapi/linux/netlink.h,
include/uapi/linux/if_addr.h.
"""

from __future__ import annotations

from typing import Final

# route types (rtm_type)
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

# rtm_scope
RT_SCOPE_UNIVERSE: Final = 0
RT_SCOPE_SITE: Final = 200
RT_SCOPE_LINK: Final = 253
RT_SCOPE_HOST: Final = 254
RT_SCOPE_NOWHERE: Final = 255

# rtm_protocol
RTPROT_UNSPEC: Final = 0
RTPROT_REDIRECT: Final = 1
RTPROT_KERNEL: Final = 2
RTPROT_BOOT: Final = 3
RTPROT_STATIC: Final = 4
RTPROT_RA: Final = 9

# rtm_table
RT_TABLE_UNSPEC: Final = 0
RT_TABLE_DEFAULT: Final = 253
RT_TABLE_MAIN: Final = 254
RT_TABLE_LOCAL: Final = 255

# rtnh_flags
RTNH_F_DEAD: Final = 1
RTNH_F_PERVASIVE: Final = 2
RTNH_F_ONLINK: Final = 4
RTNH_F_OFFLOAD: Final = 8
RTNH_F_LINKDOWN: Final = 16

# nlmsg_flags of a NEW request
NLM_F_REPLACE: Final = 0x100
NLM_F_EXCL: Final = 0x200
NLM_F_CREATE: Final = 0x400
NLM_F_APPEND: Final = 0x800

# ifa_flags
IFA_F_SECONDARY: Final = 0x01
IFA_F_TEMPORARY: Final = IFA_F_SECONDARY
IFA_F_NODAD: Final = 0x02
IFA_F_OPTIMISTIC: Final = 0x04
IFA_F_DADFAILED: Final = 0x08
IFA_F_HOMEADDRESS: Final = 0x10
IFA_F_DEPRECATED: Final = 0x20
IFA_F_TENTATIVE: Final = 0x40
IFA_F_PERMANENT: Final = 0x80
IFA_F_MANAGETEMPADDR: Final = 0x100
IFA_F_NOPREFIXROUTE: Final = 0x200
IFA_F_MCAUTOJOIN: Final = 0x400
IFA_F_STABLE_PRIVACY: Final = 0x800
