"""``netem``: the network emulator — delay, jitter, loss, duplication, corruption,
reordering, rate and slotting, in virtual time and reproducible from a seed.

Theory of operation: on enqueue netem decides a packet's fate with its own
pseudo-random generator (``prandom_u32_state``, seeded by ``seed N`` or, by
default, from the host's seeded RNG — so the same lab seed gives the same
capture, byte for byte):

* **duplicate** — a clone is enqueued again at the *root* qdisc (with
  duplication off for it);
* **loss** — random (with optional correlation), the 4-state ``state`` model
  or Gilbert-Elliott ``gemodel``; with ``ecn`` an ECN-capable packet is
  marked CE instead;
* **corrupt** — one random bit of the frame is flipped (checksums are
  completed first, so the receiver sees a bad checksum);
* **delay** — ``latency ± jitter`` (uniform, with correlation, or a
  ``distribution`` table); with ``rate``, each packet also waits for its
  serialisation behind the previous one (plus ``packet overhead`` and cell
  framing);
* **reorder** — outside the ``gap`` every Nth packet, with probability
  ``reorder``, goes to the head of the queue with no delay;

and then queues it in the *tfifo*, ordered by time to send. Dequeue releases
the earliest packet whose time has come (and whose ``slot`` is open), or arms
the qdisc watchdog — an hrtimer — for that time. netem is classful: a child
qdisc (``tc qdisc add … parent N:1``) receives the released packets, e.g. a
tbf to shape after delaying.

Probabilities travel as ``u32`` fractions of 2^32 − 1 and correlations mix
the previous value in, exactly as ``get_crandom`` does, so a given seed also
gives Linux's sequence of decisions. Deviations: the kernel draws the initial
correlation state, the corrupted bit's position and the slot durations from
its unseeded RNG; netstack draws them from seeded ones.

Kernel: net/sched/sch_netem.c.
"""

from __future__ import annotations

import errno
import heapq
import itertools
from collections import deque
from typing import TYPE_CHECKING, Any, Final

from netstack.core.dev import skb_orphan
from netstack.core.features import NETIF_F_GSO_MASK
from netstack.core.hrtimer import ktime_get_ns
from netstack.core.inet_ecn import INET_ECN_set_ce
from netstack.core.netdevice import NET_XMIT_DROP, NET_XMIT_SUCCESS
from netstack.core.prandom import RndState
from netstack.core.qdisc import (
    NET_XMIT_BYPASS,
    TC_H_MAKE,
    TC_H_ROOT,
    ClassDump,
    ClassStats,
    Qdisc,
    QdiscWatchdog,
    bstats_update,
    net_xmit_drop_count,
    qdisc_pkt_len,
    qdisc_purge_queue,
    qdisc_reset,
    qdisc_tree_reduce_backlog,
)
from netstack.core.skbuff import (
    CHECKSUM_PARTIAL,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
    kfree_skb_list,
)
from netstack.core.xmit import netif_skb_features, skb_checksum_help, skb_gso_segment
from netstack.errors import ConfigError
from netstack.sched.pkt_sched import (
    NETEM_DIST_MAX,
    NETEM_DIST_SCALE,
    NetemOptions,
    TcNetemCorr,
    TcNetemCorrupt,
    TcNetemGemodel,
    TcNetemGimodel,
    TcNetemQopt,
    TcNetemRate,
    TcNetemReorder,
    TcNetemSlot,
)
from netstack.sched.psched import NSEC_PER_SEC, PSCHED_NS2TICKS, PSCHED_TICKS2NS
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetdevQueue

__all__ = ["NetemQdisc", "get_crandom"]

_M32: Final = 0xFFFFFFFF
INT_MAX: Final = 0x7FFFFFFF

CLG_RANDOM: Final = 0
CLG_4_STATES: Final = 1
CLG_GILB_ELL: Final = 2

TX_IN_GAP_PERIOD: Final = 1
TX_IN_BURST_PERIOD: Final = 2
LOST_IN_GAP_PERIOD: Final = 3
LOST_IN_BURST_PERIOD: Final = 4

GOOD_STATE: Final = 1
BAD_STATE: Final = 2


