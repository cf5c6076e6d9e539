"""An emulated Ethernet NIC pair joined by a cable with a rate and a delay.

Theory of operation: each end is a real-device driver. ``ndo_start_xmit``
posts the skb on a TX ring (256 descriptors): the frame starts serialising as
soon as the wire is free (``len + 24`` bytes of preamble, FCS and
inter-frame gap at ``rate`` bit/s; frames shorter than 60 bytes are padded),
the skb is held until its TX completion — an interrupt that fires
``tx_usecs`` (50 µs) after the first frame finished and completes every frame
done by then, as coalescing NICs do — and Byte Queue Limits see every byte
(``netdev_tx_sent_queue`` / ``netdev_tx_completed_queue``). A full ring stops
the queue; completions wake it when a quarter of the ring is free. So a NIC
has a default qdisc (pfifo_fast), and a link slower than the sender builds a
queue there, as on real hardware.

One Trio task per end (the "wire") sleeps until the next TX completion or
arrival at the far end, in virtual time, and handles every event due in one
batch. Arriving frames are copied into a fresh skb at the receiver (DMA into
its own buffer, ``NET_SKB_PAD`` headroom) on an RX ring (256 descriptors;
overflow counts ``rx_missed_errors``), and the receiver's NAPI poll hands them
to the stack.

Offloads: the hardware fills CHECKSUM_PARTIAL checksums on the way out, and
on receive reports CHECKSUM_UNNECESSARY (verified), CHECKSUM_COMPLETE (the
ones'-complement sum of the frame after the Ethernet header) or
CHECKSUM_NONE, as configured by ``rx_csum``. Large (TSO) skbs are cut into
MSS-sized frames by the same segmentation code the stack's GSO uses.

Kernel: modelled on drivers/net/ethernet/intel/e1000e (ring, BQL, wake
threshold) with the checksum behaviour of modern NICs.
"""

from __future__ import annotations

import collections
import errno
import struct
from typing import TYPE_CHECKING, Final, Literal, Protocol

import trio

from netstack.core.dev import (
    napi_gro_receive,
    netif_carrier_off,
    netif_carrier_on,
    register_netdevice,
)
from netstack.core.ethernet import eth_type_trans, ether_setup
from netstack.core.features import (
    NETIF_F_GRO,
    NETIF_F_HIGHDMA,
    NETIF_F_IP_CSUM,
    NETIF_F_IPV6_CSUM,
    NETIF_F_RXCSUM,
    NETIF_F_RXHASH,
    NETIF_F_SG,
    NETIF_F_TSO,
    NETIF_F_TSO6,
)
from netstack.core.hrtimer import HrTimer, ktime_get_ns
from netstack.core.napi import Napi
from netstack.core.netdevice import (
    IFF_UP,
    NETDEV_TX_BUSY,
    NETDEV_TX_OK,
    EthtoolChannels,
    EthtoolOps,
    NetDevice,
    NetDeviceOps,
    netdev_tx_completed_queue,
    netdev_tx_reset_queue,
    netdev_tx_sent_queue,
    netif_tx_queue_stopped,
    netif_tx_stop_queue,
    netif_tx_wake_queue,
)
from netstack.core.skbuff import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    SkBuff,
    consume_skb,
)
from netstack.core.xmit import skb_gso_segment
from netstack.drivers.common import eth_random_addr
from netstack.drivers.rss import (
    RXH_IP_DST,
    RXH_IP_SRC,
    RXH_L4_B_0_1,
    RXH_L4_B_2_3,
    RssConfig,
    netdev_rss_key,
)
from netstack.errors import ConfigError
from netstack.sites import TIMED, kernel, spend
from netstack.wire.checksum import CSUM_MANGLED_0, csum_fold, csum_partial, csum_tcpudp_magic
from netstack.wire.ethernet import ETH_HLEN, ETH_P_IP, ETH_ZLEN

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["NicOps", "NicPriv", "RxCsumMode", "nic_newlink", "nic_pair"]

