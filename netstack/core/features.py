"""``NETIF_F_*`` device feature bits and ``SKB_GSO_*`` types, by the kernel's numbers.

Bit positions are those of ``enum netdev_features`` (include/linux/
netdev_features.h, 3.3 – 6.10). Bits 0–16 are the same as the 2.6.3x
``#define`` values (``NETIF_F_LLTX`` = 0x1000, ``NETIF_F_GRO`` = 0x4000), so the
legacy ``/sys/class/net/DEV/features`` word of a tunnel can be printed from the
same bits. The invariant ``NETIF_F_<gso> == SKB_GSO_<type> << NETIF_F_GSO_SHIFT``
holds, so :func:`net_gso_ok` is a mask test.

Kernel: include/linux/netdev_features.h, include/linux/skbuff.h (SKB_GSO_*),
net/ethtool/common.c (the feature names ethtool prints).
"""

from __future__ import annotations

from typing import Final

NETIF_F_SG: Final = 1 << 0
NETIF_F_IP_CSUM: Final = 1 << 1
NETIF_F_NO_CSUM_LEGACY: Final = 1 << 2  # 2.6.3x NETIF_F_NO_CSUM; unused since 3.2
NETIF_F_HW_CSUM: Final = 1 << 3
NETIF_F_IPV6_CSUM: Final = 1 << 4
NETIF_F_HIGHDMA: Final = 1 << 5
NETIF_F_FRAGLIST: Final = 1 << 6
NETIF_F_HW_VLAN_CTAG_TX: Final = 1 << 7
NETIF_F_HW_VLAN_CTAG_RX: Final = 1 << 8
NETIF_F_HW_VLAN_CTAG_FILTER: Final = 1 << 9
NETIF_F_VLAN_CHALLENGED: Final = 1 << 10
NETIF_F_GSO: Final = 1 << 11
NETIF_F_LLTX: Final = 1 << 12
NETIF_F_NETNS_LOCAL: Final = 1 << 13
NETIF_F_GRO: Final = 1 << 14
NETIF_F_LRO: Final = 1 << 15

NETIF_F_GSO_SHIFT: Final = 16
NETIF_F_TSO: Final = 1 << 16
NETIF_F_GSO_ROBUST: Final = 1 << 17
NETIF_F_TSO_ECN: Final = 1 << 18
NETIF_F_TSO_MANGLEID: Final = 1 << 19
NETIF_F_TSO6: Final = 1 << 20
NETIF_F_FSO: Final = 1 << 21
NETIF_F_GSO_GRE: Final = 1 << 22
NETIF_F_GSO_GRE_CSUM: Final = 1 << 23
NETIF_F_GSO_IPXIP4: Final = 1 << 24
NETIF_F_GSO_IPXIP6: Final = 1 << 25
NETIF_F_GSO_UDP_TUNNEL: Final = 1 << 26
NETIF_F_GSO_UDP_TUNNEL_CSUM: Final = 1 << 27
NETIF_F_GSO_PARTIAL: Final = 1 << 28
NETIF_F_GSO_TUNNEL_REMCSUM: Final = 1 << 29
NETIF_F_GSO_SCTP: Final = 1 << 30
NETIF_F_GSO_ESP: Final = 1 << 31
NETIF_F_GSO_UDP: Final = 1 << 32
NETIF_F_GSO_UDP_L4: Final = 1 << 33
NETIF_F_GSO_FRAGLIST: Final = 1 << 34
NETIF_F_FCOE_CRC: Final = 1 << 35
NETIF_F_SCTP_CRC: Final = 1 << 36
NETIF_F_FCOE_MTU: Final = 1 << 37
NETIF_F_NTUPLE: Final = 1 << 38
NETIF_F_RXHASH: Final = 1 << 39
NETIF_F_RXCSUM: Final = 1 << 40
NETIF_F_NOCACHE_COPY: Final = 1 << 41
NETIF_F_LOOPBACK: Final = 1 << 42
NETIF_F_RXFCS: Final = 1 << 43
NETIF_F_RXALL: Final = 1 << 44
NETIF_F_HW_VLAN_STAG_TX: Final = 1 << 45
NETIF_F_HW_VLAN_STAG_RX: Final = 1 << 46
NETIF_F_HW_VLAN_STAG_FILTER: Final = 1 << 47
NETIF_F_GRO_FRAGLIST: Final = 1 << 57
NETIF_F_GRO_UDP_FWD: Final = 1 << 59

