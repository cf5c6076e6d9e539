"""IPv4 output: building headers, choosing IDs, fragmenting, resolving the next hop.

Theory of operation::

    ip_make_skb (UDP, ping, ICMP) ─► ip_send_skb ─► ip_local_out: tot_len, checksum
      ─► dst.output = ip_output ─► ip_finish_output: bigger than the path MTU?
         ─► ip_fragment (DF set: ICMP frag-needed to the sender, dropped)
      ─► ip_finish_output2: nexthop = gateway or destination ─► neighbour
         (created on first use) ─► sock_confirm_neigh (MSG_CONFIRM) ─► neigh_output

IP IDs follow ``ip_select_ident_segs``: a connected socket uses its own
counter; a packet with DF that may not be fragmented gets 0; everything else
comes from the hashed per-destination generator, whose buckets start at
random values at boot (``ip_rt_init``) and jump by a random amount when idle
(kernel: ``ip_idents_reserve``).

Kernel: net/ipv4/ip_output.c, include/net/ip.h, net/ipv4/route.c (IDs).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import dev_loopback_xmit, dev_queue_xmit
from netstack.core.ethernet import LL_RESERVED_SPACE
from netstack.core.features import NETIF_F_GSO_MASK
from netstack.core.skbuff import CHECKSUM_PARTIAL, DropReason, SkBuff, consume_skb, kfree_skb
from netstack.core.sock import IP_PMTUDISC_DO, IP_PMTUDISC_OMIT, IP_PMTUDISC_PROBE, IP_PMTUDISC_WANT
from netstack.core.xmit import (
    netif_skb_features,
    skb_checksum_help,
    skb_gso_segment,
    skb_gso_validate_network_len,
)
from netstack.ipv4.constants import IP_MAX_MTU, RTCF_BROADCAST
from netstack.ipv4.route import ip_dst_mtu_maybe_forward
from netstack.neigh.neighbour import neigh_confirm, neigh_hh_output
from netstack.neigh.nud import NUD_CONNECTED
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import ip_fast_csum
from netstack.wire.ethernet import ETH_P_IP
from netstack.wire.icmp import ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED
from netstack.wire.ipv4 import IP_DF, IP_MF, IP_OFFSET, IPV4_HDR, IPV4_HLEN
from netstack.wire.rtnetlink import RTN_MULTICAST

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice
    from netstack.core.sock import Sock
    from netstack.cpu.cacheline import CacheLine
    from netstack.ipv4.netns import Ipv4
    from netstack.ipv4.route import Rtable

__all__ = [
    "ip_do_fragment",
    "ip_finish_output",
    "ip_finish_output2",
    "ip_fragment",
    "ip_local_out",
    "ip_make_skb",
    "ip_output",
    "ip_select_ident",
]

IP_IDENTS_SZ: Final = 2048
_HH: Final = struct.Struct("!HH")
_H: Final = struct.Struct("!H")
# ip_fast_csum()'s read of a header with options (netstack.wire.checksum): int.from_bytes
# bound once
_from_bytes: Final = int.from_bytes
# ip_local_out's read and write of a 20-byte header as its five 32-bit words, bound
# methods typed with what their format gives (compiled code calls them without a
# lookup by name and reads ints)
_IPH_WORDS: Final = struct.Struct("!5I")
_IPH_WORDS_AT: Final[Callable[[bytearray, int], tuple[int, int, int, int, int]]] = (
    _IPH_WORDS.unpack_from
)
_IPH_WORDS_PACK: Final[Callable[[bytearray, int, int, int, int, int, int], None]] = (
    _IPH_WORDS.pack_into
)
_I: Final = struct.Struct("!I")
# the destination address of an IPv4 header at offset 16, a bound method typed with what
# its format gives (compiled code calls it without a lookup by name and reads an int)
_DADDR_AT: Final[Callable[[bytearray, int], tuple[int]]] = _I.unpack_from
# neigh_hh_output()'s fixed 16-byte copy of a cached header (HH_DATA_MOD), from the
# front of hh_data with no slice made
_HH_BLOCK: Final = struct.Struct("16s").pack_into
# IPV4_HDR under a name assigned here: CPython 3.11 compiles ``imported_name.method(...)``
# as an attribute load that builds a bound method per call; this gets the specialised call.
_IPV4_HDR: Final = IPV4_HDR
# Zeros that ip_make_skb slices the headroom and headers of a new skb from (never
# written: a slice is a new bytearray)
_ZERO_HEAD_LEN: Final = 256
# dev->ifindex << 32, the device's half of an ARP table key (NeighTable.hash), per
# ifindex (shared by every namespace: a value of the ifindex alone)
_ARP_KEY_BASE: Final[dict[int, int]] = {}
# nud_state & NUD_CONNECTED for every state (one byte): a tuple read, where a bit
# operation is CPython 3.11's unspecialised BINARY_OP
_NUD_CONNECTED_STATE: Final = tuple(bool(state & NUD_CONNECTED) for state in range(256))
_ZERO_HEAD: Final = bytearray(_ZERO_HEAD_LEN)


@kernel("net/ipv4/route.c", "ip_rt_init")
def ip_idents_init(key: int, bucket: int) -> int:
    """The ID counter of *bucket* at boot: a random 32-bit value.

    ``ip_rt_init`` fills ``ip_idents`` with ``get_random_bytes``, so the first
    ID a host sends to a destination is unpredictable, not 0. Here a bucket's
    value is drawn the first time the bucket is used (the table is sparse: a
    host touches a few of its 2048 buckets), mixed from the hash key the Net's
    seeded generator gave and the bucket's index (splitmix64's finaliser): a
    lab's seed fixes them, and the Net's random stream (MAC addresses,
    ISNs…) is left as it was.

    Kernel: net/ipv4/route.c, ip_rt_init().
    """
    z = (key + (bucket + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & 0xFFFFFFFF


class IpIdent:
    """One bucket of the kernel's ``ip_idents`` and ``ip_tstamps``: its ID counter
    and the jiffy it was last used at."""

    __slots__ = ("bucket", "ident", "tstamp")

    def __init__(self, bucket: int, ident: int) -> None:
        self.bucket = bucket
        self.ident = ident
        self.tstamp = 0  # ip_tstamps is zeroed at boot (HASH_ZERO)


class IpIdents:
    """The hashed IP ID generator (kernel: ``ip_idents`` / ``ip_tstamps``)."""

    __slots__ = (
        "_ipv4",
        "buckets",
        "key",
        "last",
        "last_daddr",
        "last_protocol",
        "last_saddr",
        "lines",
    )

    def __init__(self, ipv4: Ipv4) -> None:
        self._ipv4 = ipv4
        self.key = ipv4.net.rng.getrandbits(64)
        # the kernel's two arrays of IP_IDENTS_SZ counters, as a sparse dict of the
        # buckets used, each holding its counter and its stamp (an absent bucket
        # still has its boot value, ip_idents_init, and a stamp of 0): a host
        # touches a few buckets, and 32 KB a host was a tenth of a lab's memory
        self.buckets: dict[int, IpIdent] = {}
        # the bucket of the last (daddr, saddr, protocol) asked for: the hash is a
        # function of the three and the key, so a stream to one destination (a
        # tunnel's outer header) reuses it without hashing or a dict read
        self.last: IpIdent | None = None
        self.last_daddr = 0
        self.last_saddr = 0
        self.last_protocol = 0
        # timed mode: the cache lines of the idents array (16 counters each),
        # which every CPU sending to the same destination updates atomically
        self.lines: dict[int, CacheLine] | None = {} if ipv4.net.cpus.model else None

    @kernel("__ip_select_ident", "ip_idents_reserve")
    def reserve(self, daddr: int, saddr: int, protocol: int, segs: int) -> int:
        """Kernel: __ip_select_ident() → ip_idents_reserve()."""
        if TIMED:
            spend("__ip_select_ident")
        b = self.last
        if (
            b is None
            or daddr != self.last_daddr
            or saddr != self.last_saddr
            or protocol != self.last_protocol
        ):
            bucket = hash((daddr, saddr, protocol, self.key)) & (IP_IDENTS_SZ - 1)
            b = self.buckets.get(bucket)
            if b is None:
                b = self.buckets[bucket] = IpIdent(bucket, ip_idents_init(self.key, bucket))
            self.last = b
            self.last_daddr = daddr
            self.last_saddr = saddr
            self.last_protocol = protocol
        lines = self.lines
        if lines is not None:
            line = lines.get(b.bucket >> 4)
            if line is None:
                line = self._ipv4.net.cacheline("ip_idents")
                assert line is not None
                lines[b.bucket >> 4] = line
            line.write("__ip_select_ident", atomic=True)
        now = self._ipv4.net.clock.jiffies
        old = b.tstamp
        delta = 0
        if old != now:
            b.tstamp = now
            span = now - old
            if span > 0:
                delta = self._ipv4.net.rng.randrange(span)
        new = (b.ident + segs + delta) & 0xFFFFFFFF
        b.ident = new
        return (new - segs) & 0xFFFF


@kernel("ip_select_ident_segs")
def ip_select_ident(
    ipv4: Ipv4, buf: bytearray, off: int, sk: Sock | None, ignore_df: bool, segs: int = 1
) -> None:
    """Write the IP ID of the header at *off*.

    Twin: netstack.ipv6.ip6_output.ipv6_select_ident.
    Kernel: ip_select_ident_segs().
    """
    if sk is not None and sk.inet_daddr:
        ident = sk.inet_id & 0xFFFF
        sk.inet_id = (sk.inet_id + segs) & 0xFFFF
    elif buf[off + 6] & 0x40 and not ignore_df:  # DF set
        ident = 0
    else:
        (daddr,) = struct.unpack_from("!I", buf, off + 16)
        (saddr,) = struct.unpack_from("!I", buf, off + 12)
        ident = ipv4.idents.reserve(daddr, saddr, buf[off + 9], segs)
    _H.pack_into(buf, off + 4, ident)


@kernel("ip_dont_fragment")
def ip_dont_fragment(sk: Sock | None, rt: Rtable) -> bool:
    """Kernel: ip_dont_fragment()."""
    if sk is None:
        return False
    return sk.pmtudisc == IP_PMTUDISC_DO or (
        sk.pmtudisc == IP_PMTUDISC_WANT and not (rt.rt_mtu_locked or rt.metric_mtu_locked)
    )


@kernel("ip_sk_ignore_df")
def ip_sk_ignore_df(sk: Sock | None) -> bool:
    """Kernel: ip_sk_ignore_df()."""
    if sk is None:
        return True
    return sk.pmtudisc < IP_PMTUDISC_DO or sk.pmtudisc == IP_PMTUDISC_OMIT


@kernel("net/ipv4/ip_output.c", "ip_make_skb", "__ip_make_skb")
def ip_make_skb(
    ipv4: Ipv4,
    sk: Sock | None,
    rt: Rtable,
    saddr: int,
    daddr: int,
    protocol: int,
    payload_len: int,
    *,
    mtu: int = 0,
    tos: int | None = None,
    ttl: int = 0,
    pmtudisc: int | None = None,
    ignore_df: bool | None = None,
    frag: bytes | bytearray | memoryview | None = None,
) -> SkBuff:
    """An skb holding an IPv4 header and room for *payload_len* transport bytes.

    The transport header starts at ``skb.transport_header``; the caller fills
    it. Headroom is ``LL_RESERVED_SPACE`` of the output device. *rt*'s
    reference passes to the skb. *frag* (``getfrag``'s ``from``: UDP's
    payload) is copied in at the end, after ``payload_len - len(frag)`` bytes
    left for the transport header, as ``__ip_append_data`` copies it with
    ``ip_generic_getfrag``.

    ``udp_sendmsg`` has this written out for a socket's datagram (keep the
    two in step).

    Twin: netstack.ipv6.ip6_output.ip6_make_skb.
    Kernel: net/ipv4/ip_output.c, ip_make_skb() / __ip_make_skb().
    """
    if TIMED:
        spend("ip_make_skb")
    dev = rt.dev
    assert dev is not None
    hh_len = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    total = IPV4_HLEN + payload_len
    if frag is None:
        buf = bytearray(hh_len + total)
    else:
        # __ip_append_data(): headroom and headers zeroed, then getfrag's copy, made
        # by one concatenation (a zeroed buffer and a slice assignment cost twice that)
        head = hh_len + total - len(frag)
        buf = (_ZERO_HEAD[:head] if head <= _ZERO_HEAD_LEN else bytearray(head)) + frag
    skb = SkBuff(buf, hh_len, hh_len + total)
    skb.network_header = hh_len
    skb.transport_header = hh_len + IPV4_HLEN
    skb.protocol = ETH_P_IP
    if sk is not None:
        disc = sk.pmtudisc if pmtudisc is None else pmtudisc
        if ignore_df is None:
            ignore_df = disc < IP_PMTUDISC_DO or disc == IP_PMTUDISC_OMIT
        if tos is None:
            tos = sk.tos
        if not ttl:
            if rt.rt_type == RTN_MULTICAST:
                ttl = sk.mc_ttl
            else:
                ttl = sk.uc_ttl if sk.uc_ttl >= 0 else ipv4.ip_default_ttl
        skb.priority = sk.sk_priority
        if sk.sk_mark:
            skb.mark = sk.sk_mark
    else:
        disc = pmtudisc or 0
        if ignore_df is None:
            ignore_df = True
        if tos is None:
            tos = 0
        if not ttl:
            ttl = ipv4.ip_default_ttl
    # DF when the user asked for PMTU discovery, or "want" it and the datagram fits
    df = 0
    if (
        disc == IP_PMTUDISC_DO
        or disc == IP_PMTUDISC_PROBE
        or (
            disc == IP_PMTUDISC_WANT
            and not (rt.rt_mtu_locked or rt.metric_mtu_locked)
            and total <= (mtu or rt.mtu())
        )
    ):
        df = IP_DF
    if ignore_df:
        skb.ignore_df = True
    # ip_select_ident_segs(): the ID is chosen from the addresses and the protocol
    # alone, so it is drawn first and the header written with it in one pack
    if sk is not None and sk.inet_daddr:
        ident = sk.inet_id
        sk.inet_id = (ident + 1) & 0xFFFF
    elif df and not ignore_df:
        ident = 0
    else:
        ident = ipv4.idents.reserve(daddr, saddr, protocol, 1)
    _IPV4_HDR.pack_into(
        skb.buf, hh_len, 0x45, tos, total, ident, df, ttl, protocol, 0, saddr, daddr
    )
    skb.dst = rt
    return skb


@kernel("net/ipv4/ip_output.c", "ip_local_out", "__ip_local_out", "iph_set_totlen", "ip_fast_csum")
def ip_local_out(ipv4: Ipv4, skb: SkBuff) -> int:
    """Finish the header of a locally generated packet and send it.

    ``udp_sendmsg`` has this written out for a datagram (keep the two in
    step).

    Twin: netstack.ipv6.ip6_output.ip6_local_out.
    Kernel: net/ipv4/ip_output.c, ip_local_out() / __ip_local_out() / iph_set_totlen() /
    ip_fast_csum().
    """
    if TIMED:
        spend("ip_local_out")
    buf = skb.buf
    nh = skb.network_header
    tot_len = skb.tail - nh
    if tot_len > IP_MAX_MTU:  # iph_set_totlen(): 0 for a BIG TCP packet (6.3+)
        tot_len = 0
    w0 = w1 = w2 = w3 = w4 = 0
    if skb.tail - nh >= IPV4_HLEN:
        w0, w1, w2, w3, w4 = _IPH_WORDS_AT(buf, nh)
    if w0 >> 24 == 0x45:
        # a 20-byte header, read and written as its five words: tot_len into the
        # first, and ip_send_check() and its ip_fast_csum(), static inlines
        # (include/net/ip.h, arch/x86/include/asm/checksum_64.h), inline as the
        # compiler inlines them (a frame less a datagram): the words summed with the
        # checksum field zeroed (2**32 is 1 modulo 0xFFFF: the header read as one
        # integer, as below, and the sum of its words are equal modulo 0xFFFF)
        w0 = (w0 & 0xFFFF0000) | tot_len
        w2 &= 0xFFFF0000
        if TIMED:
            spend("ip_fast_csum")
        n = w0 + w1 + w2 + w3 + w4
        s = n % 0xFFFF
        _IPH_WORDS_PACK(buf, nh, w0, w1, w2 | (0xFFFF - s if s or not n else 0), w3, w4)
    else:
        _H.pack_into(buf, nh + 2, tot_len)
        buf[nh + 10] = 0
        buf[nh + 11] = 0
        if TIMED:
            spend("ip_fast_csum")
        ihl = (buf[nh] & 0xF) * 4
        n = _from_bytes(buf[nh : nh + ihl], "big")
        s = n % 0xFFFF
        _H.pack_into(buf, nh + 10, 0xFFFF - s if s or not n else 0)  # -0 is stored as 0
    skb.protocol = ETH_P_IP
    ipv4.ip.OutRequests += 1
    # dst_output(): the route's output, read into a local and called (a method call on
    # an instance attribute is not specialised by CPython 3.11)
    output = skb.dst.output  # type: ignore[union-attr]
    rc: int = output(skb)
    return rc


@kernel(
    "net/ipv4/ip_output.c",
    "ip_output",
    "ip_finish_output",
    "__ip_finish_output",
    "ip_finish_output2",
    "include/net/neighbour.h",
    "neigh_output",
    "neigh_hh_output",
)
def ip_output(ipv4: Ipv4, skb: SkBuff) -> int:
    """``dst.output`` of unicast routes.

    ``ip_finish_output``, ``__ip_finish_output`` and ``ip_finish_output2``
    are static functions of ``ip_output.c`` the compiler inlines into this,
    their only caller on this path: they are written out here (two Python
    frames less a datagram), each with its own charge, and keep their own
    definitions for ``ip_do_fragment``; keep them in step. So is the
    common case of ``neigh_hh_output`` (a static inline of
    ``neighbour.h``; ``netstack.neigh.neighbour`` has the function).

    Twin: netstack.ipv6.ip6_output.ip6_output.
    Kernel: net/ipv4/ip_output.c, ip_output() / ip_finish_output() /
    __ip_finish_output() / ip_finish_output2(); include/net/neighbour.h,
    neigh_output() / neigh_hh_output().
    """
    if TIMED:
        spend("ip_output")
    # dst.output is ip_output for IPv4 routes (Rtable) alone, and a route has a device
    rt: Rtable = skb.dst  # type: ignore[assignment]
    dev: NetDevice
    ipv4.ip.OutTransmits += 1
    length = skb.tail - skb.data
    ipv4.ipext.OutOctets += length
    skb.dev = dev = rt.dev  # type: ignore[assignment]
    skb.protocol = ETH_P_IP
    # ip_finish_output() / __ip_finish_output(), as ip_finish_output below
    if TIMED:
        spend("ip_finish_output")
    if rt.rt_pmtu or rt.metric_mtu or rt.rt_mtu_locked or rt.metric_mtu_locked:
        mtu = ip_dst_mtu_maybe_forward(ipv4, rt, rt.rt_is_input)
    else:
        mtu = dev.mtu
        if mtu > IP_MAX_MTU:
            mtu = IP_MAX_MTU
    if length > mtu:
        if skb.gso_size:
            return ip_finish_output_gso(ipv4, skb, mtu)
        return ip_fragment(ipv4, skb, mtu)
    # ip_finish_output2(), as below
    if TIMED:
        spend("ip_finish_output2")
    if skb.data < ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16 and (
        dev.header_ops is not None
    ):  # LL_RESERVED_SPACE
        skb.cow_head(((dev.hard_header_len + dev.needed_headroom) & ~15) + 16)
    if dev.flags & 0x18:  # IFF_LOOPBACK | IFF_POINTOPOINT: one neighbour, key 0
        key = 0
    elif rt.rt_uses_gateway:
        key = rt.rt_gw4
    else:
        key = _DADDR_AT(skb.buf, skb.network_header + 16)[0]
    # __ipv4_neigh_lookup_noref(): the table's key (ifindex << 32) | key, as the sum of
    # the device's half, memoised per ifindex, and the address (a specialised int
    # addition instead of a shift and an or on ints above 2**30)
    ifindex = dev.ifindex
    try:
        base = _ARP_KEY_BASE[ifindex]
    except KeyError:
        base = _ARP_KEY_BASE[ifindex] = ifindex << 32
    arp = ipv4.arp_tbl
    n = arp.hash.get(base + key)
    if n is None:
        n = arp.create(key, dev)
        if n is None:
            kfree_skb(skb, DropReason.NEIGH_CREATEFAIL)
            return -22
    line = n.line
    if line is not None:  # timed mode: the lookup reads the entry's first line
        line.read("ip_finish_output2")
    if skb.dst_pending_confirm:  # sock_confirm_neigh()
        sk = skb.sk
        if sk is not None:
            sk.dst_pending_confirm = False
        neigh_confirm(n)
    # neigh_output() and neigh_hh_output(), static inlines of include/net/neighbour.h:
    # with the hh_fast_copy patch a cached header of at most 16 bytes goes in as one
    # 16-byte block (copied by a Struct, no slice made), else neigh_hh_output itself
    if _NUD_CONNECTED_STATE[n.nud_state]:  # nud_state & NUD_CONNECTED, read from a table
        hh = n.hh
        hh_len = hh.hh_len
        if hh_len:
            tbl = n.tbl
            data = skb.data
            if hh_len <= 16 and data >= 16 and tbl.hh_fast_copy:
                _HH_BLOCK(skb.buf, data - 16, hh.hh_data)
                tbl.hh_fast_copies += 1
                skb.data = data - hh_len
                return dev_queue_xmit(skb)
            return neigh_hh_output(n, skb)
    return n.output(n, skb)


@kernel("ip_mc_output")
def ip_mc_output(ipv4: Ipv4, skb: SkBuff) -> int:
    """Broadcast/multicast output: loop a copy back to this host. Kernel: ip_mc_output()."""
    rt: Any = skb.dst
    assert rt is not None
    skb.protocol = ETH_P_IP
    if rt.rt_flags & RTCF_BROADCAST:
        ipv4.ipext.OutBcastPkts += 1
        copy = skb.clone()
        copy.dst = rt.hold()
        dev_loopback_xmit(copy, rt.dev)
    return ip_output(ipv4, skb)


@kernel("net/ipv4/ip_output.c", "ip_finish_output", "__ip_finish_output")
def ip_finish_output(ipv4: Ipv4, skb: SkBuff) -> int:
    """Fragment if needed.

    ``ip_output`` has this written out (keep the two in step).

    Twin: netstack.ipv6.ip6_output.ip6_finish_output.
    Kernel: net/ipv4/ip_output.c, ip_finish_output() / __ip_finish_output().
    """
    if TIMED:
        spend("ip_finish_output")
    rt: Rtable = skb.dst  # type: ignore[assignment]  # dst.output of IPv4 routes alone
    # Kernel: static inlines ip_skb_dst_mtu and ip_dst_mtu_maybe_forward (include/net/ip.h),
    # folded. IPCB(skb)->flags & IPSKB_FORWARDED: ip_forward, the one caller that hands
    # ip_output an input route, marks it; here the input route the packet carries is
    # the mark. A route with no PMTU, no "mtu" metric and no lock gives the device's
    # MTU, forwarded or not.
    if rt.rt_pmtu or rt.metric_mtu or rt.rt_mtu_locked or rt.metric_mtu_locked:
        mtu = ip_dst_mtu_maybe_forward(ipv4, rt, rt.rt_is_input)
    else:
        dev: NetDevice = rt.dev  # type: ignore[assignment]  # a route has a device
        mtu = dev.mtu
        if mtu > IP_MAX_MTU:
            mtu = IP_MAX_MTU
    if skb.tail - skb.data > mtu:
        if skb.gso_size:
            return ip_finish_output_gso(ipv4, skb, mtu)
        return ip_fragment(ipv4, skb, mtu)
    return ip_finish_output2(ipv4, skb)


@kernel("net/ipv4/ip_output.c", "ip_finish_output_gso")
def ip_finish_output_gso(ipv4: Ipv4, skb: SkBuff, mtu: int) -> int:
    """A GSO skb longer than the MTU: pass it on if its segments fit, else cut it here.

    The common case is a GSO skb whose segments each fit the egress MTU
    (``skb_gso_validate_network_len``; an skb no longer than the MTU needs
    no test, so the callers ask only for a longer one). Otherwise — a GSO
    skb on a TSO-capable tunnel stacked over a device with a smaller MTU,
    e.g. a bridged gretap over a 1500-byte link — the kernel segments it in
    software with the GSO bits of the device's features masked off, frees
    the original and sends each segment through ``ip_fragment``: refused
    with Fragmentation Needed and ``FragFails`` when DF is set (and
    ``ignore_df`` is not), fragmented otherwise. Never a frame longer than
    the MTU on the wire.

    Kernel: net/ipv4/ip_output.c, ip_finish_output_gso().
    """
    if skb_gso_validate_network_len(skb, mtu):
        return ip_finish_output2(ipv4, skb)
    segs = skb_gso_segment(skb, netif_skb_features(skb) & ~NETIF_F_GSO_MASK)
    if segs is None:
        kfree_skb(skb, DropReason.NOMEM)
        return -12  # -ENOMEM
    if segs is not skb:
        consume_skb(skb)
    ret = 0
    while segs is not None:  # skb_list_walk_safe()
        nxt = segs.next
        segs.next = None  # skb_mark_not_on_list()
        err = ip_fragment(ipv4, segs, mtu)
        if err and ret == 0:
            ret = err
        segs = nxt
    return ret


@kernel("net/ipv4/ip_output.c", "ip_fragment")
def ip_fragment(ipv4: Ipv4, skb: SkBuff, mtu: int) -> int:
    """Refuse (DF) or fragment. Kernel: net/ipv4/ip_output.c, ip_fragment()."""
    if TIMED:
        spend("ip_fragment")
    buf = skb.buf
    nh = skb.network_header
    if buf[nh + 6] & 0x40 and not skb.ignore_df:
        ipv4.ip.FragFails += 1
        ipv4.icmp_send(skb, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu)
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return -90  # -EMSGSIZE
    return ip_do_fragment(ipv4, skb, mtu)


@kernel("ip_options_fragment")
def _options_fragment(buf: bytearray, off: int, optlen: int) -> None:
    """Replace options that are not copied into fragments by NOOPs.

    Kernel: ip_options_fragment().
    """
    i = off
    end = off + optlen
    while i < end:
        t = buf[i]
        if t == 0:
            return
        if t == 1:
            i += 1
            continue
        if i + 1 >= end:
            return
        olen = buf[i + 1]
        if olen < 2 or i + olen > end:
            return
        if not t & 0x80:
            for j in range(i, i + olen):
                buf[j] = 1
        i += olen


@kernel("net/ipv4/ip_output.c", "ip_do_fragment")
def ip_do_fragment(ipv4: Ipv4, skb: SkBuff, mtu: int) -> int:
    """Cut *skb* into fragments of at most *mtu* bytes and send each.

    Twin: netstack.ipv6.ip6_output.ip6_fragment.
    Kernel: net/ipv4/ip_output.c, ip_do_fragment() (the slow path).
    """
    if TIMED:
        spend("ip_do_fragment")
    if skb.ip_summed == CHECKSUM_PARTIAL and not skb_checksum_help(skb):
        kfree_skb(skb, DropReason.SKB_CSUM)
        ipv4.ip.FragFails += 1
        return -22
    buf = skb.buf
    nh = skb.network_header
    hlen = (buf[nh] & 0xF) * 4
    frag_field = (buf[nh + 6] << 8) | buf[nh + 7]
    base_offset = (frag_field & IP_OFFSET) << 3
    not_last = frag_field & IP_MF
    payload_start = nh + hlen
    left = skb.tail - payload_start
    room = mtu - hlen
    if room < 8:
        ipv4.ip.FragFails += 1
        kfree_skb(skb, DropReason.PKT_TOO_BIG)
        return -90
    dst = skb.dst
    assert dst is not None
    dev = dst.dev
    assert dev is not None
    hh_len = LL_RESERVED_SPACE(dev)
    header = bytearray(buf[nh : nh + hlen])
    ptr = payload_start
    offset = 0
    first = True
    err = 0
    while left > 0:
        length = min(left, room)
        if length < left:
            length &= ~7
        frag = SkBuff(bytearray(hh_len + hlen + length), hh_len, hh_len + hlen + length)
        fb = frag.buf
        fb[hh_len : hh_len + hlen] = header
        fb[hh_len + hlen : hh_len + hlen + length] = buf[ptr : ptr + length]
        frag.network_header = hh_len
        frag.transport_header = hh_len + hlen
        frag.protocol = skb.protocol
        frag.priority = skb.priority
        frag.dev = skb.dev
        frag.dst = dst.hold()
        field = ((base_offset + offset) >> 3) & IP_OFFSET
        left -= length
        if left > 0 or not_last:
            field |= IP_MF
        _H.pack_into(fb, hh_len + 2, hlen + length)  # tot_len (the ID stays the datagram's)
        _H.pack_into(fb, hh_len + 6, field)
        fb[hh_len + 10] = 0
        fb[hh_len + 11] = 0
        _H.pack_into(fb, hh_len + 10, ip_fast_csum(fb, hh_len, hlen))
        if first and hlen > IPV4_HLEN:
            _options_fragment(header, IPV4_HLEN, hlen - IPV4_HLEN)  # for the next ones
        first = False
        ptr += length
        offset += length
        ipv4.ip.FragCreates += 1
        rc = ip_finish_output2(ipv4, frag)
        if rc < 0 and not err:
            err = rc
    ipv4.ip.FragOKs += 1
    consume_skb(skb)
    return err


@kernel("net/ipv4/ip_output.c", "ip_finish_output2")
def ip_finish_output2(ipv4: Ipv4, skb: SkBuff) -> int:
    """Resolve the next hop and hand to the neighbour layer.

    ``ip_output`` has this written out (keep the two in step).

    Twin: netstack.ipv6.ip6_output.ip6_finish_output2.
    Kernel: net/ipv4/ip_output.c, ip_finish_output2().
    """
    if TIMED:
        spend("ip_finish_output2")
    rt: Rtable = skb.dst  # type: ignore[assignment]  # dst.output of IPv4 routes alone
    dev: NetDevice = rt.dev  # type: ignore[assignment]  # a route has a device
    hh_len = ((dev.hard_header_len + dev.needed_headroom) & ~15) + 16  # LL_RESERVED_SPACE
    if skb.data < hh_len and dev.header_ops is not None:
        skb.cow_head(hh_len)
    if dev.flags & 0x18:  # IFF_LOOPBACK | IFF_POINTOPOINT: one neighbour, key 0
        key = 0
    elif rt.rt_uses_gateway:
        key = rt.rt_gw4
    else:
        key = _DADDR_AT(skb.buf, skb.network_header + 16)[0]
    # __ipv4_neigh_lookup_noref(), its key as in ip_output
    ifindex = dev.ifindex
    try:
        base = _ARP_KEY_BASE[ifindex]
    except KeyError:
        base = _ARP_KEY_BASE[ifindex] = ifindex << 32
    arp = ipv4.arp_tbl
    n = arp.hash.get(base + key)
    if n is None:
        n = arp.create(key, dev)
        if n is None:
            kfree_skb(skb, DropReason.NEIGH_CREATEFAIL)
            return -22
    line = n.line
    if line is not None:  # timed mode: the lookup reads the entry's first line
        line.read("ip_finish_output2")
    if skb.dst_pending_confirm:  # sock_confirm_neigh()
        sk = skb.sk
        if sk is not None:
            sk.dst_pending_confirm = False
        neigh_confirm(n)
    # neigh_output(), a static inline of include/net/neighbour.h, inline here as the
    # compiler inlines it: the cached header of a connected neighbour, else n->output
    if _NUD_CONNECTED_STATE[n.nud_state] and n.hh.hh_len:
        return neigh_hh_output(n, skb)
    return n.output(n, skb)
