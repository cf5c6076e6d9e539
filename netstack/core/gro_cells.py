"""GRO cells: per-CPU NAPI contexts a virtual device receives through.

Theory of operation: a tunnel decapsulates in the softirq of the NIC that
received the outer packet. Instead of calling the stack recursively it queues
the inner packet on a per-CPU *cell* of the tunnel device and schedules that
cell's NAPI, whose poll hands each skb to ``napi_gro_receive`` — so inner
flows can be coalesced again (once a GRO engine is installed on the Net; until
then ``napi_gro_receive`` delivers each skb as it is). A cloned skb, or a
device without ``NETIF_F_GRO``, goes to ``netif_rx`` instead; a cell holding
more than ``netdev_max_backlog`` skbs drops (``rx_dropped``).

Kernel: net/core/gro_cells.c.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from netstack.core.dev import napi_gro_receive, netif_rx
from netstack.core.features import NETIF_F_GRO
from netstack.core.napi import Napi
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.sites import TIMED, kernel, spend

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = ["GroCells", "gro_cells_receive"]


class GroCells:
    """The cells of one device (kernel: ``struct gro_cells``)."""

    def __init__(self, dev: NetDevice) -> None:
        self.dev = dev
        self.queues: list[collections.deque[SkBuff]] = []
        self.napis: list[Napi] = []
        for cpu in range(len(dev.net.softnet)):
            queue: collections.deque[SkBuff] = collections.deque()
            napi = Napi(dev, _gro_cell_poll, cpu=cpu, name=f"{dev.net.name}/gro_cell/{dev.name}")
            napi.priv = queue
            self.queues.append(queue)
            self.napis.append(napi)
            dev.napi_list.append(napi)
            dev.net.start_napi(napi)

    @kernel("gro_cells_destroy")
    def destroy(self) -> None:
        """Kernel: gro_cells_destroy()."""
        for napi, queue in zip(self.napis, self.queues, strict=True):
            napi.kill()
            while queue:
                kfree_skb(queue.popleft(), DropReason.QUEUE_PURGE)
        self.napis = []
        self.queues = []


@kernel("net/core/gro_cells.c", "gro_cell_poll")
def _gro_cell_poll(napi: Napi, budget: int) -> int:
    """Kernel: net/core/gro_cells.c, gro_cell_poll()."""
    if TIMED:
        spend("gro_cell_poll")
    queue: collections.deque[SkBuff] = napi.priv
    work = 0
    while queue and work < budget:
        napi_gro_receive(napi, queue.popleft())
        work += 1
    return work


@kernel("net/core/gro_cells.c", "gro_cells_receive", "skb_cloned")
def gro_cells_receive(cells: GroCells, skb: SkBuff) -> int:
    """Queue *skb* on this CPU's cell (or ``netif_rx`` it). Returns NET_RX_SUCCESS/DROP.

    Kernel: net/core/gro_cells.c, gro_cells_receive(); skb_cloned() inline.
    """
    if TIMED:
        spend("gro_cells_receive")
    dev = skb.dev
    assert dev is not None
    queues = cells.queues
    ref = skb._dataref  # skb_cloned(), inline
    if not queues or (ref is not None and ref[0] > 1) or not dev.features & NETIF_F_GRO:
        return netif_rx(skb)
    net = dev.net
    cpu = net.cpus.current.id
    queue = queues[cpu]
    n = len(queue)
    if n > net.netdev_max_backlog:
        dev.stats.rx_dropped += 1
        kfree_skb(skb, DropReason.CPU_BACKLOG)
        return 1
    queue.append(skb)
    if not n:
        cells.napis[cpu].schedule()
    return 0
