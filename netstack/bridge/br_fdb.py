"""The forwarding database: learning, ageing, local and static entries, ``bridge fdb``.

Theory of operation: entries are keyed by (MAC, VID) and remember the port
they point to (None: the bridge device itself), flags (``local``: one of our
own addresses, delivered up; ``static``: never ages) and two times in
jiffies: ``updated`` (last learnt or refreshed) and ``used`` (last forwarded
to). ``br_fdb_update`` learns a source address on receive. The garbage
collector ``br_fdb_cleanup`` is the bridge's delayed work on the Net's
clock: it deletes dynamic entries older than the hold time (``ageing_time``,
300 s by default; ``forward_delay`` while STP reports a topology change)
and re-arms itself for the next entry to expire, at least 10 ms later, so an
entry ages out exactly ``ageing_time`` after it was last seen (to the jiffy
of the gc run).

``br_fdb_add`` / ``br_fdb_delete`` / ``br_fdb_dump`` are the bridge's
``ndo_fdb_*`` (see :mod:`netstack.core.rtnetlink` for the contract).

Kernel: net/bridge/br_fdb.c.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from netstack.bridge.br_private import (
    BR_FDB_ADDED_BY_EXT_LEARN,
    BR_FDB_ADDED_BY_USER,
    BR_FDB_LOCAL,
    BR_FDB_STATIC,
    BR_FDB_STICKY,
    BR_STATE_FORWARDING,
    BR_STATE_LEARNING,
    FdbEntry,
    NetBridge,
    NetBridgePort,
    br_port_get_rcu,
    jiffies_to_clock_t,
)
from netstack.core.rtnetlink import (
    NLM_F_CREATE,
    NLM_F_EXCL,
    NTF_EXT_LEARNED,
    NTF_STICKY,
    NTF_USE,
    NUD_NOARP,
    NUD_PERMANENT,
    NUD_REACHABLE,
    NUD_STALE,
    FdbMsg,
    fdb_errno,
    fdb_extack,
)

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = [
    "br_fdb_add",
    "br_fdb_add_local",
    "br_fdb_change_mac_address",
    "br_fdb_changeaddr",
    "br_fdb_cleanup",
    "br_fdb_delete",
    "br_fdb_delete_by_port",
    "br_fdb_dump",
    "br_fdb_find",
    "br_fdb_flush",
    "br_fdb_update",
    "is_valid_ether_addr",
]

_ZERO = bytes(6)


def is_valid_ether_addr(addr: bytes) -> bool:
    """Unicast and not all zeros. Kernel: is_valid_ether_addr()."""
    return not addr[0] & 1 and addr != _ZERO


def hold_time(br: NetBridge) -> int:
    """Kernel: hold_time(): forward_delay during a topology change, else ageing_time."""
    return br.forward_delay if br.topology_change else br.ageing_time


def has_expired(br: NetBridge, f: FdbEntry) -> bool:
    """Kernel: has_expired()."""
    return (
        not f.flags & (BR_FDB_STATIC | BR_FDB_ADDED_BY_EXT_LEARN)
        and f.updated + hold_time(br) <= br.dev.net.clock.jiffies
    )


def fdb_to_nud(br: NetBridge, f: FdbEntry) -> int:
    """Kernel: fdb_to_nud()."""
    if f.flags & BR_FDB_LOCAL:
        return NUD_PERMANENT
    if f.flags & BR_FDB_STATIC:
        return NUD_NOARP
    if has_expired(br, f):
        return NUD_STALE
    return NUD_REACHABLE


def br_fdb_find(br: NetBridge, addr: bytes, vid: int) -> FdbEntry | None:
    """Kernel: br_fdb_find() / br_fdb_find_rcu()."""
    return br.fdb.get((addr, vid))


def fdb_create(
    br: NetBridge, source: NetBridgePort | None, addr: bytes, vid: int, flags: int
) -> FdbEntry:
    """Kernel: fdb_create()."""
    f = FdbEntry(bytes(addr), vid, source, flags, br.dev.net.clock.jiffies)
    br.fdb[(f.addr, vid)] = f
    return f


def fdb_delete(br: NetBridge, f: FdbEntry) -> None:
    """Kernel: fdb_delete()."""
    br.fdb.pop((f.addr, f.vlan_id), None)


def fdb_delete_local(br: NetBridge, p: NetBridgePort | None, f: FdbEntry) -> None:
    """Delete a local entry unless another port (or the bridge) has that address.

    Kernel: net/bridge/br_fdb.c, fdb_delete_local().
    """
    addr = f.addr
    vid = f.vlan_id
    for op in br.port_list:
        if op is not p and op.dev.dev_addr == addr and (not vid or op.vlgrp.find(vid)):
            f.dst = op
            f.flags &= ~BR_FDB_ADDED_BY_USER
            return
    v = br.vlgrp.find(vid)
    if p is not None and br.dev.dev_addr == addr and (not vid or (v and v.should_use())):
        f.dst = None
        f.flags &= ~BR_FDB_ADDED_BY_USER
        return
    fdb_delete(br, f)


def fdb_add_local(br: NetBridge, source: NetBridgePort | None, addr: bytes, vid: int) -> int:
    """Insert a local (own address) entry; 0 or a negative errno. Kernel: fdb_add_local()."""
    if not is_valid_ether_addr(addr):
        return -errno.EINVAL
    f = br_fdb_find(br, addr, vid)
    if f is not None:
        if f.flags & BR_FDB_LOCAL:
            return 0  # "it is okay to have multiple ports with same address"
        br.log.warning(
            "br_fdb_local_over_learnt",
            msg=f"adding interface {source.dev.name if source else br.dev.name} with same "
            f"address as a received packet (addr:{addr.hex(':')}, vlan:{vid})",
        )
        fdb_delete(br, f)
    fdb_create(br, source, addr, vid, BR_FDB_LOCAL | BR_FDB_STATIC)
    return 0


def br_fdb_add_local(br: NetBridge, source: NetBridgePort | None, addr: bytes, vid: int) -> int:
    """Kernel: br_fdb_add_local()."""
    return fdb_add_local(br, source, addr, vid)


def br_fdb_changeaddr(p: NetBridgePort, newaddr: bytes) -> None:
    """A port's MAC changed: move its local entries. Kernel: br_fdb_changeaddr()."""
    br = p.br
    for f in list(br.fdb.values()):
        if f.dst is p and f.flags & BR_FDB_LOCAL and not f.flags & BR_FDB_ADDED_BY_USER:
            fdb_delete_local(br, p, f)
            if not p.vlgrp.num_vlans:
                break
    fdb_add_local(br, p, newaddr, 0)
    for v in p.vlgrp.sorted():
        fdb_add_local(br, p, newaddr, v.vid)


