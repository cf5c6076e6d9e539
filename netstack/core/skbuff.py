"""``SkBuff``: a packet in flight — one ``bytearray`` plus the kernel's offsets.

Theory of operation: ``buf[:data]`` is headroom, ``buf[data:tail]`` the packet,
``buf[tail:]`` tailroom. Header offsets (``mac_header``, ``network_header``,
``transport_header``) index ``buf`` directly; -1 means "not set". Everything is
linear (no page frags), so ``pskb_may_pull`` is a length check.

Ownership (DESIGN "an skb handed on is given away"): whoever is handed an skb
must consume it exactly once — pass it on, queue it, :func:`consume_skb` it
(delivered) or :func:`kfree_skb` it with a :class:`DropReason` (dropped). A
clone shares ``buf`` (kernel: ``dataref``); a writer calls
:meth:`SkBuff.make_writable` (kernel: ``skb_cow``), which copies only if
shared.

Hot fields live in ``__slots__`` and are set in ``__init__``; rarely used ones
(GSO, inner headers, ``mark``…) are class-level defaults that an instance only
stores when written, which keeps allocation at about half a microsecond.

Kernel: include/linux/skbuff.h, net/core/skbuff.c, include/net/dropreason-core.h.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Final

from netstack.errors import SkbPanic
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.dst import DstEntry
    from netstack.core.netdevice import NetDevice

__all__ = [
    "CHECKSUM_COMPLETE",
    "CHECKSUM_NONE",
    "CHECKSUM_PARTIAL",
    "CHECKSUM_UNNECESSARY",
    "LL_MAX_HEADER",
    "MAX_HEADER",
    "PACKET_BROADCAST",
    "PACKET_HOST",
    "PACKET_LOOPBACK",
    "PACKET_MULTICAST",
    "PACKET_OTHERHOST",
    "PACKET_OUTGOING",
    "DropReason",
    "SkBuff",
    "alloc_skb",
    "consume_skb",
    "kfree_skb",
    "kfree_skb_list",
]

# skb->pkt_type (include/uapi/linux/if_packet.h)
PACKET_HOST: Final = 0
PACKET_BROADCAST: Final = 1
PACKET_MULTICAST: Final = 2
PACKET_OTHERHOST: Final = 3
PACKET_OUTGOING: Final = 4
PACKET_LOOPBACK: Final = 5

# skb->ip_summed
CHECKSUM_NONE: Final = 0
CHECKSUM_UNNECESSARY: Final = 1
CHECKSUM_COMPLETE: Final = 2
CHECKSUM_PARTIAL: Final = 3

LL_MAX_HEADER: Final = 128  # CONFIG_WLAN/AX25-free kernels use 32; tunnels want more
MAX_HEADER: Final = LL_MAX_HEADER + 48

# SKB_TRUESIZE(X) = X + SKB_DATA_ALIGN(sizeof(sk_buff)) + SKB_DATA_ALIGN(sizeof(skb_shared_info))
SKB_STRUCT_SIZE: Final = 256
SKB_SHINFO_SIZE: Final = 320
SKB_TRUESIZE_OVERHEAD: Final = SKB_STRUCT_SIZE + SKB_SHINFO_SIZE


def SKB_TRUESIZE(x: int) -> int:
    """Memory charged for an skb with *x* bytes of data area."""
    return x + SKB_TRUESIZE_OVERHEAD


class DropReason(enum.IntEnum):
    """Why an skb was dropped (kernel: ``enum skb_drop_reason``, prefix removed)."""

    NOT_SPECIFIED = 2
    NO_SOCKET = 3
    PKT_TOO_SMALL = 4
    TCP_CSUM = 5
    SOCKET_FILTER = 6
    UDP_CSUM = 7
    NETFILTER_DROP = 8
    OTHERHOST = 9
    IP_CSUM = 10
    IP_INHDR = 11
    IP_RPFILTER = 12
    UNICAST_IN_L2_MULTICAST = 13
    XFRM_POLICY = 14
    IP_NOPROTO = 15
    SOCKET_RCVBUFF = 16
    PROTO_MEM = 17
    TCP_MD5NOTFOUND = 18
    SOCKET_BACKLOG = 25
    TCP_FLAGS = 26
    TCP_ZEROWINDOW = 27
    TCP_OLD_DATA = 28
    TCP_OVERWINDOW = 29
    TCP_OFOMERGE = 30
    TCP_RFC7323_PAWS = 31
    TCP_INVALID_SEQUENCE = 33
    TCP_RESET = 34
    TCP_INVALID_SYN = 35
    TCP_CLOSE = 36
    TCP_FASTOPEN = 37
    TCP_OLD_ACK = 38
    TCP_TOO_OLD_ACK = 39
    TCP_ACK_UNSENT_DATA = 40
    TCP_OFO_QUEUE_PRUNE = 41
    TCP_OFO_DROP = 42
    IP_OUTNOROUTES = 43
    BPF_CGROUP_EGRESS = 44
    IPV6DISABLED = 45
    NEIGH_CREATEFAIL = 46
    NEIGH_FAILED = 47
    NEIGH_QUEUEFULL = 48
    NEIGH_DEAD = 49
    TC_EGRESS = 50
    QDISC_DROP = 51
    CPU_BACKLOG = 52
    XDP = 53
    TC_INGRESS = 54
    UNHANDLED_PROTO = 55
    SKB_CSUM = 56
    SKB_GSO_SEG = 57
    SKB_UCOPY_FAULT = 58
    DEV_HDR = 59
    DEV_READY = 60
    FULL_RING = 61
    NOMEM = 62
    HDR_TRUNC = 63
    TAP_FILTER = 64
    TAP_TXFILTER = 65
    ICMP_CSUM = 66
    INVALID_PROTO = 67
    IP_INADDRERRORS = 68
    IP_INNOROUTES = 69
    PKT_TOO_BIG = 70
    DUP_FRAG = 71
    FRAG_REASM_TIMEOUT = 72
    FRAG_TOO_FAR = 73
    TCP_MINTTL = 74
    IPV6_BAD_EXTHDR = 75
    IPV6_NDISC_FRAG = 76
    IPV6_NDISC_HOP_LIMIT = 77
    IPV6_NDISC_BAD_CODE = 78
    IPV6_NDISC_BAD_OPTIONS = 79
    IPV6_NDISC_NS_OTHERHOST = 80
    QUEUE_PURGE = 81
    TC_COOKIE_ERROR = 82
    PACKET_SOCK_ERROR = 83
    TC_CHAIN_NOTFOUND = 84
    TC_RECLASSIFY_LOOP = 85
    VXLAN_INVALID_HDR = 86
    VXLAN_VNI_NOT_FOUND = 87
    VXLAN_ENTRY_EXISTS = 89
    IP_TUNNEL_ECN = 90
    TUNNEL_TXINFO = 91
    LOCAL_MAC = 92
    ARP_PVLAN_DISABLE = 93
    MAC_IS_MULTICAST = 94
    # reasons of newer kernels (6.8-6.12), numbered after the list above here
    TCP_OLD_SEQUENCE = 95  # the segment ends before the window (a duplicate)
    TCP_ABORT_ON_DATA = 96  # data after close(): LINUX_MIB_TCPABORTONDATA
    TCP_INVALID_END_SEQUENCE = 97  # 6.17: ends beyond the window, the receive queue not empty
    # netstack-only reasons, for mechanisms the kernel counts elsewhere
    DEV_DOWN = 200  # kernel: -ENETDOWN from __dev_queue_xmit
    XMIT_RECURSION = 201  # "Dead loop on virtual device"
    IP_TTL_EXPIRED = 202  # kernel counts it as IPSTATS_MIB_INHDRERRORS
    IP_FRAG_NEEDED = 203  # DF set and bigger than the path MTU (FRAGFAILS)
    ICMP_INVALID = 204  # malformed / unknown ICMP message (ICMP_MIB_INERRORS)
    ARP_INVALID = 205  # malformed ARP packet
    FRAG_OVERLAP = 206  # IPv4 fragments overlapped (RFC 5722-style, 4.19+)
    GRE_INVALID = 207  # GRE version/routing bits, or a truncated header (gre_parse_header)
    IP_TUNNEL_CSUM = 208  # tunnel checksum policy: rx_crc_errors
    IP_TUNNEL_SEQ = 209  # tunnel sequence policy: rx_fifo_errors (out of order)
    IP_TUNNEL_NO_MATCH = 210  # no tunnel for the packet (ICMP port unreachable)
    # the bridge and 802.1Q (kernel 6.13+ names; netstack numbers)
    MAC_INVALID_SOURCE = 220  # br_handle_frame: multicast or zero source MAC
    MAC_IEEE_MAC_CONTROL = 221  # 01:80:c2:00:00:01 (pause) frames are never bridged
    BRIDGE_INGRESS_STP_STATE = 222  # port blocking/listening/disabled
    VLAN_FILTER = 223  # br_allowed_ingress / egress: VLAN not on the port
    VLAN_INVALID = 224  # a truncated or malformed 802.1Q header (skb_vlan_untag)
    STP_INVALID = 225  # a BPDU that is not 802.1D (bad protocol id, LLC or length)
    VLAN_DEV_DOWN = 226  # vlan_do_receive: the VLAN device is down
    NO_TX_TARGET = 227  # vxlan_xmit: no FDB entry and no default entry (6.14+ name)


# 6.3+: heads of at most SKB_HEAD_ALIGN(MAX_TCP_HEADER) bytes come from their own
# slab, skbuff_small_head, of that object size (kmalloc_reserve); 576 on the x86-64
# 6.18 this was measured on (a tun-received 140-byte packet has truesize 832)
SKB_SMALL_HEAD_CACHE_SIZE: Final = 576


def _kmalloc_size(n: int) -> int:
    """The slab size kmalloc() would give for *n* bytes (ksize())."""
    if n > 192:
        return 1 << (n - 1).bit_length()
    if n <= 32:
        return 32
    if n <= 64:
        return 64
    return 96 if n <= 96 else 128 if n <= 128 else 192


@kernel("net/core/skbuff.c", "kmalloc_reserve")
def skb_head_obj_size(size: int) -> int:
    """The object an skb head of *size* bytes is allocated in (data and shared info).

    Kernel: net/core/skbuff.c, kmalloc_reserve(): the skbuff_small_head cache for
    small heads, else kmalloc's size class.
    """
    obj = ((size + 63) & ~63) + SKB_SHINFO_SIZE  # SKB_HEAD_ALIGN()
    if obj <= SKB_SMALL_HEAD_CACHE_SIZE:
        return SKB_SMALL_HEAD_CACHE_SIZE
    return _kmalloc_size(obj)


# len(buf) -> truesize, memoised: a data path allocates a handful of buffer sizes,
# and the kernel computes truesize once, in __alloc_skb, rather than per reader.
# A cache of a pure function (the same for every host), bounded: emptied when it
# holds _TRUESIZE_MEMO_MAX sizes, so no flood of odd lengths grows it.
_TRUESIZE_OF_BUFLEN: dict[int, int] = {}
_TRUESIZE_MEMO_MAX: Final = 1024
# The memo itself, for a hot path that reads skb->truesize of an skb it has just
# allocated (no explicit truesize): a dictionary read instead of a property's frame.
TRUESIZE_OF_BUFLEN: Final = _TRUESIZE_OF_BUFLEN


_new_skb: Final = object.__new__


@kernel("include/linux/skbuff.h")
class SkBuff:
    """A packet: ``buf`` with headroom and the kernel's offsets and fields.

    Kernel: include/linux/skbuff.h, struct sk_buff.
    """

    __slots__ = (
        "__dict__",
        "_dataref",
        "_freed",
        "_truesize",
        "buf",
        "cb",
        "csum_offset",
        "csum_start",
        "data",
        "destructor",
        "dev",
        "dst",
        "dst_noref",
        "dst_pending_confirm",
        "encapsulation",
        "gso_size",
        "ignore_df",
        "ip_summed",
        "mac_header",
        "network_header",
        "next",
        "pkt_type",
        "priority",
        "protocol",
        "queue_mapping",
        "rmem_charge",
        "sk",
        "skb_iif",
        "tail",
        "transport_header",
        "vlan_proto",
        "wmem_charge",
    )

    # Rare fields: class-level defaults, stored per instance only when written.
    csum: int = 0  # CHECKSUM_COMPLETE sum (partial sum, 0..0xFFFF)
    csum_level: int = 0
    hash: int = 0
    l4_hash: bool = False
    sw_hash: bool = False
    mark: int = 0
    tc_depth: int = 0  # loop guard of tc: netem's duplicate is never duplicated again
    tstamp: float = 0.0
    gso_segs: int = 0
    gso_type: int = 0
    inner_protocol: int = 0
    inner_mac_header: int = -1
    inner_network_header: int = -1
    inner_transport_header: int = -1
    local_df: bool = False
    xmit_cpu: int = -1  # timed mode: the CPU whose cache holds the skb since it was queued
    vlan_tci: int = 0  # the hardware-accelerated 802.1Q tag's TCI (PCP, DEI, VID)

    def __init__(self, buf: bytearray, data: int, tail: int) -> None:
        self.buf = buf
        self.data = data
        self.tail = tail
        self.dev: NetDevice | None = None
        self.sk: Any = None
        self.dst: DstEntry | None = None
        self.dst_noref = False
        self.next: SkBuff | None = None
        self.protocol = 0
        self.pkt_type = PACKET_HOST
        self.mac_header = -1
        self.network_header = -1
        self.transport_header = -1
        self.ip_summed = CHECKSUM_NONE
        self.csum_start = 0
        self.csum_offset = 0
        self.priority = 0
        self._freed = False
        # the data's users when cloned (a slot: every clone of a flood has one,
        # and as a rare field it gave each clone an instance dictionary)
        self._dataref: list[int] | None = None
        self.cb: Any = None  # scratch owned by the layer holding the skb (kernel: skb->cb)
        self.queue_mapping = 0
        self.skb_iif = 0
        self.gso_size = 0  # skb_shinfo(skb)->gso_size: MSS of a GSO skb, 0 if not GSO
        self.ignore_df = False
        self.dst_pending_confirm = False
        self.destructor: Any = None  # called once when the skb is freed (kernel: skb->destructor)
        self.wmem_charge = 0  # truesize charged to sk_wmem_alloc (sock_wfree returns it)
        self.rmem_charge = 0  # truesize charged to sk_rmem_alloc
        # Read on every transmit and receive (validate_xmit_skb, netif_skb_features,
        # __netif_receive_skb_core), so slots: a class-level default is read through
        # the generic attribute lookup, about 250 instructions more than a slot.
        self.vlan_proto = 0  # hardware-accelerated 802.1Q tag: TPID (0: no tag)
        self.encapsulation = False
        self._truesize = 0  # an explicit truesize (page-fragment skbs), 0: computed

    # -- lengths and room -------------------------------------------------
    def __len__(self) -> int:
        return self.tail - self.data

    @property
    def len(self) -> int:
        """``skb->len``: bytes from ``data`` to ``tail``."""
        return self.tail - self.data

    @kernel("skb_headroom")
    def headroom(self) -> int:
        """Kernel: skb_headroom()."""
        return self.data

    @kernel("skb_tailroom")
    def tailroom(self) -> int:
        """Kernel: skb_tailroom()."""
        return len(self.buf) - self.tail

    @property
    def truesize(self) -> int:
        """Memory charged to a socket for this skb (kernel: skb->truesize).

        As ``__alloc_skb`` computes it: the data area (64-byte aligned) plus
        ``skb_shared_info`` rounded up to a kmalloc size, plus ``sk_buff``;
        or what was set explicitly, for skbs the kernel would build from page
        fragments (TCP's send queue, GRO aggregates).
        """
        ts = self._truesize
        if ts:
            return ts
        n = len(self.buf)
        memo = _TRUESIZE_OF_BUFLEN.get(n)
        if memo is None:
            memo = skb_head_obj_size(n) + SKB_STRUCT_SIZE
            if len(_TRUESIZE_OF_BUFLEN) >= _TRUESIZE_MEMO_MAX:
                _TRUESIZE_OF_BUFLEN.clear()
            _TRUESIZE_OF_BUFLEN[n] = memo
        return memo

    @truesize.setter
    def truesize(self, value: int) -> None:
        self._truesize = value

    # -- moving data / tail ------------------------------------------------
    @kernel("skb_push")
    def push(self, n: int) -> int:
        """Claim *n* bytes of headroom; return the new ``data``. Kernel: skb_push()."""
        self.data -= n
        if self.data < 0:
            self.data += n
            raise SkbPanic(f"skb_push({n}) under headroom {self.data}")
        return self.data

    @kernel("skb_pull")
    def pull(self, n: int) -> int:
        """Consume *n* bytes from the front; return the new ``data``. Kernel: skb_pull()."""
        if n > self.tail - self.data:
            raise SkbPanic(f"skb_pull({n}) beyond len {self.tail - self.data}")
        self.data += n
        return self.data

    @kernel("skb_put")
    def put(self, n: int) -> int:
        """Extend the tail by *n* bytes, growing ``buf`` if needed; return the old tail.

        Kernel: skb_put() (which panics where this grows: buffers here are cheap).
        """
        off = self.tail
        self.tail += n
        if self.tail > len(self.buf):
            self.buf.extend(bytes(self.tail - len(self.buf)))
        return off

    @kernel("skb_reserve")
    def reserve(self, n: int) -> None:
        """Move an empty skb's data and tail forward by *n*. Kernel: skb_reserve()."""
        self.data += n
        self.tail += n

    @kernel("skb_trim", "pskb_trim_rcsum")
    def trim(self, length: int) -> None:
        """Cut the packet to *length* bytes. Kernel: skb_trim() / pskb_trim_rcsum()."""
        if length < self.tail - self.data:
            self.tail = self.data + length
            if self.ip_summed == CHECKSUM_COMPLETE:
                self.ip_summed = CHECKSUM_NONE

    @kernel("pskb_may_pull")
    def may_pull(self, n: int) -> bool:
        """True if *n* bytes are available (always linear). Kernel: pskb_may_pull()."""
        return self.tail - self.data >= n

    # -- header offsets ------------------------------------------------------
    @kernel("skb_reset_mac_header")
    def reset_mac_header(self) -> None:
        """Kernel: skb_reset_mac_header()."""
        self.mac_header = self.data

    @kernel("skb_reset_network_header")
    def reset_network_header(self) -> None:
        """Kernel: skb_reset_network_header()."""
        self.network_header = self.data

    @kernel("skb_reset_transport_header")
    def reset_transport_header(self) -> None:
        """Kernel: skb_reset_transport_header()."""
        self.transport_header = self.data

    @kernel("skb_mac_header_was_set")
    def mac_header_was_set(self) -> bool:
        """Kernel: skb_mac_header_was_set()."""
        return self.mac_header != -1

    @kernel("skb_network_header_len")
    def network_header_len(self) -> int:
        """Kernel: skb_network_header_len()."""
        return self.transport_header - self.network_header

    @kernel("skb_network_offset")
    def network_offset(self) -> int:
        """Kernel: skb_network_offset() (may be negative once pulled past)."""
        return self.network_header - self.data

    @kernel("skb_transport_offset")
    def transport_offset(self) -> int:
        """Kernel: skb_transport_offset()."""
        return self.transport_header - self.data

    @kernel("skb_is_gso")
    def is_gso(self) -> bool:
        """Kernel: skb_is_gso()."""
        return self.gso_size != 0

    # -- sharing, copying ----------------------------------------------------
    @property
    @kernel("skb_cloned")
    def cloned(self) -> bool:
        """True if another skb shares ``buf``. Kernel: skb_cloned()."""
        ref = self._dataref
        return ref is not None and ref[0] > 1

    def _copy_header(self, new: SkBuff) -> None:
        """Copy metadata to *new* (kernel: __copy_skb_header); buf/data/tail are not touched."""
        new.dev = self.dev
        new.sk = None
        dst = self.dst
        if dst is not None:
            # skb_dst_copy(): the copy holds its own reference, or none as the original
            # (the mark, a rare field, comes with the others below)
            if self.dst_noref:
                line = dst.line
                if line is not None:  # timed mode charges the hold as before the mark
                    line.write("dst_hold", atomic=True)
            else:
                dst.hold()
        new.dst = dst
        new.dst_noref = self.dst_noref
        new.protocol = self.protocol
        new.pkt_type = self.pkt_type
        new.mac_header = self.mac_header
        new.network_header = self.network_header
        new.transport_header = self.transport_header
        new.ip_summed = self.ip_summed
        new.csum_start = self.csum_start
        new.csum_offset = self.csum_offset
        new.priority = self.priority
        new.queue_mapping = self.queue_mapping
        new.gso_size = self.gso_size
        new.ignore_df = self.ignore_df
        new.vlan_proto = self.vlan_proto
        new.encapsulation = self.encapsulation
        new._truesize = self._truesize
        d = self.__dict__
        if d:  # the rare fields (cb, the holder's scratch, is a slot and not copied)
            new.__dict__.update(d)

    @kernel("skb_clone")
    def clone(self) -> SkBuff:
        """A second skb sharing this one's buffer. ``br_flood`` has this written out
        for every port of a flood but the last (keep the two in step; a test
        compares them). Kernel: skb_clone()."""
        if self._freed:
            raise SkbPanic("skb_clone() of a freed skb")
        ref = self._dataref
        if ref is None:
            ref = self._dataref = [1]
        ref[0] += 1
        # __skb_clone(): every slot set once, here (a bridge's flood clones per port;
        # SkBuff() and _copy_header() set most of them twice, in two more frames).
        # The fields and values are __init__'s and _copy_header's (a test checks).
        new = _new_skb(SkBuff)
        new.buf = self.buf
        new.data = self.data
        new.tail = self.tail
        new.dev = self.dev
        new.sk = None
        dst = self.dst
        if dst is not None:
            # skb_dst_copy(): the copy holds its own reference, or none as the original
            # (the mark, a rare field, comes with the others below)
            if self.dst_noref:
                line = dst.line
                if line is not None:  # timed mode charges the hold as before the mark
                    line.write("dst_hold", atomic=True)
            else:
                dst.hold()
        new.dst = dst
        new.dst_noref = self.dst_noref
        new.next = None
        new.protocol = self.protocol
        new.pkt_type = self.pkt_type
        new.mac_header = self.mac_header
        new.network_header = self.network_header
        new.transport_header = self.transport_header
        new.ip_summed = self.ip_summed
        new.csum_start = self.csum_start
        new.csum_offset = self.csum_offset
        new.priority = self.priority
        new._freed = False
        new._dataref = ref
        new.cb = None
        new.queue_mapping = self.queue_mapping
        new.skb_iif = 0
        new.gso_size = self.gso_size
        new.ignore_df = self.ignore_df
        new.vlan_proto = self.vlan_proto
        new.encapsulation = self.encapsulation
        new._truesize = self._truesize
        new.dst_pending_confirm = False
        new.destructor = None
        new.wmem_charge = 0
        new.rmem_charge = 0
        d = self.__dict__
        if d:  # the rare fields
            new.__dict__.update(d)
        return new

    @kernel("skb_copy", "skb_copy_expand")
    def copy(self, extra_headroom: int = 0) -> SkBuff:
        """A private copy of the buffer and metadata. Kernel: skb_copy() / skb_copy_expand()."""
        if extra_headroom:
            buf = bytearray(extra_headroom) + self.buf
        else:
            buf = bytearray(self.buf)
        new = SkBuff(buf, self.data + extra_headroom, self.tail + extra_headroom)
        self._copy_header(new)
        if extra_headroom:
            new._shift_headers(extra_headroom)
        new.sk = None
        return new

    def _shift_headers(self, delta: int) -> None:
        if self.mac_header >= 0:
            self.mac_header += delta
        if self.network_header >= 0:
            self.network_header += delta
        if self.transport_header >= 0:
            self.transport_header += delta
        if self.ip_summed == CHECKSUM_PARTIAL:
            self.csum_start += delta
        d = self.__dict__
        if d:
            for name in ("inner_mac_header", "inner_network_header", "inner_transport_header"):
                if d.get(name, -1) >= 0:
                    d[name] += delta

    def _unshare(self) -> None:
        ref = self._dataref
        if ref is not None:
            ref[0] -= 1
            self._dataref = None
        self.buf = bytearray(self.buf)

    @kernel("skb_cow", "skb_unclone")
    def make_writable(self) -> None:
        """Give this skb a private buffer if it shares one. Kernel: skb_cow() / skb_unclone()."""
        if self.cloned:
            self._unshare()

    @kernel("skb_cow_head")
    def cow_head(self, headroom: int) -> None:
        """Ensure *headroom* bytes of private headroom. Kernel: skb_cow_head().

        Reallocates once (with the shortfall rounded up to 32 bytes, like
        ``NET_SKB_PAD``) when the room is short or the buffer is shared.
        """
        short = headroom - self.data
        if short > 0:
            grow = (short + 31) & ~31
            if self.cloned:
                ref = self._dataref
                assert ref is not None
                ref[0] -= 1
                self._dataref = None
            self.buf = bytearray(grow) + self.buf
            self.data += grow
            self.tail += grow
            self._shift_headers(grow)
        elif self.cloned:
            self._unshare()

    def tobytes(self) -> bytes:
        """The packet's bytes, ``buf[data:tail]``."""
        return bytes(self.buf[self.data : self.tail])

    def __repr__(self) -> str:
        dev = self.dev.name if self.dev is not None else None
        return f"<SkBuff len={self.tail - self.data} proto={self.protocol:#06x} dev={dev}>"


@kernel("alloc_skb", "skb_reserve")
def alloc_skb(size: int, headroom: int = 0) -> SkBuff:
    """An empty skb with room for *size* bytes after *headroom*.

    Kernel: alloc_skb()+skb_reserve().
    """
    return SkBuff(bytearray(headroom + size), headroom, headroom)


_POISON: Final = bytearray()


def _net_of(skb: SkBuff) -> Any:
    dev = skb.dev
    if dev is not None:
        return dev.net
    sk = skb.sk
    if sk is not None:
        return getattr(sk, "net", None)
    return None


def _release(skb: SkBuff) -> None:
    if skb._freed:
        raise SkbPanic(f"double free of {skb!r}")
    ref = skb._dataref
    if ref is not None:
        ref[0] -= 1
    skb._freed = True
    dst = skb.dst
    if dst is not None:  # skb_dst_drop() (the freed skb keeps its mark: never read again)
        skb.dst = None
        if skb.dst_noref:  # refdst_drop(): no reference to put
            line = dst.line
            if line is not None:  # timed mode charges the release as before the mark
                line.write("dst_release", atomic=True)
        else:
            dst.release()
    destructor = skb.destructor
    if destructor is not None:
        destructor(skb)


@kernel("net/core/skbuff.c", "kfree_skb_reason")
def kfree_skb(skb: SkBuff, reason: DropReason = DropReason.NOT_SPECIFIED) -> None:
    """Drop *skb*, counting *reason* in its Net's drop statistics.

    Returns None so that receive handlers can ``return kfree_skb(...)``.

    Kernel: net/core/skbuff.c, kfree_skb_reason().
    """
    if TIMED:
        spend("kfree_skb_reason")
    net = _net_of(skb)
    _release(skb)
    if net is not None:
        net.note_drop(skb, reason)
    if net is not None and net.debug_skb:
        skb.buf = _POISON
        skb.data = skb.tail = -(1 << 30)


@kernel("kfree_skb_list_reason")
def kfree_skb_list(skb: SkBuff | None, reason: DropReason = DropReason.NOT_SPECIFIED) -> None:
    """Drop every skb of a ``next``-linked list. Kernel: kfree_skb_list_reason()."""
    if TIMED:
        spend("kfree_skb_list_reason")
    while skb is not None:
        nxt = skb.next
        skb.next = None
        kfree_skb(skb, reason)
        skb = nxt


@kernel("consume_skb", "dst_release")
def consume_skb(skb: SkBuff) -> None:
    """Free an skb that was used as intended (not a drop).

    ``dst_release`` (out of line in ``net/core/dst.c``) is written out as
    ``DstEntry.release`` (a frame less a delivered datagram; keep the two in
    step).

    Kernel: consume_skb() / dst_release().
    """
    if TIMED:
        spend("consume_skb")
    # _release(), inline: one Python frame less per delivered datagram
    if skb._freed:
        raise SkbPanic(f"double free of {skb!r}")
    ref = skb._dataref
    if ref is not None:
        ref[0] -= 1
    skb._freed = True
    dst = skb.dst
    if dst is not None:  # skb_dst_drop() (the freed skb keeps its mark: never read again)
        skb.dst = None
        if not skb.dst_noref:  # refdst_drop(): a reference to put
            dst.refcnt -= 1  # dst_release(), as DstEntry.release
            dst.releases += 1
        line = dst.line
        if line is not None:  # (timed mode charges a no-reference drop as a release)
            line.write("dst_release", atomic=True)
    destructor = skb.destructor
    if destructor is not None:
        destructor(skb)
    dev = skb.dev
    if dev is not None and dev.net.debug_skb:
        skb.buf = _POISON
        skb.data = skb.tail = -(1 << 30)
