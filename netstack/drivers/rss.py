"""Receive-side scaling: the Toeplitz hash, the indirection table, flow-hash fields.

Theory of operation: a multi-queue NIC spreads arriving packets over its RX
queues — each with its own ring, interrupt and NAPI instance, bound to its own
CPU — by hashing fields of the packet and looking the hash up in an
*indirection table* (RETA, 128 entries here as on most Intel/Mellanox parts):
``queue = indir[hash % 128]``. The hash is Microsoft's Toeplitz hash over the
input ``saddr ‖ daddr [‖ sport ‖ dport]`` with a 40-byte secret key; Linux
hands every driver the same boot-time random key (``netdev_rss_key_fill``), so
here each Net draws one, deterministically from its seed.

Which fields go in is configured per flow type (``ethtool -N DEV rx-flow-hash
tcp4 sdfn``): ``s``/``d`` the IP source/destination, ``f``/``n`` the first and
second 16 bits of the L4 header. Only TCP and UDP have L4 fields; everything
else that is IP — including GRE and IPIP/SIT-encapsulated traffic, whose
outer header carries protocol 47, 4 or 41 — hashes on the 2-tuple at most, so
all tunnelled packets between two hosts land on one queue and one CPU. That
is the situation of the "GRO for IPIP and SIT" seed. Fragments hash as IP
(ports are not in every fragment); non-IP frames (ARP) have no hash and go to
queue 0.

The hash is computed with per-byte lookup tables (``T[i][byte]`` = the XOR of
the key windows of the bits set in ``byte`` at input position ``i``), built
once per key, so hashing a 4-tuple is twelve lookups.

Kernel: include/linux/ethtool.h
(ethtool_rxfh_indir_default), net/ethtool/ioctl.c (netdev_rss_key_fill),
include/uapi/linux/ethtool.h (RXH_*, flow types); the hash itself is hardware
(Intel 82599 datasheet §7.1.2.8, "RSS Verification Suite").
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from netstack.core.net_generic import NetKey
from netstack.sites import kernel

if TYPE_CHECKING:
    from collections.abc import Sequence

    from netstack.core.net import Net

__all__ = [
    "ETH_RSS_HASH_TOP",
    "FLOW_TYPES",
    "RSS_INDIR_SIZE",
    "RSS_KEY_SIZE",
    "RXH_IP_DST",
    "RXH_IP_SRC",
    "RXH_L4_B_0_1",
    "RXH_L4_B_2_3",
    "RssConfig",
    "ethtool_rxfh_indir_default",
    "netdev_rss_key",
    "toeplitz",
    "toeplitz_tables",
]

RSS_KEY_SIZE: Final = 40  # NETDEV_RSS_KEY_LEN is 52; drivers use 40 (Toeplitz for IPv6 4-tuples)
RSS_INDIR_SIZE: Final = 128
ETH_RSS_HASH_TOP: Final = 1 << 0  # the Toeplitz function in ETH_SS_RSS_HASH_FUNCS

# include/uapi/linux/ethtool.h, RXH_* (fields of ethtool_rxnfc.data)
RXH_L2DA: Final = 1 << 1
RXH_VLAN: Final = 1 << 2
RXH_L3_PROTO: Final = 1 << 3
RXH_IP_SRC: Final = 1 << 4
RXH_IP_DST: Final = 1 << 5
RXH_L4_B_0_1: Final = 1 << 6
RXH_L4_B_2_3: Final = 1 << 7
RXH_DISCARD: Final = 1 << 31

# ethtool's flow-type names, the label it prints, and the fields a driver allows
FLOW_TYPES: Final = {
    "tcp4": "TCP over IPV4",
    "udp4": "UDP over IPV4",
    "tcp6": "TCP over IPV6",
    "udp6": "UDP over IPV6",
    "ip4": "IPV4",
    "ip6": "IPV6",
}
_L4_FLOW: Final = {(4, 6): "tcp4", (4, 17): "udp4", (6, 6): "tcp6", (6, 17): "udp6"}


@kernel("net/ethtool/ioctl.c", "netdev_rss_key_fill")
def netdev_rss_key(net: Net) -> bytes:
    """The Net's RSS key, drawn once (kernel: the boot-time ``netdev_rss_key``).

    A Random of its own (seeded from the Net's seed and name) so that drawing
    it does not move the Net's main RNG (IP IDs, ports) for other users.

    Kernel: net/ethtool/ioctl.c, netdev_rss_key_fill().
    """
    key = _RSS_KEY.find(net)
    if key is None:
        rng = random.Random(f"{net.seed}/{net.name}/netdev_rss_key")
        key = _RSS_KEY.set(net, bytes(rng.getrandbits(8) for _ in range(RSS_KEY_SIZE)))
    return key


_RSS_KEY: NetKey[bytes] = NetKey("netdev_rss_key")


def toeplitz_tables(key: bytes, nbytes: int) -> tuple[tuple[int, ...], ...]:
    """Per-input-byte lookup tables of the Toeplitz hash for *key*.

    ``T[i][v]`` is the hash contribution of byte value *v* at input position
    *i*: the XOR, over the bits set in *v*, of the 32-bit window of the key
    starting at that bit. Inputs may be up to ``len(key) - 4`` bytes.
    """
    if nbytes > len(key) - 4:
        raise ValueError(f"a {len(key)}-byte key hashes at most {len(key) - 4} bytes")
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    tables = []
    for i in range(nbytes):
        # windows of the 8 bits of input byte i, most significant bit first
        w = [(k >> (kbits - 32 - (i * 8 + j))) & 0xFFFFFFFF for j in range(8)]
        t = [0] * 256
        for v in range(1, 256):
            low = v & -v  # the lowest set bit: bit (7 - j) of the byte
            t[v] = t[v ^ low] ^ w[7 - (low.bit_length() - 1)]
        tables.append(tuple(t))
    return tuple(tables)


@kernel("tools/testing/selftests/net/toeplitz.c", "toeplitz")
def toeplitz(key: bytes, data: bytes | bytearray) -> int:
    """The Toeplitz hash of *data* under *key*, bit by bit (the reference form).

    Kernel: tools/testing/selftests/net/toeplitz.c, toeplitz().
    """
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    h = 0
    for i, byte in enumerate(data):
        for j in range(8):
            if byte & (0x80 >> j):
                h ^= (k >> (kbits - 32 - (i * 8 + j))) & 0xFFFFFFFF
    return h


@kernel("include/linux/ethtool.h", "ethtool_rxfh_indir_default")
def ethtool_rxfh_indir_default(index: int, n_rx_rings: int) -> int:
    """The default indirection: round robin over the rings.

    Kernel: include/linux/ethtool.h, ethtool_rxfh_indir_default().
    """
    return index % n_rx_rings


class RssConfig:
    """One device's RSS state: key, indirection table, fields per flow type.

    ``hash_frame(frame)`` returns ``(hash, l4)`` for an Ethernet frame:
    *hash* 0 means "no hash" (non-IP), *l4* says the ports were in it
    (``skb->l4_hash``).
    """

    def __init__(self, key: bytes, n_rings: int) -> None:
        self.key = key
        self.n_rings = n_rings
        self.indir: list[int] = [
            ethtool_rxfh_indir_default(i, n_rings) for i in range(RSS_INDIR_SIZE)
        ]
        self.indir_user_set = False  # netif_is_rxfh_configured()
        # the ixgbe defaults: TCP on the 4-tuple, UDP and other IP on the 2-tuple
        sd = RXH_IP_SRC | RXH_IP_DST
        sdfn = sd | RXH_L4_B_0_1 | RXH_L4_B_2_3
        self.fields: dict[str, int] = {
            "tcp4": sdfn,
            "udp4": sd,
            "tcp6": sdfn,
            "udp6": sd,
            "ip4": sd,
            "ip6": sd,
        }
        self._t4 = toeplitz_tables(key, 12)
        self._t6: tuple[tuple[int, ...], ...] | None = None  # built on the first IPv6 frame

    def set_rings(self, n_rings: int) -> None:
        """A new ring count: the default table follows it unless the user set one."""
        self.n_rings = n_rings
        if not self.indir_user_set:
            self.indir = [ethtool_rxfh_indir_default(i, n_rings) for i in range(RSS_INDIR_SIZE)]

    def set_key(self, key: bytes) -> None:
        self.key = key
        self._t4 = toeplitz_tables(key, 12)
        self._t6 = None

    def queue_of(self, h: int) -> int:
        """The RX queue of hash *h* (``indir[h % size]``; no hash → queue 0)."""
        return self.indir[h & (RSS_INDIR_SIZE - 1)] if h else 0

    def hash_frame(self, f: bytes | bytearray) -> tuple[int, bool]:
        """Hash an arriving Ethernet frame as the hardware does.

        The input is ``saddr ‖ daddr`` plus ``sport ‖ dport`` when the flow
        type's fields include the L4 bytes (the driver accepts only ``sd`` or
        ``sdfn``, so positions in the input never move).
        """
        if len(f) < 34:
            return 0, False
        et = (f[12] << 8) | f[13]
        if et == 0x0800:
            frag = ((f[20] & 0x3F) << 8) | f[21]  # MF or a fragment offset
            flow = None if frag else _L4_FLOW.get((4, f[23]))
            t = self._t4
            h = (
                t[0][f[26]] ^ t[1][f[27]] ^ t[2][f[28]] ^ t[3][f[29]]
                ^ t[4][f[30]] ^ t[5][f[31]] ^ t[6][f[32]] ^ t[7][f[33]]
            )  # fmt: skip
            if flow is None or not self.fields[flow] & RXH_L4_B_0_1:
                return h, False
            p = 14 + (f[14] & 0x0F) * 4
            if len(f) < p + 4:
                return h, False
            return h ^ t[8][f[p]] ^ t[9][f[p + 1]] ^ t[10][f[p + 2]] ^ t[11][f[p + 3]], True
        if et == 0x86DD and len(f) >= 54:
            t6 = self._t6
            if t6 is None:
                t6 = self._t6 = toeplitz_tables(self.key, 36)
            h = 0
            for i in range(32):  # saddr (bytes 22..37) then daddr (38..53)
                h ^= t6[i][f[22 + i]]
            flow = _L4_FLOW.get((6, f[20]))
            if flow is None or not self.fields[flow] & RXH_L4_B_0_1 or len(f) < 58:
                return h, False
            return h ^ t6[32][f[54]] ^ t6[33][f[55]] ^ t6[34][f[56]] ^ t6[35][f[57]], True
        return 0, False

    def spread(self) -> Sequence[int]:
        """How many indirection entries point at each ring."""
        out = [0] * self.n_rings
        for q in self.indir:
            if q < self.n_rings:
                out[q] += 1
        return out