class CrndState:
    """A correlated random source (kernel: ``struct crndstate``)."""

    __slots__ = ("last", "rho")

    def __init__(self) -> None:
        self.last = 0
        self.rho = 0


@kernel("get_crandom")
def get_crandom(state: CrndState | None, prng: RndState) -> int:
    """A u32 correlated with the previous one by ``rho``. Kernel: get_crandom()."""
    if state is None or state.rho == 0:  # no correlation
        return prng.u32()
    value = prng.u32()
    rho = state.rho + 1
    answer = (value * ((1 << 32) - rho) + state.last * rho) >> 32
    state.last = answer
    return answer


def _einval() -> ConfigError:
    return ConfigError("RTNETLINK answers: Invalid argument", errno.EINVAL)


def _extack(msg: str) -> ConfigError:
    return ConfigError(f"Error: {msg}.", errno.EINVAL)


@kernel("net/sched/sch_netem.c")
class NetemQdisc(Qdisc):
    """Kernel: net/sched/sch_netem.c, netem_qdisc_ops."""

    kind = "netem"
    classful = True
    has_change = True

    def __init__(
        self, net: Net, dev_queue: NetdevQueue | None, handle: int = 0, parent: int = TC_H_ROOT
    ) -> None:
        super().__init__(net, dev_queue, handle, parent)
        # the tfifo: (time_to_send, arrival order, skb), earliest first
        self.tfifo: list[tuple[int, int, SkBuff]] = []
        self._seq = itertools.count()
        self.t_len = 0
        self.t_last = 0  # the latest time to send in the tfifo (rb_last / t_tail)
        self.reorder_q: deque[SkBuff] = deque()  # sch->q: reordered packets, sent first
        self.qdisc: Qdisc | None = None  # optional child
        self.watchdog = QdiscWatchdog(self)
        self.latency = 0  # ns
        self.jitter = 0  # ns
        self.loss = 0
        self.ecn = 0
        self.counter = 0
        self.gap = 0
        self.duplicate = 0
        self.reorder = 0
        self.corrupt = 0
        self.rate = 0  # bytes/s
        self.packet_overhead = 0
        self.cell_size = 0
        self.cell_overhead = 0
        self.delay_cor = CrndState()
        self.loss_cor = CrndState()
        self.dup_cor = CrndState()
        self.reorder_cor = CrndState()
        self.corrupt_cor = CrndState()
        self.seed = 0
        self.prng = RndState(0)
        # The kernel's get_random_u32() (unseeded) for the corrupted bit and the
        # slot durations; here a second generator seeded from the host's RNG.
        self.entropy = RndState(net.rng.getrandbits(64))
        self.delay_dist: tuple[int, ...] | None = None
        self.slot_dist: tuple[int, ...] | None = None
        self.loss_model = CLG_RANDOM
        self.clg_state = 0
        self.clg = [0, 0, 0, 0, 0]  # a1..a5
        self.slot_config = TcNetemSlot()
        self.slot_next = 0
        self.packets_left = 0
        self.bytes_left = 0

    # -- configuration ------------------------------------------------------------
    @kernel("netem_init")
    def init(self, opt: Any) -> None:
        """Kernel: netem_init() — options are required."""
        if opt is None:
            raise _einval()
        self.loss_model = CLG_RANDOM
        self.change(opt)

    @kernel("init_crandom")
    def _init_crandom(self, state: CrndState, rho: int) -> None:
        """Kernel: init_crandom() (its initial value comes from the host's RNG here)."""
        state.rho = rho & _M32
        state.last = self.net.rng.getrandbits(32)

    @kernel("netem_change")
    def change(self, opt: Any) -> None:
        """Apply every option; tc sends the whole configuration each time.

        Kernel: netem_change().
        """
        if not isinstance(opt, NetemOptions):
            raise _einval()
        for table in (opt.delay_dist, opt.slot_dist):
            if table is not None and (not table or len(table) > NETEM_DIST_MAX):
                raise _einval()  # get_dist_table()
        if opt.slot is not None:  # validate_slot()
            c = opt.slot
            if c.min_delay < 0 or c.max_delay < 0:
                raise _extack("negative slot delay")
            if c.min_delay > c.max_delay:
                raise _extack("slot min delay greater than max delay")
            if c.dist_delay < 0 or c.dist_jitter < 0:
                raise _extack("negative dist delay")
            if c.max_packets < 0 or c.max_bytes < 0:
                raise _extack("negative slot limit")
        for value, name in ((opt.latency64, "latency"), (opt.jitter64, "jitter")):
            if value is not None and value < 0:  # validate_time()
                raise _extack(f"negative {name}")
        if opt.loss_gi is not None:
            self.loss_model = CLG_4_STATES
            self.clg_state = TX_IN_GAP_PERIOD
            gi = opt.loss_gi
            self.clg = [gi.p13, gi.p31, gi.p32, gi.p14, gi.p23]
        elif opt.loss_ge is not None:
            self.loss_model = CLG_GILB_ELL
            self.clg_state = GOOD_STATE
            ge = opt.loss_ge
            self.clg = [ge.p, ge.r, ge.h, ge.k1, 0]
        else:
            self.loss_model = CLG_RANDOM
        if opt.delay_dist is not None:
            self.delay_dist = opt.delay_dist
        if opt.slot_dist is not None:
            self.slot_dist = opt.slot_dist
        qopt = opt.qopt
        self.limit = qopt.limit & _M32
        self.latency = PSCHED_TICKS2NS(qopt.latency)
        self.jitter = PSCHED_TICKS2NS(qopt.jitter)
        self.gap = qopt.gap & _M32
        self.counter = 0
        self.loss = qopt.loss & _M32
        self.duplicate = qopt.duplicate & _M32
        # for compatibility with earlier versions: a gap means 100% reordering
        if self.gap:
            self.reorder = _M32
        if opt.corr is not None:
            self._init_crandom(self.delay_cor, opt.corr.delay_corr)
            self._init_crandom(self.loss_cor, opt.corr.loss_corr)
            self._init_crandom(self.dup_cor, opt.corr.dup_corr)
        if opt.reorder is not None:
            self.reorder = opt.reorder.probability & _M32
            self._init_crandom(self.reorder_cor, opt.reorder.correlation)
        if opt.corrupt is not None:
            self.corrupt = opt.corrupt.probability & _M32
            self._init_crandom(self.corrupt_cor, opt.corrupt.correlation)
        if opt.rate is not None:
            self.rate = opt.rate.rate & _M32
            self.packet_overhead = opt.rate.packet_overhead
            self.cell_size = opt.rate.cell_size
            self.cell_overhead = opt.rate.cell_overhead
        if opt.rate64 is not None:
            self.rate = max(self.rate, opt.rate64)
        if opt.latency64 is not None:
            self.latency = opt.latency64
        if opt.jitter64 is not None:
            self.jitter = opt.jitter64
        if opt.ecn is not None:
            self.ecn = opt.ecn
        if opt.slot is not None:
            self._get_slot(opt.slot)
        # capping jitter to the range acceptable by tabledist()
        self.jitter = min(abs(self.jitter), INT_MAX)
        self.seed = (opt.seed if opt.seed is not None else self.net.rng.getrandbits(64)) & (
            (1 << 64) - 1
        )
        self.prng.seed_state(self.seed)

    @kernel("get_slot")
    def _get_slot(self, c: TcNetemSlot) -> None:
        """Kernel: get_slot()."""
        self.slot_config = TcNetemSlot(
            min_delay=c.min_delay,
            max_delay=c.max_delay,
            max_packets=c.max_packets or INT_MAX,
            max_bytes=c.max_bytes or INT_MAX,
            dist_delay=c.dist_delay,
            dist_jitter=min(INT_MAX, abs(c.dist_jitter)),
        )
        cfg = self.slot_config
        self.packets_left = cfg.max_packets
        self.bytes_left = cfg.max_bytes
        if cfg.min_delay or cfg.max_delay or cfg.dist_jitter:
            # (0 means "no slots"; a host's clock, unlike the kernel's, reads 0 at start)
            self.slot_next = ktime_get_ns(self.net) or 1
        else:
            self.slot_next = 0

    # -- random decisions ---------------------------------------------------------------
    @kernel("loss_4state")
    def _loss_4state(self) -> bool:
        """The GI 4-state Markov chain. Kernel: loss_4state()."""
        a1, a2, a3, a4, a5 = self.clg
        rnd = self.prng.u32()
        state = self.clg_state
        if state == TX_IN_GAP_PERIOD:
            if rnd < a4:
                self.clg_state = LOST_IN_GAP_PERIOD
                return True
            if rnd < (a1 + a4) & _M32:  # u32 sum, as the kernel adds
                self.clg_state = LOST_IN_BURST_PERIOD
                return True
            self.clg_state = TX_IN_GAP_PERIOD
        elif state == TX_IN_BURST_PERIOD:
            if rnd < a5:
                self.clg_state = LOST_IN_BURST_PERIOD
                return True
            self.clg_state = TX_IN_BURST_PERIOD
        elif state == LOST_IN_BURST_PERIOD:
            if rnd < a3:
                self.clg_state = TX_IN_BURST_PERIOD
            elif rnd < (a2 + a3) & _M32:
                self.clg_state = TX_IN_GAP_PERIOD
            else:
                self.clg_state = LOST_IN_BURST_PERIOD
                return True
        elif state == LOST_IN_GAP_PERIOD:
            self.clg_state = TX_IN_GAP_PERIOD
        return False

    @kernel("loss_gilb_ell")
    def _loss_gilb_ell(self) -> bool:
        """Gilbert-Elliott: Good/Bad states, each with its loss probability.

        Kernel: loss_gilb_ell().
        """
        p, r, h, k1, _ = self.clg
        prng = self.prng
        if self.clg_state == GOOD_STATE:
            if prng.u32() < p:
                self.clg_state = BAD_STATE
            if prng.u32() < k1:
                return True
        elif self.clg_state == BAD_STATE:
            if prng.u32() < r:
                self.clg_state = GOOD_STATE
            if prng.u32() > h:
                return True
        return False

    @kernel("loss_event")
    def _loss_event(self) -> bool:
        """Kernel: loss_event()."""
        model = self.loss_model
        if model == CLG_RANDOM:
            return bool(self.loss) and self.loss >= get_crandom(self.loss_cor, self.prng)
        if model == CLG_4_STATES:
            return self._loss_4state()
        return self._loss_gilb_ell()

    @kernel("tabledist")
    def _tabledist(
        self, mu: int, sigma: int, state: CrndState | None, dist: tuple[int, ...] | None
    ) -> int:
        """A delay with mean *mu* and spread *sigma* (ns). Kernel: tabledist()."""
        if sigma == 0:
            return mu
        rnd = get_crandom(state, self.prng)
        if dist is None:  # uniform over [mu - sigma, mu + sigma)
            return (rnd % ((2 * sigma) & _M32)) + mu - sigma
        t = dist[rnd % len(dist)]
        x = (sigma % NETEM_DIST_SCALE) * t
        x += NETEM_DIST_SCALE // 2 if x >= 0 else -(NETEM_DIST_SCALE // 2)
        # C division truncates toward zero
        q = abs(x) // NETEM_DIST_SCALE
        return (q if x >= 0 else -q) + (sigma // NETEM_DIST_SCALE) * t + mu

    @kernel("packet_time_ns")
    def _packet_time_ns(self, length: int) -> int:
        """Serialisation time at ``rate`` with overhead and cells. Kernel: packet_time_ns()."""
        length += self.packet_overhead
        if self.cell_size:
            cells = length // self.cell_size
            if length > cells * self.cell_size:  # extra cell needed for remainder
                cells += 1
            length = cells * (self.cell_size + self.cell_overhead)
        return length * NSEC_PER_SEC // self.rate

    @kernel("get_slot_next")
    def _get_slot_next(self, now: int) -> None:
        """Open the next delivery slot. Kernel: get_slot_next()."""
        cfg = self.slot_config
        if self.slot_dist is None:
            spread = cfg.max_delay - cfg.min_delay
            next_delay = cfg.min_delay + ((spread * self.entropy.u32()) >> 32)  # get_random_u32()
        else:
            next_delay = self._tabledist(cfg.dist_delay, cfg.dist_jitter, None, self.slot_dist)
        self.slot_next = now + next_delay
        self.packets_left = cfg.max_packets
        self.bytes_left = cfg.max_bytes

    # -- the tfifo ----------------------------------------------------------------
    @kernel("tfifo_enqueue")
    def _tfifo_enqueue(self, skb: SkBuff, time_to_send: int) -> None:
        """Insert by time to send, after packets with the same time. Kernel: tfifo_enqueue()."""
        if not self.tfifo or time_to_send > self.t_last:
            self.t_last = time_to_send
        heapq.heappush(self.tfifo, (time_to_send, next(self._seq), skb))
        self.t_len += 1
        self.qlen += 1

    def _last_time_to_send(self) -> int | None:
        """The latest time to send in the queue (``rate`` chains packets to it)."""
        last: int | None = None
        if self.reorder_q:
            last = self.reorder_q[-1].cb
        if self.tfifo and (last is None or self.t_last > last):
            last = self.t_last
        return last

    # -- the data path ------------------------------------------------------------
    @kernel("netem_segment")
    def _segment(self, skb: SkBuff) -> SkBuff | None:
        """Kernel: netem_segment()."""
        features = netif_skb_features(skb) & ~NETIF_F_GSO_MASK
        segs = skb_gso_segment(skb, features)
        if segs is None:
            self.qdisc_drop(skb)
            return None
        consume_skb(skb)
        return segs

    @kernel("netem_enqueue")
    def enqueue(self, skb: SkBuff) -> int:
        """Decide the packet's fate and queue it by its time to send.

        Kernel: netem_enqueue().
        """
        prng = self.prng
        prev_len = qdisc_pkt_len(skb)
        segs: SkBuff | None = None
        count = 1
        # Random duplication (never of a duplicate)
        if (
            self.duplicate
            and skb.tc_depth == 0
            and self.duplicate >= get_crandom(self.dup_cor, prng)
        ):
            count += 1
        # Drop packet?
        if self._loss_event():
            if self.ecn and INET_ECN_set_ce(skb):
                self.drops += 1  # mark packet
            else:
                count -= 1
        if count == 0:
            self.drops += 1
            kfree_skb(skb, DropReason.QDISC_DROP)
            return NET_XMIT_SUCCESS | NET_XMIT_BYPASS
        # If a delay is expected, orphan the skb: the socket's send buffer is
        # released now, as a TX completion would, not after the emulated transit.
        if self.latency or self.jitter or self.rate:
            skb_orphan(skb)
        # If we need to duplicate the packet, clone it before the original is modified.
        skb2 = skb.clone() if count > 1 else None
        # Randomized corruption: flip one bit (checksums completed first).
        if self.corrupt and self.corrupt >= get_crandom(self.corrupt_cor, prng):
            if skb.gso_size:
                first = self._segment(skb)
                if first is None:
                    return self._finish_segs(None, None, prev_len, skb2)
                segs = first.next
                first.next = None
                skb = first
            skb.make_writable()  # skb_unshare()
            if skb.ip_summed == CHECKSUM_PARTIAL and not skb_checksum_help(skb):
                self.qdisc_drop(skb)
                return self._finish_segs(None, segs, prev_len, skb2)
            headlen = skb.tail - skb.data
            if headlen:
                # get_random_u32_below(): the kernel's unseeded RNG, not netem's prng
                entropy = self.entropy
                pos = skb.data + ((entropy.u32() * headlen) >> 32)
                skb.buf[pos] ^= 1 << ((entropy.u32() * 8) >> 32)
        if self.qlen >= self.limit:
            # qdisc_drop_all(): the packet, its other segments and the duplicate
            self.drops += 1
            skb.next = segs
            kfree_skb_list(skb, DropReason.QDISC_DROP)
            if skb2 is not None:
                kfree_skb(skb2, DropReason.QDISC_DROP)
            return NET_XMIT_DROP
        # Duplicate: re-insert at the top of the qdisc tree, since the parent
        # expects only one skb to be queued.
        if skb2 is not None:
            txq = self.dev_queue
            skb2.tc_depth += 1  # prevent duplicating a dup...
            if txq is not None:
                rootq = txq.qdisc
                rootq.enqueue(skb2)
            else:
                kfree_skb(skb2, DropReason.QDISC_DROP)
        self.backlog += qdisc_pkt_len(skb)
        if (
            self.gap == 0  # not doing reordering
            or self.counter < self.gap - 1  # inside last reordering gap
            or self.reorder < get_crandom(self.reorder_cor, prng)
        ):
            delay = self._tabledist(self.latency, self.jitter, self.delay_cor, self.delay_dist)
            now = ktime_get_ns(self.net)
            if self.rate:
                last = self._last_time_to_send()
                if last is not None:
                    # The last packet in the queue is the reference point.
                    delay = max(delay - (last - now), 0)
                    now = last
                delay += self._packet_time_ns(qdisc_pkt_len(skb))
            self.counter += 1
            skb.cb = now + delay
            self._tfifo_enqueue(skb, now + delay)
        else:
            # Reorder: put one out of N packets at the front, with no delay.
            skb.cb = ktime_get_ns(self.net)
            self.counter = 0
            self.reorder_q.appendleft(skb)
            self.qlen += 1
            self.requeues += 1
        return self._finish_segs(skb, segs, prev_len)

    @kernel("netem_enqueue")
    def _finish_segs(
        self, skb: SkBuff | None, segs: SkBuff | None, prev_len: int, skb2: SkBuff | None = None
    ) -> int:
        """Queue the other segments of a corrupted GSO packet (and free a duplicate
        that was not queued). Kernel: netem_enqueue(), label finish_segs."""
        if skb2 is not None:
            kfree_skb(skb2, DropReason.QDISC_DROP)
        if segs is None:
            return NET_XMIT_SUCCESS if skb is not None else NET_XMIT_DROP
        length = skb.tail - skb.data if skb is not None else 0
        nb = 1 if skb is not None else 0
        while segs is not None:
            nxt = segs.next
            segs.next = None
            last_len = segs.tail - segs.data
            rc = self.enqueue(segs)
            if rc != NET_XMIT_SUCCESS:
                if net_xmit_drop_count(rc):
                    self.drops += 1
            else:
                nb += 1
                length += last_len
            segs = nxt
        # Parent qdiscs accounted for one skb of prev_len.
        qdisc_tree_reduce_backlog(self, -(nb - 1), -(length - prev_len))
        return NET_XMIT_SUCCESS

    def _deliver(self, skb: SkBuff) -> SkBuff:
        length = qdisc_pkt_len(skb)
        self.backlog -= length
        bstats_update(self, skb, length)
        return skb

    @kernel("netem_dequeue")
    def dequeue(self) -> SkBuff | None:
        """Release the earliest packet whose time has come, else arm the watchdog.

        Kernel: netem_dequeue().
        """
        while True:
            if self.reorder_q:
                self.qlen -= 1
                return self._deliver(self.reorder_q.popleft())
            if not self.tfifo:
                break
            time_to_send, _, skb = self.tfifo[0]
            now = ktime_get_ns(self.net)
            if self.slot_next and self.slot_next < time_to_send:
                self._get_slot_next(now)
            if time_to_send <= now and self.slot_next <= now:
                heapq.heappop(self.tfifo)
                self.t_len -= 1
                skb.next = None
                if self.slot_next:
                    self.packets_left -= 1
                    self.bytes_left -= qdisc_pkt_len(skb)
                    if self.packets_left <= 0 or self.bytes_left <= 0:
                        self._get_slot_next(now)
                child = self.qdisc
                if child is not None:
                    pkt_len = qdisc_pkt_len(skb)
                    err = child.enqueue(skb)
                    if err != NET_XMIT_SUCCESS:
                        if net_xmit_drop_count(err):
                            self.drops += 1
                        self.backlog -= pkt_len
                        self.qlen -= 1
                        qdisc_tree_reduce_backlog(self, 1, pkt_len)
                    continue
                self.qlen -= 1
                return self._deliver(skb)
            if self.qdisc is not None:
                skb2 = self.qdisc.dequeue()
                if skb2 is not None:
                    self.qlen -= 1
                    return self._deliver(skb2)
            self.watchdog.schedule_ns(max(time_to_send, self.slot_next))
            break
        if self.qdisc is not None:
            skb3 = self.qdisc.dequeue()
            if skb3 is not None:
                self.qlen -= 1
                return self._deliver(skb3)
        return None

    @kernel("netem_reset")
    def reset(self) -> None:
        """Kernel: netem_reset()."""
        while self.reorder_q:
            kfree_skb(self.reorder_q.popleft(), DropReason.QUEUE_PURGE)
        for _, _, skb in self.tfifo:
            kfree_skb(skb, DropReason.QUEUE_PURGE)
        self.tfifo.clear()
        self.t_len = 0
        if self.qdisc is not None:
            qdisc_reset(self.qdisc)
        super().reset()
        self.watchdog.cancel()

    @kernel("netem_destroy")
    def destroy(self) -> None:
        """Kernel: netem_destroy()."""
        self.watchdog.cancel()
        if self.qdisc is not None:
            self.qdisc.destroy()
        super().destroy()

    @kernel("netem_dump")
    def dump(self) -> NetemOptions:
        """Kernel: netem_dump()."""
        cfg = self.slot_config
        slot = None
        if cfg.min_delay or cfg.max_delay or cfg.dist_jitter:
            slot = TcNetemSlot(
                min_delay=cfg.min_delay,
                max_delay=cfg.max_delay,
                max_packets=0 if cfg.max_packets == INT_MAX else cfg.max_packets,
                max_bytes=0 if cfg.max_bytes == INT_MAX else cfg.max_bytes,
                dist_delay=cfg.dist_delay,
                dist_jitter=cfg.dist_jitter,
            )
        a = self.clg
        return NetemOptions(
            qopt=TcNetemQopt(
                latency=min(PSCHED_NS2TICKS(self.latency), _M32),
                limit=self.limit,
                loss=self.loss,
                gap=self.gap,
                duplicate=self.duplicate,
                jitter=min(PSCHED_NS2TICKS(self.jitter), _M32),
            ),
            latency64=self.latency,
            jitter64=self.jitter,
            corr=TcNetemCorr(self.delay_cor.rho, self.loss_cor.rho, self.dup_cor.rho),
            reorder=TcNetemReorder(self.reorder, self.reorder_cor.rho),
            corrupt=TcNetemCorrupt(self.corrupt, self.corrupt_cor.rho),
            rate=TcNetemRate(
                _M32 if self.rate >= 1 << 32 else self.rate,
                self.packet_overhead,
                self.cell_size,
                self.cell_overhead,
            ),
            rate64=self.rate if self.rate >= 1 << 32 else None,
            ecn=self.ecn or None,
            loss_gi=(
                TcNetemGimodel(a[0], a[1], a[2], a[3], a[4])
                if self.loss_model == CLG_4_STATES
                else None
            ),
            loss_ge=(
                TcNetemGemodel(a[0], a[1], a[2], a[3]) if self.loss_model == CLG_GILB_ELL else None
            ),
            slot=slot,
            seed=self.seed,
        )

    # -- the one class --------------------------------------------------------------------
    @kernel("netem_find")
    def cl_find(self, classid: int) -> int:
        """Kernel: netem_find()."""
        return 1

    @kernel("netem_leaf")
    def cl_leaf(self, cl: int) -> Qdisc | None:
        """Kernel: netem_leaf()."""
        return self.qdisc

    @kernel("netem_graft")
    def cl_graft(self, cl: int, new: Qdisc | None) -> Qdisc | None:
        """Kernel: netem_graft()."""
        old = self.qdisc
        self.qdisc = new
        if old is not None:
            qdisc_purge_queue(old)
        return old

    @kernel("netem_walk")
    def cl_walk(self) -> list[int]:
        """Kernel: netem_walk() (a class without a child cannot be dumped)."""
        return [1] if self.qdisc is not None else []

    @kernel("netem_dump_class")
    def cl_dump(self, cl: int) -> ClassDump:
        """Kernel: netem_dump_class()."""
        leaf = self.qdisc.handle if self.qdisc is not None else 0
        return ClassDump(TC_H_MAKE(self.handle, 1), self.handle, leaf)

    def cl_dump_stats(self, cl: int) -> ClassStats | None:
        """netem's class has no statistics of its own."""
        return None