def br_fdb_change_mac_address(br: NetBridge, newaddr: bytes) -> None:
    """The bridge's own MAC changes. Kernel: br_fdb_change_mac_address()."""
    old = bytes(br.dev.dev_addr)
    f = br_fdb_find(br, old, 0)
    if (
        f is not None
        and f.flags & BR_FDB_LOCAL
        and f.dst is None
        and not f.flags & BR_FDB_ADDED_BY_USER
    ):
        fdb_delete_local(br, None, f)
    fdb_add_local(br, None, newaddr, 0)
    for v in br.vlgrp.sorted():
        if not v.should_use():
            continue
        f = br_fdb_find(br, old, v.vid)
        if (
            f is not None
            and f.flags & BR_FDB_LOCAL
            and f.dst is None
            and not f.flags & BR_FDB_ADDED_BY_USER
        ):
            fdb_delete_local(br, None, f)
        fdb_add_local(br, None, newaddr, v.vid)


def br_fdb_cleanup(br: NetBridge) -> None:
    """The garbage collector: delete expired dynamic entries, re-arm for the next.

    Kernel: net/bridge/br_fdb.c, br_fdb_cleanup() (the bridge's gc_work).
    """
    net = br.dev.net
    delay = hold_time(br)
    work_delay = delay
    now = net.clock.jiffies
    for f in list(br.fdb.values()):
        if f.flags & (BR_FDB_STATIC | BR_FDB_ADDED_BY_EXT_LEARN):
            continue
        this_timer = f.updated + delay
        if this_timer > now:
            work_delay = min(work_delay, this_timer - now)
        else:
            fdb_delete(br, f)
            br.fdb_aged += 1
    work_delay = max(work_delay, net.clock.msecs_to_jiffies(10))
    br.gc_work.mod(now + work_delay)  # mod_delayed_work()


def br_fdb_flush(br: NetBridge) -> None:
    """Delete every dynamic entry. Kernel: br_fdb_flush()."""
    for f in list(br.fdb.values()):
        if not f.flags & BR_FDB_STATIC:
            fdb_delete(br, f)