# SKB_GSO_* (modern numbering; NETIF_F_TSO == SKB_GSO_TCPV4 << 16 and so on)
SKB_GSO_TCPV4: Final = 1 << 0
SKB_GSO_DODGY: Final = 1 << 1
SKB_GSO_TCP_ECN: Final = 1 << 2
SKB_GSO_TCP_FIXEDID: Final = 1 << 3
SKB_GSO_TCPV6: Final = 1 << 4
SKB_GSO_FCOE: Final = 1 << 5
SKB_GSO_GRE: Final = 1 << 6
SKB_GSO_GRE_CSUM: Final = 1 << 7
SKB_GSO_IPXIP4: Final = 1 << 8
SKB_GSO_IPXIP6: Final = 1 << 9
SKB_GSO_UDP_TUNNEL: Final = 1 << 10
SKB_GSO_UDP_TUNNEL_CSUM: Final = 1 << 11
SKB_GSO_PARTIAL: Final = 1 << 12
SKB_GSO_TUNNEL_REMCSUM: Final = 1 << 13
SKB_GSO_SCTP: Final = 1 << 14
SKB_GSO_ESP: Final = 1 << 15
SKB_GSO_UDP: Final = 1 << 16
SKB_GSO_UDP_L4: Final = 1 << 17
SKB_GSO_FRAGLIST: Final = 1 << 18

# Composite masks
NETIF_F_CSUM_MASK: Final = NETIF_F_IP_CSUM | NETIF_F_IPV6_CSUM | NETIF_F_HW_CSUM
NETIF_F_ALL_TSO: Final = NETIF_F_TSO | NETIF_F_TSO6 | NETIF_F_TSO_ECN | NETIF_F_TSO_MANGLEID
NETIF_F_GSO_SOFTWARE: Final = (
    NETIF_F_ALL_TSO | NETIF_F_GSO_SCTP | NETIF_F_GSO_UDP_L4 | NETIF_F_GSO_FRAGLIST
)
NETIF_F_GSO_ENCAP_ALL: Final = (
    NETIF_F_GSO_GRE
    | NETIF_F_GSO_GRE_CSUM
    | NETIF_F_GSO_IPXIP4
    | NETIF_F_GSO_IPXIP6
    | NETIF_F_GSO_UDP_TUNNEL
    | NETIF_F_GSO_UDP_TUNNEL_CSUM
)
NETIF_F_SOFT_FEATURES: Final = NETIF_F_GSO | NETIF_F_GRO
NETIF_F_SOFT_FEATURES_OFF: Final = NETIF_F_GRO_FRAGLIST | NETIF_F_GRO_UDP_FWD
NETIF_F_NEVER_CHANGE: Final = NETIF_F_VLAN_CHALLENGED | NETIF_F_LLTX | NETIF_F_NETNS_LOCAL
NETIF_F_GSO_MASK: Final = ((1 << 35) - 1) & ~((1 << NETIF_F_GSO_SHIFT) - 1)

