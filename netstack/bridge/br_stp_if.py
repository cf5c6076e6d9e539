"""STP's interface to the rest of the bridge: enabling ports and bridges, ids, BPDU receive.

Theory of operation: a port enters STP when it is running with carrier and
the bridge is up (``br_stp_enable_port``: blocking, then the state
selection makes it listening — or forwarding at once with STP off); it
leaves on link down or removal (``br_stp_disable_port``: its FDB entries
are flushed and the tree is recomputed). The bridge id's MAC is the lowest
port MAC unless one was set by hand (``br_stp_recalculate_bridge_id``):
that is how a Linux bridge picks its own address, and why it changes as
ports come and go (and becomes 00:00:00:00:00:00 when the last one leaves).

``br_stp_rcv`` parses BPDUs handed up by the LLC/STP demultiplexer.

Kernel: net/bridge/br_stp_if.c, br_stp_bpdu.c (br_stp_rcv).
"""

from __future__ import annotations

import errno
import struct
from typing import TYPE_CHECKING, Final

from netstack.bridge.br_fdb import br_fdb_change_mac_address, br_fdb_delete_by_port
from netstack.bridge.br_private import (
    BR_BPDU_GUARD,
    BR_KERNEL_STP,
    BR_MAX_PATH_COST,
    BR_MAX_PORT_PRIORITY,
    BR_MIN_PATH_COST,
    BR_NO_STP,
    BR_PORT_BITS,
    BR_STATE_BLOCKING,
    BR_STATE_DISABLED,
    NetBridge,
    NetBridgePort,
    br_is_designated_port,
    br_is_root_bridge,
    br_port_get_rcu,
)
from netstack.bridge.br_stp import (
    BR_MAX_FORWARD_DELAY_S,
    BR_MIN_FORWARD_DELAY_S,
    br_become_designated_port,
    br_become_root_bridge,
    br_config_bpdu_generation,
    br_configuration_update,
    br_port_state_selection,
    br_received_config_bpdu,
    br_received_tcn_bpdu,
    br_set_forward_delay_jiffies,
    br_set_state,
    br_set_topology_change,
)
from netstack.bridge.br_stp_bpdu import BrConfigBpdu, br_get_ticks
from netstack.core.netdevice import NET_ADDR_SET
from netstack.core.skbuff import DropReason, SkBuff, consume_skb, kfree_skb
from netstack.errors import ConfigError
from netstack.wire.stp import BPDU_TYPE_CONFIG, BPDU_TYPE_TCN

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = [
    "br_init_port",
    "br_make_port_id",
    "br_stp_change_bridge_id",
    "br_stp_disable_bridge",
    "br_stp_disable_port",
    "br_stp_enable_bridge",
    "br_stp_enable_port",
    "br_stp_rcv",
    "br_stp_recalculate_bridge_id",
    "br_stp_set_bridge_priority",
    "br_stp_set_enabled",
    "br_stp_set_path_cost",
    "br_stp_set_port_priority",
]

_CFG: Final = struct.Struct("!BB8sI8sHHHHH")  # type … forward delay


def br_make_port_id(priority: int, port_no: int) -> int:
    """Kernel: br_make_port_id()."""
    return ((priority << BR_PORT_BITS) | (port_no & ((1 << BR_PORT_BITS) - 1))) & 0xFFFF


def br_init_port(p: NetBridgePort) -> None:
    """Kernel: net/bridge/br_stp_if.c, br_init_port()."""
    p.port_id = br_make_port_id(p.priority, p.port_no)
    br_become_designated_port(p)
    br_set_state(p, BR_STATE_BLOCKING)
    p.topology_change_ack = 0
    p.config_pending = 0