def br_fdb_delete_by_port(br: NetBridge, p: NetBridgePort, vid: int, do_all: bool) -> None:
    """Flush a port's entries (``do_all``: static and local ones too).

    Kernel: net/bridge/br_fdb.c, br_fdb_delete_by_port().
    """
    for f in list(br.fdb.values()):
        if f.dst is not p:
            continue
        if not do_all and (f.flags & BR_FDB_STATIC or (vid and f.vlan_id != vid)):
            continue
        if f.flags & BR_FDB_LOCAL:
            fdb_delete_local(br, p, f)
        else:
            fdb_delete(br, f)


def br_fdb_update(br: NetBridge, source: NetBridgePort, addr: bytes, vid: int, flags: int) -> None:
    """Learn (or refresh) *addr* on *source*. Kernel: net/bridge/br_fdb.c, br_fdb_update()."""
    if not hold_time(br):
        return  # "some users want to always flood"
    f = br.fdb.get((addr, vid))
    if f is not None:
        if f.flags & BR_FDB_LOCAL:
            br.log.debug(
                "br_own_address_received",
                msg=f"received packet on {source.dev.name} with own address as source address "
                f"(addr:{addr.hex(':')}, vlan:{vid})",
            )
            return
        now = br.dev.net.clock.jiffies
        if now != f.updated:
            f.updated = now
        if source is not f.dst and not f.flags & BR_FDB_STICKY:
            f.dst = source
            f.flags &= ~BR_FDB_ADDED_BY_EXT_LEARN
        if flags & BR_FDB_ADDED_BY_USER:
            f.flags |= BR_FDB_ADDED_BY_USER
        return
    fdb_create(br, source, addr, vid, flags)
    br.fdb_learned += 1


def _fill(br: NetBridge, f: FdbEntry) -> FdbMsg:
    """Kernel: fdb_fill_info()."""
    net = br.dev.net
    now = net.clock.jiffies
    flags = 0
    if f.flags & BR_FDB_ADDED_BY_EXT_LEARN:
        flags |= NTF_EXT_LEARNED
    if f.flags & BR_FDB_STICKY:
        flags |= NTF_STICKY
    dst = f.dst
    return FdbMsg(
        ifindex=dst.dev.ifindex if dst is not None else br.dev.ifindex,
        state=fdb_to_nud(br, f),
        flags=flags,
        lladdr=f.addr,
        master=br.dev.ifindex,
        vlan=f.vlan_id,
        used=jiffies_to_clock_t(net, now - f.used),
        updated=jiffies_to_clock_t(net, now - f.updated),
    )


def br_fdb_dump(dev: NetDevice, filter_dev: NetDevice | None) -> list[FdbMsg]:
    """The bridge's part of ``bridge fdb show``, newest entries first.

    Kernel: net/bridge/br_fdb.c, br_fdb_dump().
    """
    from netstack.core.rtnetlink import ndo_dflt_fdb_dump

    br: NetBridge = dev.priv
    out: list[FdbMsg] = []
    if filter_dev is None:
        out.extend(ndo_dflt_fdb_dump(dev, None))
    for f in reversed(list(br.fdb.values())):
        if filter_dev is not None and (f.dst is None or f.dst.dev is not filter_dev):
            if filter_dev is not dev or f.dst is not None:
                continue
        if filter_dev is None and f.dst is not None:
            continue
        out.append(_fill(br, f))
    return out


def fdb_add_entry(
    br: NetBridge,
    source: NetBridgePort | None,
    addr: bytes,
    state: int,
    ndm_flags: int,
    nlflags: int,
    vid: int,
) -> None:
    """Create or replace an entry from user space. Kernel: fdb_add_entry()."""
    is_sticky = bool(ndm_flags & NTF_STICKY)
    if (
        source is not None
        and not state & (NUD_PERMANENT | NUD_NOARP)
        and source.state not in (BR_STATE_LEARNING, BR_STATE_FORWARDING)
    ):
        raise fdb_errno(errno.EPERM)
    if source is None and not state & NUD_PERMANENT:
        # pr_info("bridge: RTM_NEWNEIGH %s without NUD_PERMANENT")
        raise fdb_errno(errno.EINVAL)
    if is_sticky and state & NUD_PERMANENT:
        raise fdb_errno(errno.EINVAL)
    f = br_fdb_find(br, addr, vid)
    if f is None:
        if not nlflags & NLM_F_CREATE:
            raise fdb_errno(errno.ENOENT)
        f = fdb_create(br, source, addr, vid, 0)
    else:
        if nlflags & NLM_F_EXCL:
            raise fdb_errno(errno.EEXIST)
        f.dst = source
    if fdb_to_nud(br, f) != state:
        if state & NUD_PERMANENT:
            f.flags |= BR_FDB_LOCAL | BR_FDB_STATIC
        elif state & NUD_NOARP:
            f.flags = (f.flags & ~BR_FDB_LOCAL) | BR_FDB_STATIC
        else:
            f.flags &= ~(BR_FDB_LOCAL | BR_FDB_STATIC)
    if is_sticky != bool(f.flags & BR_FDB_STICKY):
        f.flags ^= BR_FDB_STICKY
    f.flags |= BR_FDB_ADDED_BY_USER
    now = br.dev.net.clock.jiffies
    f.used = now
    f.updated = now


