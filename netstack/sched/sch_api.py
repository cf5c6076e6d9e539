"""The qdisc and class configuration API: what ``tc`` asks of the kernel.

Theory of operation: ``tc`` sends rtnetlink requests — ``RTM_NEWQDISC`` with
``NLM_F_CREATE``/``NLM_F_EXCL``/``NLM_F_REPLACE`` flags for add, replace,
change and link, ``RTM_DELQDISC`` for delete — naming a device, a parent
(``root`` or a class ``major:minor``), a handle and a kind with options.
:func:`tc_modify_qdisc` decides, exactly as the kernel's function of the
same name, whether the request changes an existing qdisc or creates a new
one and grafts it in place of the old (which is then destroyed, its queued
packets dropped and counted as ``QUEUE_PURGE``). Every check happens before
anything changes, so a refused request leaves the tree as it was; refusals
carry the kernel's extack text (``Error: …``) or its errno
(``RTNETLINK answers: …``), as ``tc`` prints them.

A root qdisc is grafted with the device deactivated and reactivated around
it (``dev_deactivate``/``dev_activate``); deleting the root leaves
``noop``, and activation then attaches the default qdisc again
(``net.core.default_qdisc``, or noqueue for ``IFF_NO_QUEUE`` devices).

Dumps (:func:`tc_dump_qdisc`, :func:`tc_dump_tclass`) return what
``RTM_GETQDISC``/``RTM_GETTCLASS`` answer: handle, parent, reference count,
options, counters and the discipline's extra statistics.

Kernel: net/sched/sch_api.c, net/sched/sch_generic.c (dev_graft_qdisc,
qdisc_create_dflt, qdisc_put).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

import attrs

from netstack.core.dev import dev_activate, dev_deactivate
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import DEFAULT_TX_QUEUE_LEN, IFF_NO_QUEUE, IFF_UP
from netstack.core.qdisc import (
    TC_H_INGRESS,
    TC_H_MAJ,
    TC_H_MAKE,
    TC_H_MIN,
    TC_H_ROOT,
    TCQ_F_BUILTIN,
    TCQ_F_INGRESS,
    TCQ_F_INVISIBLE,
    TCQ_F_ONETXQUEUE,
    ClassDump,
    ClassStats,
    NoqueueQdisc,
    Qdisc,
    QdiscStats,
    qdisc_lookup,
    qdisc_tree,
)
from netstack.errors import ConfigError
from netstack.sites import kernel
from netstack.wire.rtnetlink import NLM_F_APPEND, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice, NetdevQueue

__all__ = [
    "NLM_F_APPEND",
    "NLM_F_CREATE",
    "NLM_F_EXCL",
    "NLM_F_REPLACE",
    "ClassInfo",
    "QdiscInfo",
    "qdisc_create",
    "qdisc_graft",
    "qdisc_put",
    "tc_ctl_tclass",
    "tc_del_qdisc",
    "tc_dump_qdisc",
    "tc_dump_tclass",
    "tc_modify_qdisc",
]


@attrs.frozen
class QdiscInfo:
    """One qdisc as a dump reports it (``tcmsg`` + ``TCA_*``)."""

    ifindex: int
    kind: str
    handle: int
    parent: int
    refcnt: int  # tcm_info
    options: Any
    stats: QdiscStats
    xstats: Any


@attrs.frozen
class ClassInfo:
    """One class as a dump reports it."""

    ifindex: int
    kind: str
    dump: ClassDump
    stats: ClassStats | None


def _extack(msg: str, err: int) -> ConfigError:
    return ConfigError(f"Error: {msg}.", err)


def _rtnl(err: int) -> ConfigError:
    return ConfigError(f"RTNETLINK answers: {os.strerror(err)}", err)


class _SchedNet:
    """Per-Net state of the qdisc API (the kernel's is global)."""

    __slots__ = ("autohandle",)

    def __init__(self) -> None:
        self.autohandle = TC_H_MAKE(0x80000000, 0)


def _sched_net(net: Net) -> _SchedNet:
    return _SCHED_NET.get_or_create(net, _SchedNet)


_SCHED_NET: NetKey[_SchedNet] = NetKey("sched")


@kernel("qdisc_alloc_handle")
def qdisc_alloc_handle(dev: NetDevice) -> int:
    """The next free ``8001:``-style handle of *dev*. Kernel: qdisc_alloc_handle()."""
    state = _sched_net(dev.net)
    for _ in range(0x8000):
        state.autohandle = (state.autohandle + TC_H_MAKE(0x10000, 0)) & 0xFFFFFFFF
        if state.autohandle == TC_H_MAKE(TC_H_ROOT, 0):
            state.autohandle = TC_H_MAKE(0x80000000, 0)
        if qdisc_lookup(dev, state.autohandle) is None:
            return state.autohandle
    return 0


@kernel("net/sched/sch_generic.c", "qdisc_put", "__qdisc_destroy")
def qdisc_put(q: Qdisc) -> None:
    """Drop a reference; destroy *q* (freeing what it holds) on the last one.

    Kernel: net/sched/sch_generic.c, qdisc_put() / __qdisc_destroy().
    """
    if q.flags & TCQ_F_BUILTIN:
        return
    q.refcnt -= 1
    if q.refcnt <= 0:
        q.destroy()


@kernel("net/sched/sch_api.c", "qdisc_create")
def qdisc_create(
    dev: NetDevice, txq: NetdevQueue, parent: int, handle: int, kind: str | None, options: Any
) -> Qdisc:
    """Allocate and initialise a qdisc of *kind*; nothing is attached yet.

    Kernel: net/sched/sch_api.c, qdisc_create().
    """
    net = dev.net
    factory = net.qdisc_ops.get(kind) if kind is not None else None
    if factory is None:
        raise _extack("Specified qdisc kind is unknown", errno.ENOENT)
    sch = factory(net, txq, 0, parent)
    if handle == TC_H_INGRESS:
        if not sch.flags & TCQ_F_INGRESS:
            raise _extack(
                "Specified parent ID is reserved for ingress and clsact Qdiscs", errno.EINVAL
            )
    else:
        if handle == 0:
            handle = qdisc_alloc_handle(dev)
            if handle == 0:
                raise _extack("Maximum number of qdisc handles was exceeded", errno.ENOSPC)
        if dev.num_tx_queues == 1:
            sch.flags |= TCQ_F_ONETXQUEUE
    sch.handle = handle
    # Users once got IFF_NO_QUEUE behaviour by setting txqueuelen 0; undo that.
    if dev.priv_flags & IFF_NO_QUEUE and dev.tx_queue_len == 0:
        dev.tx_queue_len = DEFAULT_TX_QUEUE_LEN
        dev.log.info("tx_queue_len_zero", msg=f"{dev.name}: Caught tx_queue_len zero misconfig")
    try:
        sch.init(options)
    except Exception:
        sch.destroy()
        raise
    return sch


@kernel("net/sched/sch_api.c", "qdisc_change")
def qdisc_change(sch: Qdisc, options: Any) -> None:
    """Kernel: net/sched/sch_api.c, qdisc_change()."""
    if options is None:
        return
    if not sch.has_change:
        raise _extack("Change operation not supported by specified qdisc", errno.EINVAL)
    sch.change(options)


@kernel("qdisc_graft", "dev_graft_qdisc")
def _graft_root(dev: NetDevice, new: Qdisc | None) -> None:
    """Install *new* (None: nothing) as the root of every tx queue.

    Kernel: qdisc_graft() with parent NULL, dev_graft_qdisc().
    """
    net = dev.net
    up = bool(dev.flags & IFF_UP)
    if up:
        dev_deactivate(dev)
    for i, txq in enumerate(dev.tx_queues):
        old = txq.qdisc_sleeping
        txq.qdisc_sleeping = new if new is not None else net.noop_qdisc
        txq.qdisc = net.noop_qdisc
        if new is not None and i > 0:
            new.refcnt += 1
        qdisc_put(old)
    old = dev.qdisc
    if new is not None:
        new.refcnt += 1
    dev.qdisc = new if new is not None else net.noop_qdisc
    qdisc_put(old)
    if up:
        dev_activate(dev)


@kernel("net/sched/sch_api.c", "qdisc_graft")
def qdisc_graft(
    dev: NetDevice, parent: Qdisc | None, classid: int, new: Qdisc | None, old: Qdisc | None
) -> None:
    """Attach *new* to class *classid* of *parent*, or as *dev*'s root.

    Kernel: net/sched/sch_api.c, qdisc_graft().
    """
    if parent is None:
        if new is not None:
            new.depth = 0
        _graft_root(dev, new)
        return
    if not parent.classful:
        raise _rtnl(errno.EOPNOTSUPP)
    cl = parent.cl_find(classid)
    if not cl:
        raise _extack("Specified class not found", errno.ENOENT)
    if isinstance(new, NoqueueQdisc):
        raise _extack("Cannot assign noqueue to a class", errno.EINVAL)
    if new is not None and parent.depth >= 7:
        raise _extack("Qdisc hierarchy is too deep", errno.E2BIG)
    replaced = parent.cl_graft(cl, new)
    if new is not None:
        new.depth = parent.depth + 1
    if replaced is not None:
        qdisc_put(replaced)


@kernel("check_loop")
def _check_loop(q: Qdisc, p: Qdisc, depth: int) -> bool:
    """True if *p* sits below *q* (a graft would make a loop). Kernel: check_loop()."""
    if not q.classful:
        return False
    for cl in q.cl_walk():
        leaf = q.cl_leaf(cl)
        if leaf is not None:
            if leaf is p or depth > 7:
                return True
            if _check_loop(leaf, p, depth + 1):
                return True
    return False


@kernel("qdisc_leaf")
def _leaf(p: Qdisc, classid: int) -> Qdisc | None:
    """The child of class *classid* of *p*; refuse a classless *p* or an unknown class.

    Kernel: qdisc_leaf().
    """
    if not p.classful:
        raise _extack("Parent qdisc is not classful", errno.EOPNOTSUPP)
    cl = p.cl_find(classid)
    if not cl:
        raise _extack("Specified class not found", errno.ENOENT)
    return p.cl_leaf(cl)


def _dev(net: Net, ifindex: int) -> NetDevice:
    dev = net.dev_get_by_index(ifindex)
    if dev is None:
        raise _rtnl(errno.ENODEV)
    return dev


@kernel("net/sched/sch_api.c", "tc_modify_qdisc")
def tc_modify_qdisc(
    net: Net,
    ifindex: int,
    parent: int,
    handle: int,
    flags: int,
    kind: str | None,
    options: Any,
) -> None:
    """Create, replace or change a qdisc (``tc qdisc add|replace|change|link``).

    *flags* are the netlink request flags tc sets: add = CREATE|EXCL,
    replace = CREATE|REPLACE, change = 0, link = REPLACE. *options* is the
    discipline's ``TCA_OPTIONS`` value, or None if tc sent none.

    Kernel: net/sched/sch_api.c, tc_modify_qdisc().
    """
    dev = _dev(net, ifindex)
    clid = parent
    q: Qdisc | None = None
    p: Qdisc | None = None
    create = False
    if clid:
        if clid != TC_H_ROOT:
            if clid != TC_H_INGRESS:
                p = qdisc_lookup(dev, TC_H_MAJ(clid))
                if p is None:
                    raise _extack("Failed to find specified qdisc", errno.ENOENT)
                q = _leaf(p, clid)
            else:
                q = None  # no ingress queue in netstack
        else:
            q = dev.qdisc
        # It may be the default qdisc: ignore it
        if q is not None and q.handle == 0:
            q = None
        if q is None or not handle or q.handle != handle:
            if handle:
                if q is not None and not flags & NLM_F_REPLACE:
                    raise _extack("NLM_F_REPLACE needed to override", errno.EEXIST)
                if TC_H_MIN(handle):
                    raise _extack("Invalid minor handle", errno.EINVAL)
                q = qdisc_lookup(dev, handle)
                if q is None:
                    create = True
                else:
                    if q.parent != parent:
                        raise _extack(
                            "Cannot move an existing qdisc to a different parent", errno.EINVAL
                        )
                    if flags & NLM_F_EXCL:
                        raise _extack("Exclusivity flag on, cannot override", errno.EEXIST)
                    if kind is not None and kind != q.kind:
                        raise _extack("Invalid qdisc name: must match existing qdisc", errno.EINVAL)
                    if q.flags & TCQ_F_INGRESS:
                        raise _extack("Cannot regraft ingress or clsact Qdiscs", errno.EINVAL)
                    if q is p or (p is not None and _check_loop(q, p, 0)):
                        raise _extack("Qdisc parent/child loop detected", errno.ELOOP)
                    if clid == TC_H_INGRESS:
                        raise _extack("Ingress cannot graft directly", errno.EINVAL)
                    # Graft an existing qdisc here too (a "link").
                    q.refcnt += 1
                    qdisc_graft(dev, p, clid, q, None)
                    return
            elif q is None:
                create = True
            elif kind is not None and kind != q.kind:
                # The requested kind differs from the one attached: create and graft.
                if flags & NLM_F_CREATE and flags & (NLM_F_REPLACE | NLM_F_EXCL):
                    create = True
                elif not flags & (NLM_F_CREATE | NLM_F_REPLACE | NLM_F_EXCL):
                    return _create_n_graft(dev, p, clid, handle, kind, options, check=False)
    else:
        if not handle:
            raise _extack("Handle cannot be zero", errno.EINVAL)
        q = qdisc_lookup(dev, handle)
    if create:
        return _create_n_graft(dev, p, clid, handle, kind, options, check=True, flags=flags)
    # Change qdisc parameters
    if q is None:
        raise _extack("Specified qdisc not found", errno.ENOENT)
    if flags & NLM_F_EXCL:
        raise _extack("Exclusivity flag on, cannot modify", errno.EEXIST)
    if kind is not None and kind != q.kind:
        raise _extack("Invalid qdisc name: must match existing qdisc", errno.EINVAL)
    qdisc_change(q, options)


@kernel("tc_modify_qdisc")
def _create_n_graft(
    dev: NetDevice,
    p: Qdisc | None,
    clid: int,
    handle: int,
    kind: str | None,
    options: Any,
    *,
    check: bool,
    flags: int = 0,
) -> None:
    """Kernel: tc_modify_qdisc(), labels create_n_graft / create_n_graft2 / graft."""
    if check and not flags & NLM_F_CREATE:
        raise _extack("Qdisc not found. To create specify NLM_F_CREATE flag", errno.ENOENT)
    # (clid TC_H_INGRESS: the ingress queue exists, but no ingress/clsact kind is
    # registered, so qdisc_create() refuses the kind.)
    txq = p.dev_queue if p is not None and p.dev_queue is not None else dev.get_tx_queue(0)
    q = qdisc_create(dev, txq, clid, handle, kind, options)
    try:
        qdisc_graft(dev, p, clid, q, None)
    except ConfigError:
        qdisc_put(q)
        raise


@kernel("tc_get_qdisc")
def tc_del_qdisc(net: Net, ifindex: int, parent: int, handle: int, kind: str | None) -> None:
    """Delete a qdisc (``tc qdisc del``). Kernel: tc_get_qdisc() for RTM_DELQDISC."""
    dev = _dev(net, ifindex)
    clid = parent
    p: Qdisc | None = None
    q: Qdisc | None
    if clid:
        if clid != TC_H_ROOT:
            if TC_H_MAJ(clid) != TC_H_MAJ(TC_H_INGRESS):
                p = qdisc_lookup(dev, TC_H_MAJ(clid))
                if p is None:
                    raise _extack("Failed to find qdisc with specified classid", errno.ENOENT)
                q = _leaf(p, clid)
            else:
                q = None
        else:
            q = dev.qdisc
        if q is None:
            raise _extack("Cannot find specified qdisc on specified device", errno.ENOENT)
        if handle and q.handle != handle:
            raise _extack("Invalid handle", errno.EINVAL)
    else:
        q = qdisc_lookup(dev, handle)
        if q is None:
            raise _extack("Failed to find qdisc with specified handle", errno.ENOENT)
    if kind is not None and kind != q.kind:
        raise _extack("Invalid qdisc name: must match existing qdisc", errno.EINVAL)
    if not clid:
        raise _extack("Classid cannot be zero", errno.EINVAL)
    if q.handle == 0:
        raise _extack("Cannot delete qdisc with handle of zero", errno.ENOENT)
    qdisc_graft(dev, p, clid, None, q)


@kernel("tc_fill_qdisc")
def _info(dev: NetDevice, q: Qdisc) -> QdiscInfo:
    """Kernel: tc_fill_qdisc()."""
    options = q.dump()
    return QdiscInfo(
        dev.ifindex, q.kind, q.handle, q.parent, q.refcnt, options, q.statistics(), q.dump_stats()
    )


@kernel("tc_qdisc_dump_ignore")
def _dump_ignore(q: Qdisc, dump_invisible: bool) -> bool:
    """Kernel: tc_qdisc_dump_ignore()."""
    if q.flags & TCQ_F_BUILTIN:
        return True
    return bool(q.flags & TCQ_F_INVISIBLE) and not dump_invisible


@kernel("net/sched/sch_api.c", "tc_dump_qdisc", "tc_dump_qdisc_root")
def tc_dump_qdisc(net: Net, *, dump_invisible: bool = False) -> list[QdiscInfo]:
    """Every qdisc of every device: the root first, then those below it.

    Kernel: net/sched/sch_api.c, tc_dump_qdisc() / tc_dump_qdisc_root().
    """
    out: list[QdiscInfo] = []
    for dev in sorted(net.devices.values(), key=lambda d: d.ifindex):
        out.extend(
            _info(dev, q) for q in qdisc_tree(dev.qdisc) if not _dump_ignore(q, dump_invisible)
        )
    return out


@kernel("net/sched/sch_api.c", "tc_dump_tclass", "tc_dump_tclass_qdisc")
def tc_dump_tclass(net: Net, ifindex: int, parent: int = 0) -> list[ClassInfo]:
    """The classes of one device's qdiscs (of qdisc ``parent``'s major only, if given).

    Kernel: net/sched/sch_api.c, tc_dump_tclass() / tc_dump_tclass_qdisc().
    """
    dev = net.dev_get_by_index(ifindex)
    if dev is None:
        return []
    out: list[ClassInfo] = []
    for q in qdisc_tree(dev.qdisc):
        if _dump_ignore(q, False) or not q.classful:
            continue
        if parent and TC_H_MAJ(parent) != q.handle:
            continue
        out.extend(
            ClassInfo(ifindex, q.kind, q.cl_dump(cl), q.cl_dump_stats(cl)) for cl in q.cl_walk()
        )
    return out


@kernel("net/sched/sch_api.c", "tc_ctl_tclass")
def tc_ctl_tclass(
    net: Net, ifindex: int, parent: int, classid: int, *, delete: bool, flags: int
) -> None:
    """Add, change or delete a class. None of netstack's disciplines has
    configurable classes, so a well-formed request ends in EOPNOTSUPP, after
    the kernel's lookups (ENOENT, EEXIST, EINVAL) have had their say.

    Kernel: net/sched/sch_api.c, tc_ctl_tclass().
    """
    dev = _dev(net, ifindex)
    portid = parent
    clid = classid
    qid = TC_H_MAJ(clid)
    if portid != TC_H_ROOT:
        qid1 = TC_H_MAJ(portid)
        if qid and qid1:
            if qid != qid1:
                raise _rtnl(errno.EINVAL)
        elif qid1:
            qid = qid1
        elif qid == 0:
            qid = dev.qdisc.handle
        if portid:
            portid = TC_H_MAKE(qid, portid)
    elif qid == 0:
        qid = dev.qdisc.handle
    q = qdisc_lookup(dev, qid)
    if q is None:
        raise _rtnl(errno.ENOENT)
    if not q.classful:
        raise _rtnl(errno.EINVAL)
    if clid == 0:
        if portid == TC_H_ROOT:
            clid = qid
    else:
        clid = TC_H_MAKE(qid, clid)
    cl = q.cl_find(clid) if clid else 0
    if cl == 0:
        if delete or not flags & NLM_F_CREATE:
            raise _rtnl(errno.ENOENT)
    elif delete:
        raise _rtnl(errno.EOPNOTSUPP)  # no cops->delete
    elif flags & NLM_F_EXCL:
        raise _rtnl(errno.EEXIST)
    raise _rtnl(errno.EOPNOTSUPP)  # no cops->change
