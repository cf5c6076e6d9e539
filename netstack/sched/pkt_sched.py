"""The traffic-control UAPI: the option and statistics structures ``tc`` and the
kernel exchange over rtnetlink.

Theory of operation: in Linux, ``tc`` parses a command line into netlink
attributes (``TCA_KIND``, ``TCA_OPTIONS`` with a per-discipline payload) and
the kernel answers dumps with the same structures plus statistics. netstack
keeps that split: :mod:`netstack.userspace.iproute2.tc` builds these values from argv
exactly as ``tc`` fills its structs (units already converted: rates in
bytes/s, times in psched ticks or ns, probabilities scaled to ``u32``), the
disciplines in :mod:`netstack.sched` validate and apply them in ``init`` /
``change`` and report them back from ``dump``. A field left ``None`` is an
attribute that was not sent.

Kernel: include/uapi/linux/pkt_sched.h, include/uapi/linux/gen_stats.h.
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = [
    "FQ_CODEL_QUANTUM_MAX",
    "NETEM_DIST_MAX",
    "NETEM_DIST_SCALE",
    "TCQ_PRIO_BANDS",
    "TC_LINKLAYER_ATM",
    "TC_LINKLAYER_ETHERNET",
    "TC_LINKLAYER_UNAWARE",
    "FqCodelClassXstats",
    "FqCodelOptions",
    "FqCodelXstats",
    "NetemOptions",
    "TbfOptions",
    "TcFifoQopt",
    "TcNetemCorr",
    "TcNetemCorrupt",
    "TcNetemGemodel",
    "TcNetemGimodel",
    "TcNetemQopt",
    "TcNetemRate",
    "TcNetemReorder",
    "TcNetemSlot",
    "TcPrioQopt",
    "TcRatespec",
    "TcTbfQopt",
]

TC_LINKLAYER_UNAWARE: Final = 0
TC_LINKLAYER_ETHERNET: Final = 1
TC_LINKLAYER_ATM: Final = 2
TC_LINKLAYER_MASK: Final = 0x0F

TCQ_PRIO_BANDS: Final = 16
TCQ_MIN_PRIO_BANDS: Final = 2

NETEM_DIST_SCALE: Final = 8192
NETEM_DIST_MAX: Final = 16384

FQ_CODEL_QUANTUM_MAX: Final = 1 << 20


@attrs.frozen
class TcRatespec:
    """``struct tc_ratespec``: a rate in bytes/s and how packets are sized against it."""

    cell_log: int = 0
    linklayer: int = TC_LINKLAYER_UNAWARE
    overhead: int = 0
    cell_align: int = 0
    mpu: int = 0
    rate: int = 0


@attrs.frozen
class TcFifoQopt:
    """``struct tc_fifo_qopt`` (pfifo: packets, bfifo: bytes)."""

    limit: int


@attrs.frozen
class TcPrioQopt:
    """``struct tc_prio_qopt`` (also what pfifo_fast dumps)."""

    bands: int
    priomap: tuple[int, ...]


@attrs.frozen
class TcTbfQopt:
    """``struct tc_tbf_qopt``: ``buffer``/``mtu`` in psched ticks, ``limit`` in bytes."""

    rate: TcRatespec
    peakrate: TcRatespec
    limit: int
    buffer: int
    mtu: int


@attrs.frozen
class TbfOptions:
    """The ``TCA_OPTIONS`` nest of tbf (``TCA_TBF_*``)."""

    parms: TcTbfQopt | None
    rate64: int | None = None
    prate64: int | None = None
    burst: int | None = None
    pburst: int | None = None


@attrs.frozen
class TcNetemQopt:
    """``struct tc_netem_qopt``: latency/jitter in psched ticks, probabilities as u32."""

    latency: int = 0
    limit: int = 1000
    loss: int = 0
    gap: int = 0
    duplicate: int = 0
    jitter: int = 0


@attrs.frozen
class TcNetemCorr:
    """``struct tc_netem_corr``."""

    delay_corr: int = 0
    loss_corr: int = 0
    dup_corr: int = 0


@attrs.frozen
class TcNetemReorder:
    """``struct tc_netem_reorder``."""

    probability: int = 0
    correlation: int = 0


@attrs.frozen
class TcNetemCorrupt:
    """``struct tc_netem_corrupt``."""

    probability: int = 0
    correlation: int = 0


@attrs.frozen
class TcNetemRate:
    """``struct tc_netem_rate``: ``rate`` in bytes/s (``~0`` when RATE64 carries it)."""

    rate: int = 0
    packet_overhead: int = 0
    cell_size: int = 0
    cell_overhead: int = 0


@attrs.frozen
class TcNetemSlot:
    """``struct tc_netem_slot``: delays in ns; 0 packets/bytes means unlimited."""

    min_delay: int = 0
    max_delay: int = 0
    max_packets: int = 0
    max_bytes: int = 0
    dist_delay: int = 0
    dist_jitter: int = 0


@attrs.frozen
class TcNetemGimodel:
    """``struct tc_netem_gimodel``: the 4-state loss model's transition probabilities."""

    p13: int
    p31: int
    p32: int
    p14: int
    p23: int


@attrs.frozen
class TcNetemGemodel:
    """``struct tc_netem_gemodel``: Gilbert-Elliott (``h`` is the loss probability in Bad)."""

    p: int
    r: int
    h: int
    k1: int


@attrs.frozen
class NetemOptions:
    """The ``TCA_OPTIONS`` of netem: the qopt struct followed by ``TCA_NETEM_*`` attributes."""

    qopt: TcNetemQopt
    corr: TcNetemCorr | None = None
    reorder: TcNetemReorder | None = None
    corrupt: TcNetemCorrupt | None = None
    rate: TcNetemRate | None = None
    rate64: int | None = None
    ecn: int | None = None
    loss_gi: TcNetemGimodel | None = None
    loss_ge: TcNetemGemodel | None = None
    slot: TcNetemSlot | None = None
    seed: int | None = None
    latency64: int | None = None
    jitter64: int | None = None
    delay_dist: tuple[int, ...] | None = None
    slot_dist: tuple[int, ...] | None = None


@attrs.frozen
class FqCodelOptions:
    """``TCA_FQ_CODEL_*``: times in µs, sizes in bytes; ``None`` = not sent."""

    target: int | None = None
    limit: int | None = None
    interval: int | None = None
    ecn: int | None = None
    flows: int | None = None
    quantum: int | None = None
    ce_threshold: int | None = None
    drop_batch_size: int | None = None
    memory_limit: int | None = None
    ce_threshold_selector: int | None = None
    ce_threshold_mask: int | None = None


@attrs.frozen
class FqCodelXstats:
    """``struct tc_fq_codel_qd_stats`` (``TCA_FQ_CODEL_XSTATS_QDISC``)."""

    maxpacket: int
    drop_overlimit: int
    ecn_mark: int
    new_flow_count: int
    new_flows_len: int
    old_flows_len: int
    ce_mark: int
    memory_usage: int
    drop_overmemory: int


@attrs.frozen
class FqCodelClassXstats:
    """``struct tc_fq_codel_cl_stats`` (``TCA_FQ_CODEL_XSTATS_CLASS``): times in µs."""

    deficit: int
    ldelay: int
    count: int
    lastcount: int
    dropping: int
    drop_next: int
