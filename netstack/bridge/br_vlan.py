"""Bridge VLAN filtering: per-port VLAN sets, PVID, egress untagging.

Theory of operation: every port (and the bridge device itself, for frames
to and from the host) has a set of VLANs, one of them possibly the PVID,
each possibly *egress untagged*. New ports get the bridge's
``vlan_default_pvid`` (1) as PVID, untagged — so with ``vlan_filtering 1``
and nothing configured, everything is VLAN 1. With filtering on:

* ingress (``br_allowed_ingress``): an untagged or priority-tagged frame
  takes the port's PVID (dropped without one); a tagged frame must carry a
  VLAN the port has. The VLAN is kept in the skb's accelerated tag from
  then on, and the FDB is per VLAN.
* egress (``br_allowed_egress``): only ports that have the VLAN get the frame;
  ``br_handle_vlan`` strips the tag where the VLAN is egress untagged.

With filtering off the VLAN sets exist (``bridge vlan show`` lists them) but
the data path ignores them and tags pass through untouched.

Kernel: net/bridge/br_vlan.c.
"""

from __future__ import annotations

import errno

from netstack.bridge.br_fdb import (
    br_fdb_add_local,
    br_fdb_delete_by_port,
    br_fdb_find,
    fdb_delete,
)
from netstack.bridge.br_private import (
    BR_FDB_LOCAL,
    BRIDGE_VLAN_INFO_BRENTRY,
    BRIDGE_VLAN_INFO_MASTER,
    BRIDGE_VLAN_INFO_PVID,
    BRIDGE_VLAN_INFO_UNTAGGED,
    NetBridge,
    NetBridgePort,
    NetBridgeVlan,
    VlanGroup,
)
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.vlan_core import skb_vlan_untag, vlan_insert_tag
from netstack.errors import ConfigError

__all__ = [
    "br_allowed_egress",
    "br_allowed_ingress",
    "br_handle_vlan",
    "br_vlan_add",
    "br_vlan_delete",
    "br_vlan_filter_toggle",
    "br_vlan_init",
    "nbp_vlan_add",
    "nbp_vlan_delete",
    "nbp_vlan_init",
]

VLAN_VID_MASK = 0x0FFF


def br_vlan_valid_id(vid: int) -> None:
    """Kernel: br_vlan_valid_id() ("Vlan id is invalid")."""
    if not 0 < vid < VLAN_VID_MASK:
        raise ConfigError("Error: bridge: Vlan id is invalid.", errno.EINVAL)


def _set_pvid(vg: VlanGroup, v: NetBridgeVlan, flags: int) -> None:
    """Kernel: __vlan_add_flags() (PVID and UNTAGGED of an existing or new VLAN)."""
    if flags & BRIDGE_VLAN_INFO_PVID:
        vg.pvid = v.vid
    elif vg.pvid == v.vid:
        vg.pvid = 0
    if flags & BRIDGE_VLAN_INFO_UNTAGGED:
        v.flags |= BRIDGE_VLAN_INFO_UNTAGGED
    else:
        v.flags &= ~BRIDGE_VLAN_INFO_UNTAGGED


def br_vlan_add(br: NetBridge, vid: int, flags: int) -> bool:
    """Add (or update) a VLAN on the bridge device (``bridge vlan add … self``).

    Returns True if something changed. Kernel: net/bridge/br_vlan.c, br_vlan_add().
    """
    vg = br.vlgrp
    v = vg.find(vid)
    if v is not None:
        changed = False
        if flags & BRIDGE_VLAN_INFO_BRENTRY and not v.flags & BRIDGE_VLAN_INFO_BRENTRY:
            v.flags |= BRIDGE_VLAN_INFO_BRENTRY
            br_fdb_add_local(br, None, bytes(br.dev.dev_addr), vid)
            changed = True
        old = (v.flags, vg.pvid)
        _set_pvid(vg, v, flags)
        return changed or old != (v.flags, vg.pvid)
    v = NetBridgeVlan(vid, BRIDGE_VLAN_INFO_MASTER | (flags & BRIDGE_VLAN_INFO_BRENTRY))
    vg.vlans[vid] = v
    _set_pvid(vg, v, flags)
    if v.flags & BRIDGE_VLAN_INFO_BRENTRY:
        br_fdb_add_local(br, None, bytes(br.dev.dev_addr), vid)
    return True