# ethtool's names for the bits (net/ethtool/common.c, netdev_features_strings)
FEATURE_NAMES: Final[dict[int, str]] = {
    NETIF_F_SG: "tx-scatter-gather",
    NETIF_F_IP_CSUM: "tx-checksum-ipv4",
    NETIF_F_HW_CSUM: "tx-checksum-ip-generic",
    NETIF_F_IPV6_CSUM: "tx-checksum-ipv6",
    NETIF_F_HIGHDMA: "highdma",
    NETIF_F_FRAGLIST: "tx-scatter-gather-fraglist",
    NETIF_F_HW_VLAN_CTAG_TX: "tx-vlan-hw-insert",
    NETIF_F_HW_VLAN_CTAG_RX: "rx-vlan-hw-parse",
    NETIF_F_HW_VLAN_CTAG_FILTER: "rx-vlan-filter",
    NETIF_F_VLAN_CHALLENGED: "vlan-challenged",
    NETIF_F_GSO: "tx-generic-segmentation",
    NETIF_F_LLTX: "tx-lockless",
    NETIF_F_NETNS_LOCAL: "netns-local",
    NETIF_F_GRO: "rx-gro",
    NETIF_F_LRO: "rx-lro",
    NETIF_F_TSO: "tx-tcp-segmentation",
    NETIF_F_GSO_ROBUST: "tx-gso-robust",
    NETIF_F_TSO_ECN: "tx-tcp-ecn-segmentation",
    NETIF_F_TSO_MANGLEID: "tx-tcp-mangleid-segmentation",
    NETIF_F_TSO6: "tx-tcp6-segmentation",
    NETIF_F_FSO: "tx-fcoe-segmentation",
    NETIF_F_GSO_GRE: "tx-gre-segmentation",
    NETIF_F_GSO_GRE_CSUM: "tx-gre-csum-segmentation",
    NETIF_F_GSO_IPXIP4: "tx-ipxip4-segmentation",
    NETIF_F_GSO_IPXIP6: "tx-ipxip6-segmentation",
    NETIF_F_GSO_UDP_TUNNEL: "tx-udp_tnl-segmentation",
    NETIF_F_GSO_UDP_TUNNEL_CSUM: "tx-udp_tnl-csum-segmentation",
    NETIF_F_GSO_PARTIAL: "tx-gso-partial",
    NETIF_F_GSO_TUNNEL_REMCSUM: "tx-tunnel-remcsum-segmentation",
    NETIF_F_GSO_SCTP: "tx-sctp-segmentation",
    NETIF_F_GSO_ESP: "tx-esp-segmentation",
    NETIF_F_GSO_UDP: "tx-udp-segmentation",
    NETIF_F_GSO_UDP_L4: "tx-udp-segmentation",
    NETIF_F_GSO_FRAGLIST: "tx-gso-list",
    NETIF_F_FCOE_CRC: "tx-checksum-fcoe-crc",
    NETIF_F_SCTP_CRC: "tx-checksum-sctp",
    NETIF_F_FCOE_MTU: "fcoe-mtu",
    NETIF_F_NTUPLE: "rx-ntuple-filter",
    NETIF_F_RXHASH: "rx-hashing",
    NETIF_F_RXCSUM: "rx-checksum",
    NETIF_F_NOCACHE_COPY: "tx-nocache-copy",
    NETIF_F_LOOPBACK: "loopback",
    NETIF_F_RXFCS: "rx-fcs",
    NETIF_F_RXALL: "rx-all",
    NETIF_F_HW_VLAN_STAG_TX: "tx-vlan-stag-hw-insert",
    NETIF_F_HW_VLAN_STAG_RX: "rx-vlan-stag-hw-parse",
    NETIF_F_HW_VLAN_STAG_FILTER: "rx-vlan-stag-filter",
}


def net_gso_ok(features: int, gso_type: int) -> bool:
    """True if *features* can segment every GSO type bit in *gso_type*. Kernel: net_gso_ok()."""
    feature = (gso_type << NETIF_F_GSO_SHIFT) & NETIF_F_GSO_MASK
    return (features & feature) == feature


def vlan_hw_offload_capable(features: int, proto: int) -> bool:
    """True if the device inserts a *proto* tag itself. Kernel: vlan_hw_offload_capable()."""
    if proto == 0x8100:
        return bool(features & NETIF_F_HW_VLAN_CTAG_TX)
    if proto == 0x88A8:
        return bool(features & NETIF_F_HW_VLAN_STAG_TX)
    return False


def can_checksum_protocol(features: int, protocol: int) -> bool:
    """True if the device can fill a checksum for an L3 *protocol* (EtherType).

    Kernel: include/linux/netdevice.h, can_checksum_protocol().
    """
    if features & NETIF_F_HW_CSUM:
        return True
    if protocol == 0x0800:
        return bool(features & NETIF_F_IP_CSUM)
    if protocol == 0x86DD:
        return bool(features & NETIF_F_IPV6_CSUM)
    return False


def legacy_features_word(features: int) -> int:
    """The 2.6.3x ``features`` word as ``/sys/class/net/DEV/features`` printed it.

    Bits 0–16 are the same in both numberings; higher legacy bits (UFO 17,
    GSO_ROBUST 18, TSO_ECN 19, TSO6 20, FSO 21) are mapped from their modern
    positions.
    """
    word = features & 0x1FFFF
    if features & NETIF_F_GSO_ROBUST:
        word |= 1 << 18
    if features & NETIF_F_TSO_ECN:
        word |= 1 << 19
    if features & NETIF_F_TSO6:
        word |= 1 << 20
    if features & NETIF_F_FSO:
        word |= 1 << 21
    if features & (NETIF_F_GSO_UDP | NETIF_F_GSO_UDP_L4):
        word |= 1 << 17
    return word