NET_SKB_PAD: Final = 64
NET_IP_ALIGN: Final = 2
ETH_WIRE_OVERHEAD: Final = 24  # preamble+SFD 8, FCS 4, inter-frame gap 12
TX_RING_SIZE: Final = 256
RX_RING_SIZE: Final = 256
MAX_SKB_FRAGS: Final = 17
TX_USECS_DEFAULT: Final = 50e-6
NIC_MAX_MTU: Final = 9216
NIC_MAX_QUEUES: Final = 64  # RX queues a NIC can have (ethtool -l "Pre-set maximums")
NIC_MAX_COALESCE_USECS: Final = 1022  # ixgbe's IXGBE_MAX_EITR >> 2
NIC_DEFAULT_MAX_RSS: Final = 16  # ixgbe's IXGBE_MAX_RSS_INDICES: the default's cap

RxCsumMode = Literal["unnecessary", "complete", "none"]
_H: Final = struct.Struct("!H")


class FrameSink(Protocol):
    """The far end of a cable: a NIC or a Python-driven port."""

    def deliver(self, frame: bytes) -> None: ...
    def carrier_up(self) -> bool: ...


def _hw_fill_checksum(frame: bytearray, skb: SkBuff) -> None:
    """What the NIC's TX checksum engine does for CHECKSUM_PARTIAL."""
    start = skb.csum_start - skb.data
    where = start + skb.csum_offset
    if start >= 0 and where + 2 <= len(frame):
        _H.pack_into(frame, where, csum_fold(csum_partial(frame, start)) or CSUM_MANGLED_0)


def _hw_rx_l4_ok(frame: bytes | bytearray) -> bool | None:
    """The RX checksum engine: True/False for a TCP/UDP-over-IPv4 checksum, None if n/a."""
    if len(frame) < ETH_HLEN + 20 or (frame[12] << 8 | frame[13]) != ETH_P_IP:
        return None
    ip = ETH_HLEN
    if frame[ip] >> 4 != 4:
        return None
    ihl = (frame[ip] & 0xF) * 4
    tot_len = frame[ip + 2] << 8 | frame[ip + 3]
    proto = frame[ip + 9]
    if proto not in (6, 17) or frame[ip + 6] & 0x3F or frame[ip + 7]:  # fragments: no
        return None
    end = ip + tot_len
    if ihl < 20 or end > len(frame) or tot_len < ihl + 8:
        return None
    l4 = ip + ihl
    if proto == 17:
        if frame[l4 + 6] == 0 and frame[l4 + 7] == 0:
            return None  # UDP without checksum
        ulen = (frame[l4 + 4] << 8) | frame[l4 + 5]
        if ulen < 8 or l4 + ulen > end:
            return False
        end = l4 + ulen  # the UDP checksum covers the UDP length, not the IP payload
    saddr = int.from_bytes(frame[ip + 12 : ip + 16], "big")
    daddr = int.from_bytes(frame[ip + 16 : ip + 20], "big")
    return csum_tcpudp_magic(saddr, daddr, end - l4, proto, csum_partial(frame, l4, end)) == 0