def br_vlan_delete(br: NetBridge, vid: int) -> None:
    """Kernel: br_vlan_delete() (ENOENT if absent)."""
    vg = br.vlgrp
    v = vg.find(vid)
    if v is None or not v.flags & BRIDGE_VLAN_INFO_BRENTRY:
        raise ConfigError("RTNETLINK answers: No such file or directory", errno.ENOENT)
    f = br_fdb_find(br, bytes(br.dev.dev_addr), vid)
    if f is not None and f.flags & BR_FDB_LOCAL and f.dst is None:
        fdb_delete(br, f)
    v.flags &= ~BRIDGE_VLAN_INFO_BRENTRY
    if vg.pvid == vid:
        vg.pvid = 0
    if not any(vid in p.vlgrp.vlans for p in br.port_list):
        del vg.vlans[vid]


def nbp_vlan_add(p: NetBridgePort, vid: int, flags: int) -> bool:
    """Add (or update) a VLAN on a port. Kernel: net/bridge/br_vlan.c, nbp_vlan_add()."""
    br = p.br
    vg = p.vlgrp
    v = vg.find(vid)
    if v is not None:
        old = (v.flags, vg.pvid)
        _set_pvid(vg, v, flags)
        return old != (v.flags, vg.pvid)
    if br.vlgrp.find(vid) is None:  # the bridge keeps a context entry (no BRENTRY)
        br.vlgrp.vlans[vid] = NetBridgeVlan(vid, BRIDGE_VLAN_INFO_MASTER)
    v = NetBridgeVlan(vid, 0)
    vg.vlans[vid] = v
    _set_pvid(vg, v, flags)
    br_fdb_add_local(br, p, bytes(p.dev.dev_addr), vid)
    return True


def nbp_vlan_delete(p: NetBridgePort, vid: int) -> None:
    """Kernel: nbp_vlan_delete() (ENOENT if absent); the port's entries on it go too."""
    vg = p.vlgrp
    if vg.find(vid) is None:
        raise ConfigError("RTNETLINK answers: No such file or directory", errno.ENOENT)
    br = p.br
    f = br_fdb_find(br, bytes(p.dev.dev_addr), vid)
    if f is not None and f.flags & BR_FDB_LOCAL and f.dst is p:
        fdb_delete(br, f)
    br_fdb_delete_by_port(br, p, vid, False)
    del vg.vlans[vid]
    if vg.pvid == vid:
        vg.pvid = 0
    bv = br.vlgrp.find(vid)
    if (
        bv is not None
        and not bv.flags & BRIDGE_VLAN_INFO_BRENTRY
        and not any(vid in q.vlgrp.vlans for q in br.port_list)
    ):
        del br.vlgrp.vlans[vid]


def br_vlan_init(br: NetBridge) -> None:
    """The bridge's default VLAN 1, PVID untagged. Kernel: br_vlan_init()."""
    br.default_pvid = 1
    br_vlan_add(br, 1, BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED | BRIDGE_VLAN_INFO_BRENTRY)


def nbp_vlan_init(p: NetBridgePort) -> None:
    """A new port's default PVID. Kernel: nbp_vlan_init()."""
    if p.br.default_pvid:
        nbp_vlan_add(p, p.br.default_pvid, BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED)


def br_vlan_filter_toggle(br: NetBridge, val: int) -> None:
    """``vlan_filtering 0|1``. Kernel: br_vlan_filter_toggle()."""
    br.vlan_enabled = bool(val)


def br_vlan_set_proto(br: NetBridge, proto: int) -> None:
    """``vlan_protocol 802.1Q|802.1ad``. Kernel: __br_vlan_set_proto()."""
    if proto not in (0x8100, 0x88A8):
        raise ConfigError("RTNETLINK answers: Protocol not supported", errno.EPROTONOSUPPORT)
    br.vlan_proto = proto


