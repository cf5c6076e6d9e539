"""GRE demultiplexer: IP protocol 47, by GRE version; and the GRE header parser.

Theory of operation: the ``gre`` module owns ``inet_protos[IPPROTO_GRE]``.
Its receive handler needs 12 bytes, reads the version (the low bits of the
flags word) and hands the packet to the handler registered for that version
— version 0 is ``ip_gre`` (GRE, gretap), version 1 would be PPTP (not
emulated) — or drops it. :func:`gre_parse_header` reads flags, checksum, key
and sequence number into a :class:`~netstack.tunnels.ip_tunnel.TnlPtkInfo`.

Kernel: net/ipv4/gre_demux.c (gre_rcv, gre_err, gre_add_protocol,
gre_parse_header).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import partial
from types import MethodType
from typing import TYPE_CHECKING, Any, Final

from netstack.core.net_generic import NetKey
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    DropReason,
    SkBuff,
)
from netstack.core.skbuff import kfree_skb as _kfree_skb
from netstack.ipv4 import ipv4_of
from netstack.ipv4.netns import InetProtocol
from netstack.sites import TIMED, kernel, spend
from netstack.tunnels.ip_tunnel import TnlPtkInfo
from netstack.wire.checksum import csum_fold, csum_partial
from netstack.wire.ethernet import ETH_P_IP
from netstack.wire.gre import (
    GRE_CSUM,
    GRE_HDR,
    GRE_HLEN,
    GRE_KEY,
    GRE_ROUTING,
    GRE_SEQ,
    GRE_VERSION,
    gre_calc_hlen,
)
from netstack.wire.ipv4 import IPPROTO_GRE

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["GREPROTO_CISCO", "GREPROTO_PPTP", "GreDemux", "gre_add_protocol", "gre_parse_header"]

GREPROTO_CISCO: Final = 0
GREPROTO_PPTP: Final = 1
GREPROTO_MAX: Final = 2
ETH_P_WCCP: Final = 0x883E
_I: Final = struct.Struct("!I")
# flags+version and protocol, bound once and typed (compiled code then tests the flags
# as an int, not through PyNumber_And on an object)
_GRE_HDR_UNPACK: Final[Callable[[bytearray, int], tuple[int, int]]] = GRE_HDR.unpack_from


class GreProtocol:
    """A handler for one GRE version (kernel: ``struct gre_protocol``)."""

    def __init__(
        self, handler: Callable[[SkBuff], int], err_handler: Callable[[SkBuff, int], Any] | None
    ) -> None:
        self.handler = handler
        self.err_handler = err_handler


class GreDemux:
    """``gre_proto[]`` of one Net."""

    def __init__(self) -> None:
        self.gre_proto: list[GreProtocol | None] = [None] * GREPROTO_MAX


GRE_DEMUX_NET: NetKey[GreDemux] = NetKey("gre_demux")


def gre_demux_of(net: Net) -> GreDemux:
    demux = GRE_DEMUX_NET.find(net)
    assert demux is not None, "the gre module is not loaded"
    return demux


@kernel("gre_add_protocol")
def gre_add_protocol(net: Net, proto: GreProtocol, version: int) -> None:
    """Kernel: gre_add_protocol()."""
    demux = gre_demux_of(net)
    if demux.gre_proto[version] is not None:
        raise ValueError(f"GRE version {version} already has a handler")
    demux.gre_proto[version] = proto


@kernel("gre_demux.c", "gre_rcv")
def gre_rcv(demux: GreDemux, skb: SkBuff) -> int:
    """``inet_protos[47]``: dispatch by GRE version.

    *demux* is bound when the protocol is registered: the kernel's ``gre_proto``
    is a global array, not looked up per packet.

    Kernel: gre_demux.c, gre_rcv().
    """
    if TIMED:
        spend("gre_rcv")
    if skb.tail - skb.data < 12:
        _kfree_skb(skb, DropReason.GRE_INVALID)
        return 1
    ver = skb.buf[skb.data + 1] & 0x7F
    proto = demux.gre_proto[ver] if ver < GREPROTO_MAX else None
    if proto is None:
        _kfree_skb(skb, DropReason.GRE_INVALID)
        return 1
    return proto.handler(skb)


@kernel("gre_demux.c", "gre_err")
def gre_err(demux: GreDemux, skb: SkBuff, info: int) -> None:
    """An ICMP error quotes one of our GRE packets. Kernel: gre_demux.c, gre_err()."""
    if skb.tail - skb.data < 4:
        return
    ver = skb.buf[skb.data + 1] & 0x7F
    proto = demux.gre_proto[ver] if ver < GREPROTO_MAX else None
    if proto is not None and proto.err_handler is not None:
        proto.err_handler(skb, info)


@kernel("gre_init")
def gre_init(net: Net) -> None:
    """The ``gre`` module's init: own IP protocol 47. Kernel: gre_init()."""
    demux = GRE_DEMUX_NET.set(net, GreDemux())
    ipv4 = ipv4_of(net)
    if IPPROTO_GRE in ipv4.inet_protos:
        raise ValueError("IP protocol 47 already registered")
    ipv4.inet_protos[IPPROTO_GRE] = InetProtocol(
        MethodType(gre_rcv, demux), partial(gre_err, demux)
    )


@kernel("net/ipv4/gre_demux.c", "gre_parse_header")
def gre_parse_header(
    skb: SkBuff, tpi: TnlPtkInfo, nhs: int = 0, *, verify_csum: bool = True
) -> int:
    """Parse the GRE header at ``skb.data + nhs``; return its length or -1 (drop).

    A C-flagged packet whose checksum does not verify sets ``tpi.csum_err``
    (netstack lets the tunnel count it; see docs/tunnels.md).

    Kernel: net/ipv4/gre_demux.c, gre_parse_header().
    """
    if TIMED:
        spend("gre_parse_header")
    buf = skb.buf
    off = skb.data + nhs
    tail = skb.tail
    if off + GRE_HLEN > tail:
        return -1
    flags, tpi.proto = _GRE_HDR_UNPACK(buf, off)
    if flags & (GRE_VERSION | GRE_ROUTING):
        return -1
    tpi.flags = options = flags & (GRE_CSUM | GRE_KEY | GRE_SEQ)
    hdr_len = gre_calc_hlen(options) if options else GRE_HLEN
    if off + hdr_len > tail:
        return -1
    p = off + GRE_HLEN
    if flags & GRE_CSUM and verify_csum:
        if skb.ip_summed == CHECKSUM_COMPLETE:
            ok = csum_fold(skb.csum) == 0
        elif skb.ip_summed in (CHECKSUM_UNNECESSARY, CHECKSUM_PARTIAL):
            ok = True  # skb_csum_unnecessary(): verified, or a GRO aggregate
        else:
            ok = csum_fold(csum_partial(buf, skb.data, skb.tail)) == 0
        tpi.csum_err = not ok
    if flags & GRE_CSUM:
        p += 4
    if flags & GRE_KEY:
        tpi.key = _I.unpack_from(buf, p)[0]
        p += 4
    else:
        tpi.key = 0
    if flags & GRE_SEQ:
        tpi.seq = _I.unpack_from(buf, p)[0]
        p += 4
    else:
        tpi.seq = 0
    # WCCP v1 and v2: the payload is IPv4; v2 has 4 more bytes of its own header
    if flags == 0 and tpi.proto == ETH_P_WCCP:
        if off + hdr_len >= skb.tail:
            return -1
        tpi.proto = ETH_P_IP
        if (buf[off + hdr_len] & 0xF0) != 0x40:
            hdr_len += 4
    tpi.hdr_len = hdr_len
    return hdr_len