class NicPriv:
    """Driver state of one NIC end."""

    def __init__(
        self,
        dev: NetDevice,
        rate: float | None,
        delay: float,
        rx_csum: RxCsumMode,
        queues: int = 1,
    ) -> None:
        self.dev = dev
        self.rate = rate  # bit/s, None = unlimited
        self.delay = delay  # propagation delay, seconds
        self.tx_usecs = TX_USECS_DEFAULT  # TX interrupt coalescing (ethtool -C tx-usecs)
        # RX interrupt coalescing (ethtool -C rx-usecs): 0 interrupts at once;
        # else the interrupt fires rx_usecs after the first frame since the last one
        self.rx_usecs = 0.0
        self.rx_irq: list[HrTimer] = []
        self.rx_csum: RxCsumMode = rx_csum
        self.peer: FrameSink | None = None
        self.tx_ring: collections.deque[tuple[float, SkBuff, int]] = collections.deque()
        self.tx_ring_size = TX_RING_SIZE
        self.in_flight: collections.deque[tuple[float, bytes]] = collections.deque()
        # RX queues: a ring of (frame, hash, l4_hash) and a NAPI instance each
        self.rx_rings: list[collections.deque[tuple[bytes, int, bool]]] = [
            collections.deque() for _ in range(queues)
        ]
        self.rx_ring_size = RX_RING_SIZE
        self.rx_queue_packets = [0] * queues
        self.rx_queue_bytes = [0] * queues
        self.rss = RssConfig(netdev_rss_key(dev.net), queues)
        self.busy_until = 0.0
        self.napis: list[Napi] = []
        self.lot = trio.lowlevel.ParkingLot()
        self.dead = False  # unregistered: the wire task ends
        self.wake_at = float("inf")  # when the wire task next wakes up
        self.tx_frames = 0  # frames put on the wire (after TSO)
        self.wire_bytes = 0

    # -- FrameSink ------------------------------------------------------------------
    def deliver(self, frame: bytes) -> None:
        """A frame arrives from the cable: hash, RX queue, ring, then NAPI."""
        dev = self.dev
        if not dev.flags & IFF_UP:
            return
        rings = self.rx_rings
        if len(rings) > 1:  # RSS: the indirection table picks the queue
            h, l4 = self.rss.hash_frame(frame)
            q = self.rss.queue_of(h)
        elif dev.features & NETIF_F_RXHASH:
            h, l4 = self.rss.hash_frame(frame)
            q = 0
        else:
            h, l4, q = 0, False, 0
        ring = rings[q]
        if len(ring) >= self.rx_ring_size:
            dev.stats.rx_missed_errors += 1
            return
        ring.append((frame, h, l4))
        napi = self.napis[q] if self.napis else None
        if napi is not None and not napi.scheduled:
            if self.rx_usecs <= 0:
                napi.schedule()
            else:
                irq = self.rx_irq[q]
                if not irq.is_queued():
                    irq.start(ktime_get_ns(dev.net) + round(self.rx_usecs * 1e9))

    def carrier_up(self) -> bool:
        return bool(self.dev.flags & IFF_UP)

    # -- the wire ---------------------------------------------------------------------
    def serialisation_time(self, nbytes: int) -> float:
        rate = self.rate
        if rate is None:
            return 0.0
        return (max(nbytes, ETH_ZLEN) + ETH_WIRE_OVERHEAD) * 8 / rate

    def kick(self) -> None:
        self.lot.unpark_all()

    async def wire_task(self) -> None:
        """TX completions and deliveries to the far end, in virtual time."""
        net = self.dev.net
        while not self.dead:
            tx_ring = self.tx_ring
            in_flight = self.in_flight
            if not tx_ring and not in_flight:
                await self.lot.park()
                continue
            # The TX completion interrupt fires tx_usecs after the first
            # finished frame (interrupt coalescing), so one completion covers
            # every frame done by then — which is what lets BQL's limit grow.
            nxt = min(
                tx_ring[0][0] + self.tx_usecs if tx_ring else float("inf"),
                in_flight[0][0] if in_flight else float("inf"),
            )
            if nxt > trio.current_time():
                self.wake_at = nxt
                with trio.move_on_at(nxt):  # an earlier event (kick) ends the wait
                    await self.lot.park()
                self.wake_at = float("inf")
                continue
            now = trio.current_time()
            net.cpus.run_on(0)
            if tx_ring and tx_ring[0][0] + self.tx_usecs <= now:
                self.complete_tx(now)
            peer = self.peer
            while in_flight and in_flight[0][0] <= now:
                frame = in_flight.popleft()[1]
                if peer is not None and peer.carrier_up():
                    peer.deliver(frame)

    @kernel("e1000_clean_tx_irq")
    def complete_tx(self, now: float) -> None:
        """TX completion interrupt: free skbs, BQL, wake the queue. Kernel: e1000_clean_tx_irq()."""
        if TIMED:
            spend("e1000_clean_tx_irq")
        tx_ring = self.tx_ring
        dev = self.dev
        pkts = nbytes = 0
        stats = dev.stats
        while tx_ring and tx_ring[0][0] <= now:
            _, skb, length = tx_ring.popleft()
            pkts += 1
            nbytes += length
            consume_skb(skb)
        if not pkts:
            return
        stats.tx_packets += pkts
        stats.tx_bytes += nbytes
        txq = dev._tx[0]
        netdev_tx_completed_queue(txq, pkts, nbytes)
        if (
            netif_tx_queue_stopped(txq)
            and len(tx_ring) <= self.tx_ring_size - self.tx_ring_size // 4
            and dev.flags & IFF_UP
        ):
            netif_tx_wake_queue(txq)