def br_vlan_set_default_pvid(br: NetBridge, pvid: int) -> None:
    """``vlan_default_pvid N`` (0 disables). Kernel: __br_vlan_set_default_pvid()."""
    if pvid >= VLAN_VID_MASK:
        raise ConfigError("Error: bridge: Invalid default vlan id.", errno.EINVAL)
    old = br.default_pvid
    if pvid == old:
        return
    for vg, is_br in [(br.vlgrp, True)] + [(p.vlgrp, False) for p in br.port_list]:
        v = vg.find(old) if old else None
        # only the untouched default (PVID, untagged) moves
        if v is not None and vg.pvid == old and v.flags & BRIDGE_VLAN_INFO_UNTAGGED:
            if is_br:
                br_vlan_delete(br, old)
            else:
                port = next(p for p in br.port_list if p.vlgrp is vg)
                nbp_vlan_delete(port, old)
        if pvid:
            if is_br:
                br_vlan_add(
                    br,
                    pvid,
                    BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED | BRIDGE_VLAN_INFO_BRENTRY,
                )
            else:
                port = next(p for p in br.port_list if p.vlgrp is vg)
                nbp_vlan_add(port, pvid, BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED)
    br.default_pvid = pvid


# -- the data path ------------------------------------------------------------------------------
def br_allowed_ingress(br: NetBridge, vg: VlanGroup, skb: SkBuff) -> int:
    """Classify an incoming frame into a VLAN; -1 if it was dropped (not allowed).

    Returns the VID (0 when filtering is off). The skb's ``cb`` records
    whether it was filtered (``BR_INPUT_SKB_CB(skb)->vlan_filtered``).

    Kernel: net/bridge/br_vlan.c, br_allowed_ingress() / __allowed_ingress().
    """
    if not br.vlan_enabled:
        skb.cb = None  # vlan_filtered = false
        return 0
    skb.cb = True
    if not skb.vlan_proto and skb.protocol == br.vlan_proto:
        # a VLAN device on the bridge sent it with the tag in band
        if not skb_vlan_untag(skb):
            br.rx_dropped_vlan += 1
            return -1
    tagged = False
    vid = 0
    if skb.vlan_proto:
        if skb.vlan_proto != br.vlan_proto:
            # protocol mismatch: the tag goes back in band, the frame is untagged here
            saved = skb.protocol
            skb.data -= 14
            vlan_insert_tag(skb, skb.vlan_proto, skb.vlan_tci)
            skb.data += 14
            skb.protocol = saved
            skb.vlan_proto = 0
            skb.vlan_tci = 0
        else:
            tagged = True
            vid = skb.vlan_tci & VLAN_VID_MASK
    if not vid:
        pvid = vg.pvid
        if not pvid:
            br.rx_dropped_vlan += 1
            kfree_skb(skb, DropReason.VLAN_FILTER)
            return -1
        vid = pvid
        if not tagged:
            skb.vlan_proto = br.vlan_proto
            skb.vlan_tci = pvid
        else:
            skb.vlan_tci |= pvid  # priority-tagged: keep the PCP
    v = vg.find(vid)
    if v is None or not v.should_use():
        br.rx_dropped_vlan += 1
        kfree_skb(skb, DropReason.VLAN_FILTER)
        return -1
    if br.vlan_stats_enabled:
        v.rx_packets += 1
        v.rx_bytes += skb.tail - skb.data
    return vid


def br_allowed_egress(vg: VlanGroup, skb: SkBuff) -> bool:
    """May *skb* leave through the port (or up to the bridge) of *vg*?

    Kernel: net/bridge/br_vlan.c, br_allowed_egress().
    """
    if skb.cb is not True:
        return True
    v = vg.vlans.get(skb.vlan_tci & VLAN_VID_MASK) if skb.vlan_proto else vg.vlans.get(0)
    return v is not None and v.should_use()


def br_handle_vlan(
    br: NetBridge, p: NetBridgePort | None, vg: VlanGroup, skb: SkBuff
) -> SkBuff | None:
    """Strip the tag where the VLAN is egress untagged; None if the skb was dropped.

    Kernel: net/bridge/br_vlan.c, br_handle_vlan().
    """
    if skb.cb is not True:
        return skb
    vid = skb.vlan_tci & VLAN_VID_MASK if skb.vlan_proto else 0
    v = vg.vlans.get(vid)
    if v is None or not v.should_use():
        if br.dev.flags & 0x100 and skb.dev is br.dev:  # IFF_PROMISC, to the bridge itself
            return skb
        kfree_skb(skb, DropReason.VLAN_FILTER)
        return None
    if br.vlan_stats_enabled:
        v.tx_packets += 1
        v.tx_bytes += skb.tail - skb.data
    if v.flags & BRIDGE_VLAN_INFO_UNTAGGED:
        skb.vlan_proto = 0
        skb.vlan_tci = 0
    return skb
