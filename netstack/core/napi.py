"""NAPI: batched receive, one Trio task per NAPI instance.

Theory of operation: a driver's receive ring is drained by its NAPI poll
function, which takes up to ``budget`` packets and hands each up the stack
(``napi_gro_receive`` → ``netif_receive_skb``) synchronously. The task around
it is the only place receive awaits: it parks until the driver calls
:meth:`Napi.schedule` (kernel: ``napi_schedule`` from the interrupt; here a
direct ``trio.lowlevel.reschedule`` of the one parked task, which costs less
than a ParkingLot on this per-packet path), runs a
poll, and either completes (fewer than ``weight`` packets: GRO is flushed, the
task parks again) or, with work left, flushes old GRO flows and yields once
before the next poll — the softirq's budget.

A device whose receive the kernel runs without NAPI sets ``rx_per_xmit``
(a veth without GRO: ``veth_xmit`` hands each skb to ``__netif_rx``). On a
real machine the reader of a TCP socket reads on another CPU while the
softirq goes on receiving, and TCP's ACKs depend on when it reads. netstack
runs one thing at a time, so in functional mode such a poll
(``yield_on_data``) ends after a packet that brought a TCP socket in-order
data (``tcp_data_ready`` counts ``data_ready_count``; the driver checks it
after each packet and sets ``cut_short``): the woken reader runs before the
next packet is received, then the next poll goes on. Other packets (ACKs,
UDP) are taken a budget at a time. That is a NAPI task's poll (a softirq as
if on a CPU of its own): :func:`do_softirq` at a transmit's
``local_bh_enable`` takes the whole list a budget at a time, as the kernel's
``process_backlog`` does on the sender's CPU, where the reader cannot run in
between. Timed mode keeps the budget: there the CPU clocks decide when the
reader runs.

**Chained polls** (a lab opened with ``chain_polls=True``; functional mode
only). The kernel's ``net_rx_action`` does not stop at the instances that were
scheduled when it started: ``____napi_schedule`` puts an instance scheduled
meanwhile (a packet forwarded to a veth schedules its peer's NAPI) on the same
``poll_list``, and the loop polls it before it returns, until
``netdev_budget`` packets are done; ksoftirqd then goes on with the rest. By
default every instance here is its own Trio task, woken by
:meth:`Napi.schedule`: a ping through a bridge crosses eight veths, eight task
steps, each a pass through Trio's run loop. With chained polls the first
instance scheduled wakes its own task, the *runner*, and every instance
scheduled until that task has emptied the list is put on one list
(the lab's :class:`RxChain`, ``net.rx_chain`` of each of its hosts: the
``poll_list``) instead of waking its task; the runner
polls itself and then the list in the order the instances were scheduled,
those scheduled meanwhile included, and yields after every
``net.core.netdev_budget`` packets (its host's), as ksoftirqd would, before it
goes on. An instance still scheduled after its poll (a full poll, or one cut
short after TCP data) is woken to its own task, which polls it again after a
yield, as it does unchained. Every host's poll is its own NAPI's, on its own
CPU; the hosts are separate machines on one virtual instant, so this changes
the order in which an instant's packets are handled: a lab's pings, ARPs and
floods are the same (``tests/core/test_lab_scale.py`` compares them both
ways), while TCP's segment and ACK pattern depends on that order, as it does
on ``shuffle``; the flooded ARP requests a host hears at an instant are still
one poll. The list is the lab's (``net.rx_chain`` of its hosts): another
lab's instances keep their own tasks. In such a lab an instance's task is
started at its first need (:meth:`Net.start_napi` marks it ``unstarted``;
:meth:`schedule` or a wake starts it): an instance only ever polled from the
list, as most of a large lab's are, never has a task (fewer tasks in a
10,000-host fabric, and a task step less for each first wake).

**Polls at local_bh_enable** (functional mode's default; a lab opened with
``polls_at_bh_enable=False``, or a host's ``net.polls_at_bh_enable`` set
False, wakes each instance's task instead: each host's NAPI as if on a CPU of
its own). In the kernel a transmit does not
wake anything: ``veth_xmit`` (or ``netif_rx`` → ``enqueue_to_backlog``) puts
the peer's NAPI instance on this CPU's ``poll_list`` and raises
``NET_RX_SOFTIRQ``, and the ``rcu_read_unlock_bh()`` at the end of
``__dev_queue_xmit`` (``local_bh_enable``) runs ``do_softirq`` →
``net_rx_action`` right there, in the sender's context: the peer's poll, its
``ip_rcv``, ``udp_rcv`` or ``tcp_v4_rcv``, and whatever that transmits in turn
(an ACK back to the sender, whose instance joins the same ``poll_list`` and is
polled in the same loop), until ``netdev_budget`` packets are done; the rest
goes to ksoftirqd. Here :func:`netstack.core.dev.dev_queue_xmit` does the same:
outside softirq context (a socket call, a timer's callback, a command) it
disables bottom halves (:data:`BH` ``.state``), and :meth:`Napi.schedule`
then puts an instance on :data:`BH`'s ``poll_list`` instead of waking its
task; at the end the transmit runs :func:`do_softirq` on that list in the
caller's task. A NAPI task's own poll is softirq context (softirqs do not
nest): what it transmits schedules instances as before (their tasks, or the
lab's chained list). A poll here is never cut short after TCP data (a veth
without GRO: the reader runs after the loop, as on the sender's CPU; since
the 2023 revert of "softirq: Let ksoftirqd do its job" ``local_bh_enable``
runs pending ``NET_RX`` even with ksoftirqd awake). An instance with work
left after a full poll and those left when the budget is spent are woken to
their tasks, as ksoftirqd would run them. A TCP socket is owned by
the call that transmits (``lock_sock``): its own segments that come back in
that loop wait in its backlog until ``release_sock`` (netstack/tcp/sock.py,
"The socket lock"), which runs ``tcp_release_cb`` with bottom halves
disabled, as the kernel's holds ``spin_lock_bh(slock)`` across it: what the
deferred work transmits is polled after the socket is given up. Timer and
hrtimer callbacks are softirq context too (``run_timer_softirq``; an
hrtimer's ``irq_exit``): a base runs a round of due callbacks with bottom
halves disabled and then :func:`do_softirq` on what they scheduled, as
``__do_softirq`` goes from ``TIMER`` on to ``NET_RX`` (a retransmit's ACK is
not received inside ``tcp_retransmit_timer``). A section that raises hands
what is on the list to the instances' tasks (:func:`wakeup_softirqd`): the
list is empty whenever bottom halves are enabled, and nothing of one run or
lab stays on it. A poll that raises in :func:`do_softirq` (a bug in receive
code: a capture callback, a handler) is the receiver's failure, as a kernel
oops in ``net_rx_action`` is the softirq's and not the sender's system
call's: the exception goes to that instance's own task, which raises it with
its traceback and so fails the lab, while the transmit whose
``local_bh_enable`` ran the poll returns normally (what was being received
is lost; the rest of the list goes to the instances' tasks). Timed mode keeps
its tasks while its model measures (``model.running``, inside
``measuring()``): its CPU model decides where a softirq runs. Outside
``measuring()`` a timed lab polls at ``local_bh_enable`` as a functional one
does (when its hosts' ``net.polls_at_bh_enable`` is set, the default).

**One lab-running thread per process.** :data:`BH` (the bottom-half state
and the poll list) and ``data_ready_count`` are the process's, not a thread's: two labs run by
``trio.run`` in two threads at once interfere (one's transmit finds the
other's state: an instance polled in the wrong lab, a send failing with
``BlockingIOError``). Run labs one thread at a time: any number of labs in
one ``trio.run``, or one ``trio.run`` after another.

Kernel: include/linux/netdevice.h (struct napi_struct), net/core/dev.c
(napi_schedule, net_rx_action, napi_poll, napi_complete_done), kernel/softirq.c
(do_softirq, __local_bh_enable_ip, wakeup_softirqd).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs
import trio

from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.core.skbuff import SkBuff

__all__ = [
    "BH",
    "NAPI_POLL_WEIGHT",
    "GroEngine",
    "Napi",
    "NapiStats",
    "SoftirqState",
    "do_softirq",
    "wakeup_softirqd",
]

NAPI_POLL_WEIGHT: Final = 64

# sk_data_ready() calls so far: a NAPI instance polling packet by packet
# (rx_per_xmit) ends its poll after a packet that brought a socket data
data_ready_count = 0


# BH.state: what a transmit finds (the module doc's "Polls at local_bh_enable")
BH_ENABLED: Final = 0  # process context: the outermost transmit runs the softirq at its end
BH_DISABLED: Final = 1  # local_bh_disable()d or do_softirq running: napi_schedule queues
IN_NAPI_TASK: Final = 2  # a NAPI task's poll (softirq context): napi_schedule wakes, as before


class SoftirqState:
    """The CPU's bottom-half state and ``NET_RX`` poll list as a transmit sees it (the
    module doc's "Polls at local_bh_enable"; kernel: the softirq bits of
    ``preempt_count`` and ``softnet_data.poll_list``). One for the process: a Trio
    run does one thing at a time, and every section that sets it ends before an
    await; two threads running labs at once would share it (the module doc's
    "One lab-running thread per process"). Whether a scheduled instance joins the list is its host's
    (``net.polls_at_bh_enable``)."""

    __slots__ = ("poll_list", "state")

    def __init__(self) -> None:
        self.state = BH_ENABLED
        self.poll_list: deque[Napi] = deque()


BH: Final = SoftirqState()


@kernel(
    "kernel/softirq.c",
    "do_softirq",
    "__do_softirq",
    "net/core/dev.c",
    "net_rx_action",
    "napi_poll",
    "__napi_poll",
    "napi_complete_done",
    "include/net/gro.h",
    "gro_flush",
)
def do_softirq(net: Net) -> None:
    """Poll the instances a transmit put on the poll list, those they schedule
    meanwhile included, until *net*'s ``netdev_budget`` packets are done (*net*: the
    host whose call or timer runs the softirq; a spent budget counts its CPU's
    ``softnet_data.time_squeeze``, as ``net_rx_action`` does); an
    instance with work left and those left at the end go to their tasks
    (ksoftirqd: :func:`wakeup_softirqd`, also when a poll raises: its exception
    goes to its instance's task, which raises it, and this returns). Called at a
    ``local_bh_enable``: ``dev_queue_xmit``'s, ``release_sock``'s, and a timer
    base's after a round of callbacks. Functional mode only; keep in step with
    :meth:`Napi._net_rx_action`.

    Each poll is :meth:`Napi.poll_once` (``napi_poll`` / ``__napi_poll`` and the
    ``napi_complete_done`` of a poll that did less than its weight) written out
    for a host without a timed model, the case of every poll here (a frame less
    a poll, and no ``run_on`` call: a transmit polls the peer once per packet);
    keep the two in step. A host with a model (a timed lab before its run) calls
    it.

    Kernel: kernel/softirq.c, do_softirq() / __do_softirq(); net/core/dev.c,
    net_rx_action() / napi_poll() / __napi_poll() / napi_complete_done();
    include/net/gro.h, gro_flush().
    """
    bh = BH
    poll_list = bh.poll_list
    bh.state = BH_DISABLED  # in softirq: what the polls transmit queues here
    budget = net.netdev_budget
    cpu = net.cpus.current  # this softirq's CPU (a poll of another of its instances moves current)
    napi: Napi | None = None
    try:
        while poll_list:
            napi = poll_list.popleft()
            if napi.dead or not napi.scheduled:  # netif_napi_del() meanwhile
                continue
            cpus = napi.cpus
            if cpus.model is not None:
                budget -= napi.poll_once()
            else:
                # Napi.poll_once() without a model, written out (keep in step):
                # run_on() (the current CPU; no context to book) and the poll
                cpus.current = cpus.cpus[napi.cpu % len(cpus.cpus)]
                napi.yield_on_data = False  # at a local_bh_enable: the reader waits
                weight = napi.weight
                work = napi.poll(napi, weight)
                napi.polls += 1
                napi.packets += work
                if napi.cut_short:
                    napi.cut_short = False  # still scheduled: its task polls again
                elif work < weight:
                    napi.scheduled = False  # napi_complete_done()
                    gro = napi.gro
                    if gro is not None and gro.bitmask:  # gro_flush(): gro->bitmask, held skbs
                        gro.flush(napi, False)
                else:
                    napi.full_polls += 1
                    gro = napi.gro
                    if gro is not None and gro.bitmask:  # __napi_poll(): old flows (gro_flush)
                        gro.flush(napi, True)
                budget -= work
            if napi.scheduled:
                napi._wake()  # work left: its own task polls again after a yield
            if budget <= 0:  # the softirq window is spent: punt to ksoftirqd
                net.softnet[cpu.id].time_squeeze += 1
                break
    except Exception as exc:
        if napi is None or napi.dead:
            raise
        # a bug in receive code (an oops in this softirq): the instance's own task
        # raises it, not the transmit whose local_bh_enable ran the poll
        napi._oops(exc)
    except BaseException:
        if napi is not None and napi.scheduled and not napi.dead:
            napi._wake()  # the poll raised: still scheduled, its task polls it again
        raise
    finally:
        bh.state = BH_ENABLED
        if poll_list:  # the budget spent, or a poll raised: ksoftirqd does the rest
            wakeup_softirqd()


@kernel("kernel/softirq.c", "wakeup_softirqd")
def wakeup_softirqd() -> None:
    """Hand every instance on the poll list to its own task (ksoftirqd): the
    budget of :func:`do_softirq` is spent, or a section with bottom halves
    disabled raised, and the list must not outlive it.

    Kernel: kernel/softirq.c, wakeup_softirqd().
    """
    poll_list = BH.poll_list
    while poll_list:
        napi = poll_list.popleft()
        if not napi.dead and napi.scheduled:
            napi._wake()


class RxChain:
    """The NAPI instances scheduled while a runner is woken or polls (the module
    doc's "Chained polls"; kernel: ``softnet_data.poll_list`` as ``net_rx_action``
    walks it). One per lab opened with ``chain_polls=True``, as its hosts'
    ``net.rx_chain``: another lab's instances never join it."""

    __slots__ = ("pending", "runner")

    def __init__(self) -> None:
        self.runner: Napi | None = None  # woken to poll the list: schedule() appends
        self.pending: deque[Napi] = deque()

    def reset(self) -> None:
        """The lab closed: nothing is left to poll (its instances are dead)."""
        self.runner = None
        self.pending.clear()


@attrs.frozen
class NapiStats:
    """Counters of one NAPI instance."""

    polls: int
    packets: int
    full_polls: int
    schedules: int


class GroEngine(Protocol):
    """What NAPI and ``napi_gro_receive`` call of the GRO layer, which installs one per
    instance (``net.gro_factory``; kernel: the ``struct gro_node`` of a ``napi_struct``).
    """

    bitmask: int
    """The hash buckets that hold skbs (``gro_bitmask``): 0, nothing to flush."""

    def receive(self, napi: Napi, skb: SkBuff) -> int:
        """``dev_gro_receive``: hold, merge or pass on *skb*."""

    def flush(self, napi: Napi, flush_old: bool) -> None:
        """``napi_gro_flush``: pass on the held skbs (only the old ones if *flush_old*)."""


class Napi:
    """One NAPI context (kernel: ``struct napi_struct``).

    Args:
        dev: the device it belongs to.
        poll: ``poll(napi, budget) -> work_done``; synchronous, never awaits.
        weight: the budget per poll (``NAPI_POLL_WEIGHT``).
        cpu: the CPU its softirq runs on.
    """

    def __init__(
        self,
        dev: NetDevice,
        poll: Callable[[Napi, int], int],
        weight: int = NAPI_POLL_WEIGHT,
        cpu: int = 0,
        name: str = "",
    ) -> None:
        self.dev = dev
        self.net = dev.net
        self.cpus = dev.net.cpus  # its host's CPUs (a Net keeps its CpuSet)
        self.poll = poll
        self.weight = weight
        self.cpu = cpu
        self.name = name or f"napi/{dev.name}"
        self.scheduled = False  # NAPI_STATE_SCHED
        self.dead = False  # netif_napi_del() done: the task ends
        self.gro: GroEngine | None = None  # the GRO engine, when the gro layer installs one
        self.priv: Any = None  # driver data (the ring this instance drains)
        self._waiting: trio.lowlevel.Task | None = None  # the task parked in run()
        # a chaining lab's instance whose task starts at its first need (Net.start_napi;
        # the module doc's "Chained polls"): woken while unstarted, its task is started
        self.unstarted = False
        self.polls = 0
        self.packets = 0
        self.full_polls = 0
        self.schedules = 0
        # the kernel has no NAPI here: a poll ends after in-order TCP data (module doc)
        self.rx_per_xmit = False
        self.yield_on_data = False  # this poll: the driver stops after such data
        self.cut_short = False  # the driver stopped so

    @kernel("napi_schedule")
    def schedule(self) -> None:
        """Ask for a poll (idempotent while scheduled).

        ``veth_xmit`` (netstack/drivers/veth.py) has the poll-list case written
        out: keep the two in step.

        Kernel: napi_schedule().
        """
        if not self.scheduled:
            self.scheduled = True
            self.schedules += 1
            if BH.state == BH_DISABLED and self.net.polls_at_bh_enable:
                # a transmit's local_bh_enable (or the do_softirq it runs) polls it
                # (the module doc's "Polls at local_bh_enable"); timed mode wakes
                model = self.cpus.model
                if model is None or not model.running:
                    BH.poll_list.append(self)
                    return
            chain = self.net.rx_chain
            if chain is not None:  # chained polls (module doc; never in timed mode)
                if chain.runner is not None:
                    chain.pending.append(self)  # the runner polls it
                    return
                chain.runner = self  # this task polls what is scheduled meanwhile
            task = self._waiting  # _wake(), inline: a frame less a schedule
            if task is not None:
                self._waiting = None
                trio.lowlevel.reschedule(task)
            elif self.unstarted:
                self.unstarted = False
                self.net.start_deferred(self.run, self.name)

    @kernel(
        "net/core/dev.c",
        "napi_poll",
        "__napi_poll",
        "napi_complete_done",
        "include/net/gro.h",
        "gro_flush",
    )
    def poll_once(self) -> int:
        """Run one poll synchronously (the body of the task; also for tests).

        :func:`do_softirq` has this written out for a host without a timed
        model: keep the two in step.

        The GRO flush is ``gro_flush``'s: nothing without held skbs (6.x, a static
        inline of gro.h that tests ``gro->bitmask``; earlier kernels:
        ``napi_complete_done`` and ``__napi_poll`` test ``n->gro_bitmask``).

        Kernel: net/core/dev.c, napi_poll() / __napi_poll() / napi_complete_done();
        include/net/gro.h, gro_flush().
        """
        cpus = self.cpus
        cpus.run_on(self.cpu)
        # functional mode: a poll that took in-order TCP data ends there (see above),
        # unless do_softirq polls at a transmit's local_bh_enable: the reader runs
        # after it, as on the kernel's one CPU (process_backlog takes the list)
        model = cpus.model
        self.yield_on_data = (
            self.rx_per_xmit and BH.state != BH_DISABLED and (model is None or not model.running)
        )
        weight = self.weight
        work = self.poll(self, weight)
        self.polls += 1
        self.packets += work
        if self.cut_short:
            self.cut_short = False
            return work  # still scheduled: run() yields, then polls again
        if work < weight:
            self.scheduled = False  # napi_complete_done()
            gro = self.gro
            if gro is not None and gro.bitmask:  # gro_flush(): gro->bitmask, held skbs
                gro.flush(self, False)
        else:
            self.full_polls += 1
            gro = self.gro
            if gro is not None and gro.bitmask:  # __napi_poll(): old flows (gro_flush)
                gro.flush(self, True)
        return work

    @kernel("netif_napi_del")
    def kill(self) -> None:
        """Remove this instance; its task returns. Kernel: netif_napi_del()."""
        self.dead = True
        self.scheduled = False
        self._wake()

    def _wake(self) -> None:
        # (schedule() has this written out: keep the two in step)
        task = self._waiting
        if task is not None:
            self._waiting = None
            trio.lowlevel.reschedule(task)
        elif self.unstarted and not self.dead:  # its first need: the task starts
            self.unstarted = False
            self.net.start_deferred(self.run, self.name)

    def _oops(self, exc: Exception) -> None:
        """A poll :func:`do_softirq` ran raised *exc*: hand it to this instance's
        task, whose next poll raises it (with its traceback) instead of polling,
        so it fails the lab from the receive side (the module doc's "Polls at
        local_bh_enable"). The poll is swapped rather than a flag tested: a task's
        poll stays as it was."""
        real = self.poll

        def oops(napi: Napi, budget: int) -> int:
            napi.poll = real
            raise exc

        self.poll = oops
        self.scheduled = True  # (a GRO flush may raise after napi_complete_done)
        self._wake()

    def _abort_park(self, _: object) -> trio.lowlevel.Abort:
        """The parked task was cancelled (the lab closes): nothing to wake."""
        self._waiting = None
        return trio.lowlevel.Abort.SUCCEEDED

    async def run(self) -> None:
        """The NAPI task: park until scheduled, poll, yield between full polls."""
        chain = self.net.rx_chain  # set before the lab starts its hosts' tasks
        try:
            while not self.dead:
                if chain is not None and chain.runner is self:  # chained polls (module doc)
                    while self._chained_polls(chain):
                        await trio.lowlevel.checkpoint()  # the budget spent: ksoftirqd
                    if self.scheduled:  # a full poll: let other tasks run first
                        await trio.lowlevel.checkpoint()
                    continue
                if not self.scheduled:
                    # park until schedule() or kill() (what ParkingLot.park does), inline
                    # with a bound method to abort: a parked task holds no coroutine and
                    # closure of its own (276 bytes less; a 10,000-host lab parks 21,000)
                    if self._waiting is not None:
                        raise RuntimeError(f"{self.name}: two tasks run one NAPI instance")
                    self._waiting = trio.lowlevel.current_task()
                    await trio.lowlevel.wait_task_rescheduled(self._abort_park)
                    continue
                bh = BH
                bh.state = IN_NAPI_TASK  # softirq context: a transmit runs no softirq
                try:
                    self.poll_once()
                finally:
                    bh.state = BH_ENABLED
                model = self.net.cpus.model
                if model is not None and model.running:
                    # timed mode: the CPU is busy until its clock; then poll again
                    await model.wait(self.net.cpus[self.cpu])
                elif self.scheduled:  # a full poll: let other tasks run first
                    await trio.lowlevel.checkpoint()
        finally:
            if chain is not None and chain.runner is self:  # killed or cancelled first
                chain.runner = None
                pending = chain.pending
                while pending:  # the first live instance's task takes the list over
                    napi = pending.popleft()  # (it polls itself first: off the list)
                    if not napi.dead and napi.scheduled:
                        chain.runner = napi
                        napi._wake()
                        break

    def _chained_polls(self, chain: RxChain) -> bool:
        """:meth:`_net_rx_action` in softirq context (a transmit in it runs no softirq)."""
        bh = BH
        bh.state = IN_NAPI_TASK
        try:
            return self._net_rx_action(chain)
        finally:
            bh.state = BH_ENABLED

    @kernel("net/core/dev.c", "net_rx_action")
    def _net_rx_action(self, chain: RxChain) -> bool:
        """The runner: poll this instance if scheduled, then the list until it is
        empty (chained polls, the module doc); True when ``netdev_budget`` packets
        were done first (the runner yields, then goes on).
        Kernel: net/core/dev.c, net_rx_action()."""
        budget = self.net.netdev_budget
        pending = chain.pending
        if self.scheduled:
            budget -= self.poll_once()
        while pending:
            if budget <= 0:  # the softirq window is spent: the runner yields (ksoftirqd)
                net = self.net
                net.softnet[self.cpu % len(net.softnet)].time_squeeze += 1
                return True
            napi = pending.popleft()
            if napi.dead or not napi.scheduled:  # netif_napi_del() meanwhile
                continue
            budget -= napi.poll_once()
            if napi.scheduled and napi is not self:
                napi._wake()  # work left: its own task polls again after a yield
        chain.runner = None
        return False

    def statistics(self) -> NapiStats:
        """Poll counters."""
        return NapiStats(self.polls, self.packets, self.full_polls, self.schedules)

    def __repr__(self) -> str:
        return f"<Napi {self.name} scheduled={self.scheduled}>"