def _frames_of(skb: SkBuff) -> list[bytearray]:
    """The frames the hardware puts on the wire for *skb* (TSO cuts GSO skbs)."""
    if skb.gso_size:
        dev = skb.dev
        assert dev is not None
        segs = skb_gso_segment(skb.clone(), dev.features)  # the TSO engine
        out: list[bytearray] = []
        s = segs
        while s is not None:
            frame = bytearray(s.buf[s.mac_header if s.mac_header >= 0 else s.data : s.tail])
            if s.ip_summed == CHECKSUM_PARTIAL:
                _hw_fill_checksum(frame, s)
            out.append(frame)
            nxt = s.next
            s.next = None
            consume_skb(s)
            s = nxt
        return out
    frame = bytearray(skb.buf[skb.data : skb.tail])
    if skb.ip_summed == CHECKSUM_PARTIAL:
        _hw_fill_checksum(frame, skb)
    return [frame]


class NicOps(NetDeviceOps):
    """The driver's ``net_device_ops``."""

    def ndo_open(self, dev: NetDevice) -> None:
        """Link up when both ends are up (autonegotiation)."""
        priv: NicPriv = dev.priv
        netdev_tx_reset_queue(dev._tx[0])
        peer = priv.peer
        if peer is None or peer.carrier_up():
            netif_carrier_on(dev)
            if isinstance(peer, NicPriv):
                netif_carrier_on(peer.dev)

    def ndo_uninit(self, dev: NetDevice) -> None:
        """The device goes away: stop the cable's task."""
        priv: NicPriv = dev.priv
        priv.dead = True
        priv.kick()

    def ndo_stop(self, dev: NetDevice) -> None:
        priv: NicPriv = dev.priv
        netif_carrier_off(dev)
        if isinstance(priv.peer, NicPriv):
            netif_carrier_off(priv.peer.dev)
        for ring in priv.rx_rings:
            ring.clear()

    @kernel("e1000_xmit_frame")
    def ndo_start_xmit(self, skb: SkBuff, dev: NetDevice) -> int:
        """Post *skb* on the TX ring. Kernel: e1000_xmit_frame()."""
        if TIMED:
            spend("e1000_xmit_frame")
        priv: NicPriv = dev.priv
        txq = dev._tx[skb.queue_mapping]
        if len(priv.tx_ring) >= priv.tx_ring_size:
            netif_tx_stop_queue(txq)
            return NETDEV_TX_BUSY
        length = skb.tail - skb.data
        now = dev.net.cpus.time()  # timed mode: the sending CPU's clock
        start = priv.busy_until if priv.busy_until > now else now
        arrive_delay = priv.delay
        done = start
        for frame in _frames_of(skb):
            if len(frame) < ETH_ZLEN:
                frame.extend(bytes(ETH_ZLEN - len(frame)))  # the MAC pads short frames
            done += priv.serialisation_time(len(frame))
            priv.in_flight.append((done + arrive_delay, bytes(frame)))
            priv.tx_frames += 1
            priv.wire_bytes += len(frame)
        priv.busy_until = done
        priv.tx_ring.append((done, skb, length))
        netdev_tx_sent_queue(txq, length)
        if len(priv.tx_ring) >= priv.tx_ring_size:
            netif_tx_stop_queue(txq)
        if min(done + priv.tx_usecs, done + arrive_delay) < priv.wake_at:
            priv.kick()  # this frame's events come before the task's next wake-up
        return NETDEV_TX_OK

    def ndo_change_mtu(self, dev: NetDevice, new_mtu: int) -> None:
        dev.mtu = new_mtu


NIC_OPS: Final = NicOps()