def _br_and_port(dev: NetDevice, what: str) -> tuple[NetBridge, NetBridgePort | None]:
    if dev.priv_flags & 0x2:  # IFF_EBRIDGE: netif_is_bridge_master()
        br: NetBridge = dev.priv
        return br, None
    p = br_port_get_rcu(dev)
    if p is None:
        # pr_info("bridge: RTM_NEWNEIGH %s not a bridge port")
        raise fdb_errno(errno.EINVAL)
    return p.br, p


def br_fdb_add(
    ndm_state: int,
    ndm_flags: int,
    tb: Mapping[int, Any],
    dev: NetDevice,
    addr: bytes,
    vid: int,
    nlflags: int,
) -> None:
    """``bridge fdb add ADDR dev PORT master [static|permanent|dynamic] [vlan V]``.

    Kernel: net/bridge/br_fdb.c, br_fdb_add() / __br_fdb_add().
    """
    if not ndm_state & (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE):
        raise fdb_errno(errno.EINVAL)  # "RTM_NEWNEIGH with invalid state"
    if addr == _ZERO:
        raise fdb_errno(errno.EINVAL)  # "RTM_NEWNEIGH with invalid ether address"
    br, p = _br_and_port(dev, "add")
    vg = p.vlgrp if p is not None else br.vlgrp
    if vid:
        v = vg.find(vid)
        if v is None or not v.should_use():
            raise fdb_errno(errno.EINVAL)  # "RTM_NEWNEIGH with unconfigured vlan"
        vids = [vid]
    else:
        vids = [0] + [v.vid for v in vg.sorted() if v.should_use()]
    for one in vids:
        if ndm_flags & NTF_USE:
            if p is None:
                raise fdb_errno(errno.EINVAL)
            if p.state in (BR_STATE_LEARNING, BR_STATE_FORWARDING):
                br_fdb_update(br, p, addr, one, BR_FDB_ADDED_BY_USER)
        elif ndm_flags & NTF_EXT_LEARNED:
            if p is None and not ndm_state & NUD_PERMANENT:
                raise fdb_extack("bridge: FDB entry towards bridge must be permanent")
            f = br_fdb_find(br, addr, one)
            if f is None:
                flags = BR_FDB_ADDED_BY_EXT_LEARN | BR_FDB_ADDED_BY_USER
                fdb_create(br, p, addr, one, flags | (BR_FDB_LOCAL if p is None else 0))
            else:
                f.dst = p
                f.updated = br.dev.net.clock.jiffies
        else:
            fdb_add_entry(br, p, addr, ndm_state, ndm_flags, nlflags, one)


def br_fdb_delete(
    ndm_state: int,
    ndm_flags: int,
    tb: Mapping[int, Any],
    dev: NetDevice,
    addr: bytes,
    vid: int,
) -> None:
    """``bridge fdb del ADDR dev PORT master [vlan V]``. Kernel: br_fdb_delete()."""
    br, p = _br_and_port(dev, "del")
    vg = p.vlgrp if p is not None else br.vlgrp

    def delete_one(one: int) -> bool:
        f = br_fdb_find(br, addr, one)
        if f is None or f.dst is not p:
            return False
        fdb_delete(br, f)
        return True

    if vid:
        if vg.find(vid) is None:
            raise fdb_errno(errno.EINVAL)  # "RTM_DELNEIGH with unconfigured vlan"
        if not delete_one(vid):
            raise fdb_errno(errno.ENOENT)
        return
    found = delete_one(0)
    for v in vg.sorted():
        if v.should_use():
            found = delete_one(v.vid) or found
    if not found:
        raise fdb_errno(errno.ENOENT)
