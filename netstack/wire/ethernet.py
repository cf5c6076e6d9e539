"""Ethernet II framing (IEEE 802.3 / DIX) and MAC address helpers.

Kernel: include/uapi/linux/if_ether.h, include/linux/etherdevice.h.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from netstack.sites import kernel

ETH_ALEN: Final = 6
ETH_HLEN: Final = 14
ETH_ZLEN: Final = 60  # minimum frame without FCS; shorter frames are padded
ETH_DATA_LEN: Final = 1500
ETH_FRAME_LEN: Final = 1514
ETH_MIN_MTU: Final = 68
ETH_MAX_MTU: Final = 0xFFFF

ETH_P_LOOP: Final = 0x0060
ETH_P_IP: Final = 0x0800
ETH_P_ARP: Final = 0x0806
ETH_P_TEB: Final = 0x6558  # transparent Ethernet bridging (gretap)
ETH_P_8021Q: Final = 0x8100
ETH_P_IPV6: Final = 0x86DD
ETH_P_8021AD: Final = 0x88A8
ETH_P_802_3_MIN: Final = 0x0600  # values below are 802.3 lengths, not types
ETH_P_802_3: Final = 0x0001
ETH_P_802_2: Final = 0x0004
ETH_P_ALL: Final = 0x0003

ETH_HDR: Final = struct.Struct("!6s6sH")

BROADCAST: Final = b"\xff" * 6
_HEXDIGITS: Final = frozenset("0123456789abcdefABCDEF")
ZERO_MAC: Final = b"\x00" * 6


class EthHdr(NamedTuple):
    """``struct ethhdr``: destination, source, EtherType (host order)."""

    h_dest: bytes
    h_source: bytes
    h_proto: int


def parse(buf: bytes | bytearray | memoryview, off: int = 0) -> EthHdr:
    """Parse the 14-byte header at *off* (caller checks the length)."""
    return EthHdr._make(ETH_HDR.unpack_from(buf, off))


def pack_into(buf: bytearray, off: int, hdr: EthHdr) -> None:
    """Write *hdr* at *off*."""
    ETH_HDR.pack_into(buf, off, *hdr)


def pack(hdr: EthHdr) -> bytes:
    """Return the header as bytes."""
    return ETH_HDR.pack(*hdr)


@kernel("etherdevice.h")
def is_multicast_ether_addr(addr: bytes) -> bool:
    """True for group addresses (broadcast included). Kernel: etherdevice.h."""
    return bool(addr[0] & 1)


def is_broadcast_ether_addr(addr: bytes) -> bool:
    """True for ff:ff:ff:ff:ff:ff."""
    return addr == BROADCAST


def is_zero_ether_addr(addr: bytes) -> bool:
    """True for 00:00:00:00:00:00."""
    return addr == ZERO_MAC


def is_valid_ether_addr(addr: bytes) -> bool:
    """Unicast and not all-zero (what ``ip link set address`` accepts)."""
    return len(addr) == ETH_ALEN and not addr[0] & 1 and addr != ZERO_MAC


def mac_ntoa(addr: bytes) -> str:
    """``b'\\x02\\x00...'`` → ``'02:00:...'`` (lower case, as iproute2 prints)."""
    return ":".join(f"{b:02x}" for b in addr)


def mac_aton(text: str) -> bytes:
    """Parse ``aa:bb:cc:dd:ee:ff`` (also ``-`` separated). Raises ``ValueError``."""
    parts = text.replace("-", ":").split(":")
    if len(parts) != ETH_ALEN or not all(
        1 <= len(p) <= 2 and all(c in _HEXDIGITS for c in p) for p in parts
    ):
        raise ValueError(f"invalid MAC address {text!r}")
    return bytes(int(p, 16) for p in parts)


@kernel("ip_eth_mc_map")
def ip_eth_mc_map(addr: int) -> bytes:
    """IPv4 multicast group → 01:00:5e MAC (RFC 1112). Kernel: ip_eth_mc_map()."""
    return bytes((0x01, 0x00, 0x5E, (addr >> 16) & 0x7F, (addr >> 8) & 0xFF, addr & 0xFF))