@kernel("drivers/net/ethernet/intel/ixgbe/ixgbe_ethtool.c")
class NicEthtoolOps(EthtoolOps):
    """``ethtool -l/-L/-x/-X/-n/-N/-S`` for the NIC: RX channels, RSS and statistics.

    Kernel: modelled on drivers/net/ethernet/intel/ixgbe/ixgbe_ethtool.c.
    """

    supports_channels = True
    supports_rxfh = True
    supports_stats = True
    supports_coalesce = True

    @kernel("ixgbe_get_channels")
    def get_channels(self, dev: NetDevice) -> EthtoolChannels:
        """RX-only channels (one TX queue). Kernel: ixgbe_get_channels()."""
        priv: NicPriv = dev.priv
        return EthtoolChannels(
            max_rx=NIC_MAX_QUEUES, max_tx=1, rx_count=len(priv.rx_rings), tx_count=1
        )

    @kernel("ixgbe_set_channels")
    def set_channels(self, dev: NetDevice, ch: EthtoolChannels) -> None:
        """Kernel: ixgbe_set_channels()."""
        if ch.tx_count != 1:
            raise ConfigError("requested channel count exceeds maximum", errno.EINVAL)
        try:
            nic_set_channels(dev, ch.rx_count)
        except ValueError as e:
            raise ConfigError(str(e), errno.EINVAL) from None

    @kernel("ixgbe_get_rxfh")
    def get_rxfh(self, dev: NetDevice) -> tuple[list[int], bytes]:
        """Kernel: ixgbe_get_rxfh()."""
        rss = dev.priv.rss
        return list(rss.indir), rss.key

    @kernel("ixgbe_set_rxfh")
    def set_rxfh(self, dev: NetDevice, indir: list[int] | None, key: bytes | None) -> None:
        """Kernel: ixgbe_set_rxfh()."""
        rss = dev.priv.rss
        if key is not None:
            if len(key) != len(rss.key):
                raise ConfigError("hash key size mismatch", errno.EINVAL)
            rss.set_key(key)
        if indir is not None:
            if not indir:  # ethtool -X DEV default
                rss.indir_user_set = False
                rss.set_rings(rss.n_rings)
                return
            if any(q >= rss.n_rings for q in indir):
                raise ConfigError(
                    "indirection table entry exceeds the number of RX rings", errno.EINVAL
                )
            rss.indir = list(indir)
            rss.indir_user_set = True

    @kernel("ixgbe_get_rss_hash_opts")
    def get_rxfh_fields(self, dev: NetDevice, flow: str) -> int:
        """Kernel: ixgbe_get_rss_hash_opts()."""
        return int(dev.priv.rss.fields[flow])

    @kernel("ixgbe_set_rss_hash_opt")
    def set_rxfh_fields(self, dev: NetDevice, flow: str, fields: int) -> None:
        """TCP must hash on the 4-tuple; UDP on 2 or 4; IP on the 2-tuple.

        Kernel: ixgbe_set_rss_hash_opt().
        """
        sd = RXH_IP_SRC | RXH_IP_DST
        l4 = RXH_L4_B_0_1 | RXH_L4_B_2_3
        allowed = {sd | l4} if flow in ("tcp4", "tcp6") else {sd, sd | l4}
        if flow in ("ip4", "ip6"):
            allowed = {sd}
        if fields not in allowed:
            raise ConfigError("", errno.EINVAL)
        dev.priv.rss.fields[flow] = fields

    @kernel("ixgbe_get_coalesce")
    def get_coalesce(self, dev: NetDevice) -> dict[str, int]:
        """Kernel: ixgbe_get_coalesce()."""
        priv: NicPriv = dev.priv
        return {
            "rx-usecs": round(priv.rx_usecs * 1e6),
            "tx-usecs": round(priv.tx_usecs * 1e6),
        }

    @kernel("ixgbe_set_coalesce")
    def set_coalesce(self, dev: NetDevice, values: dict[str, int]) -> None:
        """Kernel: ixgbe_set_coalesce()."""
        priv: NicPriv = dev.priv
        for key, value in values.items():
            if key not in ("rx-usecs", "tx-usecs"):
                raise ConfigError("", errno.EOPNOTSUPP)
            if value > NIC_MAX_COALESCE_USECS:
                raise ConfigError("", errno.EINVAL)
        if "rx-usecs" in values:
            priv.rx_usecs = values["rx-usecs"] * 1e-6
        if "tx-usecs" in values:
            priv.tx_usecs = values["tx-usecs"] * 1e-6

    @kernel("ixgbe_get_ethtool_stats")
    def get_ethtool_stats(self, dev: NetDevice) -> list[tuple[str, int]]:
        """Device counters and per-queue ones. Kernel: ixgbe_get_ethtool_stats()."""
        priv: NicPriv = dev.priv
        st = dev.stats
        out = [
            ("rx_packets", st.rx_packets),
            ("tx_packets", st.tx_packets),
            ("rx_bytes", st.rx_bytes),
            ("tx_bytes", st.tx_bytes),
            ("rx_errors", st.rx_errors),
            ("tx_errors", st.tx_errors),
            ("rx_dropped", st.rx_dropped),
            ("tx_dropped", st.tx_dropped),
            ("multicast", st.multicast),
            ("rx_length_errors", st.rx_length_errors),
            ("rx_missed_errors", st.rx_missed_errors),
            ("tx_queue_0_packets", st.tx_packets),
            ("tx_queue_0_bytes", st.tx_bytes),
        ]
        for q in range(len(priv.rx_rings)):
            out.append((f"rx_queue_{q}_packets", priv.rx_queue_packets[q]))
            out.append((f"rx_queue_{q}_bytes", priv.rx_queue_bytes[q]))
        return out