def br_stp_enable_bridge(br: NetBridge) -> None:
    """The bridge came up. Kernel: br_stp_enable_bridge()."""
    net = br.dev.net
    now = net.clock.jiffies
    if br.stp_enabled == BR_KERNEL_STP:
        br.hello_timer.mod(now + br.hello_time)
    br.gc_work.mod(now + net.clock.hz // 10)
    br_config_bpdu_generation(br)
    for p in br.port_list:
        if p.dev.netif_running() and p.dev.netif_oper_up():
            br_stp_enable_port(p)


def br_stp_disable_bridge(br: NetBridge) -> None:
    """The bridge went down. Kernel: br_stp_disable_bridge()."""
    for p in br.port_list:
        if p.state != BR_STATE_DISABLED:
            br_stp_disable_port(p)
    br_set_topology_change(br, 0)
    br.topology_change_detected = 0
    br.hello_timer.delete()
    br.topology_change_timer.delete()
    br.tcn_timer.delete()
    br.gc_work.delete()


def br_stp_enable_port(p: NetBridgePort) -> None:
    """Kernel: br_stp_enable_port()."""
    br_init_port(p)
    br_port_state_selection(p.br)


def br_stp_disable_port(p: NetBridgePort) -> None:
    """Kernel: net/bridge/br_stp_if.c, br_stp_disable_port()."""
    br = p.br
    wasroot = br_is_root_bridge(br)
    br_become_designated_port(p)
    br_set_state(p, BR_STATE_DISABLED)
    p.topology_change_ack = 0
    p.config_pending = 0
    p.message_age_timer.delete()
    p.forward_delay_timer.delete()
    p.hold_timer.delete()
    br_fdb_delete_by_port(br, p, 0, False)
    br_configuration_update(br)
    br_port_state_selection(br)
    if br_is_root_bridge(br) and not wasroot:
        br_become_root_bridge(br)


def br_stp_set_enabled(br: NetBridge, val: int) -> None:
    """``stp_state 0|1``: start or stop the kernel STP. Kernel: br_stp_set_enabled()."""
    if val:
        if br.stp_enabled == BR_NO_STP:
            _br_stp_start(br)
    elif br.stp_enabled != BR_NO_STP:
        br.stp_enabled = BR_NO_STP  # br_stp_stop(): kernel STP needs no helper to stop


def _br_stp_start(br: NetBridge) -> None:
    """No ``/sbin/bridge-stp`` here, so the kernel's STP. Kernel: br_stp_start()."""
    hz = br.dev.net.clock.hz
    if br.bridge_forward_delay < BR_MIN_FORWARD_DELAY_S * hz:
        br_set_forward_delay_jiffies(br, BR_MIN_FORWARD_DELAY_S * hz)
    elif br.bridge_forward_delay > BR_MAX_FORWARD_DELAY_S * hz:
        br_set_forward_delay_jiffies(br, BR_MAX_FORWARD_DELAY_S * hz)
    br.stp_enabled = BR_KERNEL_STP
    if br.dev.flags & 0x1:
        br.hello_timer.mod(br.dev.net.clock.jiffies + br.hello_time)
    br_port_state_selection(br)


def br_stp_change_bridge_id(br: NetBridge, addr: bytes) -> None:
    """The bridge takes a new MAC (and bridge id). Kernel: br_stp_change_bridge_id()."""
    wasroot = br_is_root_bridge(br)
    br_fdb_change_mac_address(br, addr)
    oldaddr = br.bridge_id[2:]
    br.bridge_id = br.bridge_id[:2] + addr
    br.dev.dev_addr = bytes(addr)  # eth_hw_addr_set()
    for p in br.port_list:
        if p.designated_bridge[2:] == oldaddr:
            p.designated_bridge = p.designated_bridge[:2] + addr
        if p.designated_root[2:] == oldaddr:
            p.designated_root = p.designated_root[:2] + addr
    br_configuration_update(br)
    br_port_state_selection(br)
    if br_is_root_bridge(br) and not wasroot:
        br_become_root_bridge(br)


def br_stp_recalculate_bridge_id(br: NetBridge) -> bool:
    """The lowest port MAC, unless the user set one; True if it changed.

    Kernel: net/bridge/br_stp_if.c, br_stp_recalculate_bridge_id().
    """
    if br.dev.addr_assign_type == NET_ADDR_SET:
        return False
    addr = bytes(6)
    first = True
    for p in br.port_list:
        if first or p.dev.dev_addr < addr:
            addr = bytes(p.dev.dev_addr)
            first = False
    if br.bridge_id[2:] == addr:
        return False
    br_stp_change_bridge_id(br, addr)
    return True


def br_stp_set_bridge_priority(br: NetBridge, newprio: int) -> None:
    """Kernel: br_stp_set_bridge_priority()."""
    wasroot = br_is_root_bridge(br)
    prio = newprio.to_bytes(2, "big")
    for p in br.port_list:
        if p.state != BR_STATE_DISABLED and br_is_designated_port(p):
            p.designated_bridge = prio + p.designated_bridge[2:]
    br.bridge_id = prio + br.bridge_id[2:]
    br_configuration_update(br)
    br_port_state_selection(br)
    if br_is_root_bridge(br) and not wasroot:
        br_become_root_bridge(br)


def br_stp_set_port_priority(p: NetBridgePort, newprio: int) -> None:
    """Kernel: br_stp_set_port_priority() (ERANGE above 63)."""
    if newprio > BR_MAX_PORT_PRIORITY:
        raise ConfigError("RTNETLINK answers: Numerical result out of range", errno.ERANGE)
    new_port_id = br_make_port_id(newprio, p.port_no)
    if br_is_designated_port(p):
        p.designated_port = new_port_id
    p.port_id = new_port_id
    p.priority = newprio
    if p.br.bridge_id == p.designated_bridge and p.port_id < p.designated_port:
        br_become_designated_port(p)
        br_port_state_selection(p.br)


def br_stp_set_path_cost(p: NetBridgePort, path_cost: int) -> None:
    """Kernel: br_stp_set_path_cost() (ERANGE outside 1–65535)."""
    if path_cost < BR_MIN_PATH_COST or path_cost > BR_MAX_PATH_COST:
        raise ConfigError("RTNETLINK answers: Numerical result out of range", errno.ERANGE)
    p.flags |= 0x10  # BR_ADMIN_COST
    p.path_cost = path_cost
    br_configuration_update(p.br)
    br_port_state_selection(p.br)


def br_stp_rcv(skb: SkBuff, dev: NetDevice) -> None:
    """A BPDU (LLC already stripped) arrived on *dev*: configuration or TCN.

    Kernel: net/bridge/br_stp_bpdu.c, br_stp_rcv().
    """
    d = skb.data
    buf = skb.buf
    p = br_port_get_rcu(dev)
    if skb.tail - d < 4 or buf[d] or buf[d + 1] or buf[d + 2] or p is None:
        if p is not None:
            p.stats.rx_bad_bpdu += 1
        kfree_skb(skb, DropReason.STP_INVALID)
        return
    br = p.br
    m = skb.mac_header
    if (
        br.stp_enabled != BR_KERNEL_STP
        or not br.dev.flags & 0x1
        or p.state == BR_STATE_DISABLED
        or bytes(buf[m : m + 6]) != br.group_addr
    ):
        consume_skb(skb)
        return
    if p.flags & BR_BPDU_GUARD:
        br.log.info("br_bpdu_guard", msg=f"BPDU received on blocked port {p.port_no}({p.dev.name})")
        br_stp_disable_port(p)
        consume_skb(skb)
        return
    btype = buf[d + 3]
    if btype == BPDU_TYPE_CONFIG:
        if skb.tail - d < 35:
            p.stats.rx_bad_bpdu += 1
            kfree_skb(skb, DropReason.STP_INVALID)
            return
        net = dev.net
        (_, flags, root, cost, bridge_id, port_id, age, max_age, hello, fwd) = _CFG.unpack_from(
            buf, d + 3
        )
        bpdu = BrConfigBpdu(
            topology_change=1 if flags & 0x01 else 0,
            topology_change_ack=1 if flags & 0x80 else 0,
            root=root,
            root_path_cost=cost,
            bridge_id=bridge_id,
            port_id=port_id,
            message_age=br_get_ticks(net, age),
            max_age=br_get_ticks(net, max_age),
            hello_time=br_get_ticks(net, hello),
            forward_delay=br_get_ticks(net, fwd),
        )
        if bpdu.message_age > bpdu.max_age:
            p.stats.rx_bad_bpdu += 1
            br.log.info(
                "br_bpdu_too_old",
                msg=f"port {p.port_no} config from {bytes(buf[m + 6 : m + 12]).hex(':')} "
                f"(message_age {bpdu.message_age} > max_age {bpdu.max_age})",
            )
            kfree_skb(skb, DropReason.STP_INVALID)
            return
        br_received_config_bpdu(p, bpdu)
    elif btype == BPDU_TYPE_TCN:
        br_received_tcn_bpdu(p)
    else:
        p.stats.rx_bad_bpdu += 1
        kfree_skb(skb, DropReason.STP_INVALID)
        return
    consume_skb(skb)