NIC_ETHTOOL_OPS: Final = NicEthtoolOps()


@kernel("e1000_clean_rx_irq", "ixgbe_rx_hash", "skb_record_rx_queue")
def nic_poll(napi: Napi, budget: int) -> int:
    """Build skbs from one RX queue's ring and pass them up.

    Kernel: e1000_clean_rx_irq(); the hash and queue as ixgbe_rx_hash() and
    skb_record_rx_queue() set them.
    """
    if TIMED:
        spend("e1000_clean_rx_irq")
    dev = napi.dev
    priv: NicPriv = dev.priv
    q: int = napi.priv
    ring = priv.rx_rings[q]
    stats = dev.stats
    mode = priv.rx_csum
    rxcsum = dev.features & NETIF_F_RXCSUM
    rxhash = dev.features & NETIF_F_RXHASH
    done = 0
    nbytes = 0
    while ring and done < budget:
        frame, h, l4 = ring.popleft()
        done += 1
        n = len(frame)
        if n < ETH_HLEN:
            stats.rx_length_errors += 1
            stats.rx_errors += 1
            continue
        headroom = NET_SKB_PAD + NET_IP_ALIGN
        skb = SkBuff(bytearray(headroom) + frame, headroom, headroom + n)
        stats.rx_packets += 1
        stats.rx_bytes += n
        nbytes += n
        skb.queue_mapping = q + 1  # skb_record_rx_queue()
        if rxhash and h:
            skb.hash = h  # skb_set_hash(skb, rss, PKT_HASH_TYPE_L4 or L3)
            skb.l4_hash = l4
        if frame[0] & 1:
            stats.multicast += 1
        skb.protocol = eth_type_trans(skb, dev)
        if rxcsum:
            if mode == "complete":
                skb.ip_summed = CHECKSUM_COMPLETE
                skb.csum = csum_partial(skb.buf, skb.data, skb.tail)
            elif mode == "unnecessary":
                skb.ip_summed = CHECKSUM_UNNECESSARY if _hw_rx_l4_ok(frame) else CHECKSUM_NONE
        napi_gro_receive(napi, skb)
    priv.rx_queue_packets[q] += done
    priv.rx_queue_bytes[q] += nbytes
    return done


def nic_setup(dev: NetDevice) -> None:
    """An Ethernet NIC with checksum and segmentation offloads."""
    ether_setup(dev)
    dev.ethtool_ops = NIC_ETHTOOL_OPS
    dev.num_rx_queues = NIC_MAX_QUEUES  # allocated (alloc_etherdev_mqs); in use: ethtool -l
    dev.max_mtu = NIC_MAX_MTU
    dev.hw_features = (
        NETIF_F_SG
        | NETIF_F_IP_CSUM
        | NETIF_F_IPV6_CSUM
        | NETIF_F_TSO
        | NETIF_F_TSO6
        | NETIF_F_RXCSUM
        | NETIF_F_RXHASH
        | NETIF_F_GRO
    )
    dev.features = dev.hw_features | NETIF_F_HIGHDMA
    dev.vlan_features = dev.features
    dev.watchdog_timeo = 5 * dev.net.clock.hz


def nic_newlink(
    net: Net,
    name: str,
    *,
    rate: float | None = None,
    delay: float = 0.0,
    addr: bytes | None = None,
    rx_csum: RxCsumMode = "unnecessary",
    mtu: int | None = None,
    queues: int | None = None,
) -> NetDevice:
    """Create one NIC end (down, cable unplugged).

    *queues* RX queues (default: one per CPU of the host, at most
    ``NIC_DEFAULT_MAX_RSS`` as ixgbe's ``IXGBE_MAX_RSS_INDICES``), each with
    its NAPI instance on CPU ``queue % ncpus``.
    """
    if rate is not None and rate <= 0:
        raise ValueError(f"rate must be positive (bit/s), not {rate!r}")
    if delay < 0:
        raise ValueError(f"delay must be >= 0 seconds, not {delay!r}")
    if queues is None:
        queues = min(len(net.cpus), NIC_DEFAULT_MAX_RSS)
    if not 1 <= queues <= NIC_MAX_QUEUES:
        raise ValueError(f"queues must be 1..{NIC_MAX_QUEUES}, not {queues!r}")
    dev = NetDevice(net, name, NIC_OPS, kind="nic")
    nic_setup(dev)
    if mtu is not None:
        dev.mtu = mtu
    dev.dev_addr = addr if addr is not None else eth_random_addr(net.rng)
    priv = NicPriv(dev, rate, delay, rx_csum, queues)
    dev.priv = priv
    register_netdevice(dev)
    netif_carrier_off(dev)
    for q in range(queues):
        _nic_add_napi(priv, q)
    net.start_soon(priv.wire_task, f"{net.name}/wire/{dev.name}")
    return dev


def _nic_add_napi(priv: NicPriv, q: int) -> None:
    """RX queue *q*'s NAPI instance, its interrupt bound to CPU ``q % ncpus``."""
    dev = priv.dev
    net = dev.net
    name = f"{net.name}/napi/{dev.name}" + (f"-rx-{q}" if q else "")
    napi = Napi(dev, nic_poll, cpu=q % len(net.cpus), name=name)
    napi.priv = q
    priv.napis.append(napi)
    priv.rx_irq.append(net.hrtimers.timer(napi.schedule, f"{name}/irq"))
    dev.napi_list.append(napi)
    net.start_napi(napi)


@kernel("net/ethtool/channels.c", "ethnl_set_channels", "ixgbe_set_channels")
def nic_set_channels(dev: NetDevice, rx: int) -> None:
    """Change the number of RX queues (``ethtool -L DEV rx N``).

    Frames waiting on the rings of removed queues are moved to the queue the
    indirection table now gives them; the default table follows the count
    unless the user set one (``ethtool -X``), which must not point past it.

    Kernel: net/ethtool/channels.c, ethnl_set_channels() → the driver's
    set_channels (ixgbe_set_channels()).
    """
    priv: NicPriv = dev.priv
    old = len(priv.rx_rings)
    if rx == old:
        return
    if priv.rss.indir_user_set and max(priv.rss.indir) >= rx:
        raise ValueError(
            "requested channel counts are too low for existing indirection table settings"
        )
    waiting = [item for ring in priv.rx_rings for item in ring]
    for ring in priv.rx_rings:
        ring.clear()
    while len(priv.napis) > rx:  # netif_napi_del()
        napi = priv.napis.pop()
        priv.rx_irq.pop().cancel()
        napi.kill()
        dev.napi_list.remove(napi)
        priv.rx_rings.pop()
        priv.rx_queue_packets.pop()
        priv.rx_queue_bytes.pop()
    while len(priv.rx_rings) < rx:
        priv.rx_rings.append(collections.deque())
        priv.rx_queue_packets.append(0)
        priv.rx_queue_bytes.append(0)
        _nic_add_napi(priv, len(priv.rx_rings) - 1)
    priv.rss.set_rings(rx)
    for frame, h, l4 in waiting:
        q = priv.rss.queue_of(h) if rx > 1 else 0
        priv.rx_rings[q].append((frame, h, l4))
        priv.napis[q].schedule()


def nic_pair(
    net: Net,
    name: str,
    peer_net: Net,
    peer_name: str,
    *,
    rate: float | None = None,
    delay: float = 0.0,
    addr: bytes | None = None,
    peer_addr: bytes | None = None,
    rx_csum: RxCsumMode = "unnecessary",
    mtu: int | None = None,
    queues: int | None = None,
) -> tuple[NetDevice, NetDevice]:
    """Two NIC ends joined by a cable of *rate* bit/s and *delay* seconds each way."""
    a = nic_newlink(
        net, name, rate=rate, delay=delay, addr=addr, rx_csum=rx_csum, mtu=mtu, queues=queues
    )
    b = nic_newlink(
        peer_net,
        peer_name,
        rate=rate,
        delay=delay,
        addr=peer_addr,
        rx_csum=rx_csum,
        mtu=mtu,
        queues=queues,
    )
    a.priv.peer = b.priv
    b.priv.peer = a.priv
    return a, b
