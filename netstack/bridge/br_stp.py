"""The 802.1D spanning tree: root and designated port selection, port states, timers.

Theory of operation: the kernel's STP (``stp_state 1``, kernel STP since
there is no ``/sbin/bridge-stp`` helper) is the 802.1D-1998 state machine.
Every bridge starts believing it is the root and sends configuration BPDUs
on its designated ports every ``hello_time`` (2 s, ``hello_timer``, rounded
to whole seconds as ``round_jiffies`` does). A port that receives better
information (lower root id, then lower cost, bridge id, port id —
``br_supersedes_port_info``) records it (``message_age_timer`` drops it
after ``max_age`` without refresh) and the bridge recomputes its root port
and designated ports; ports that are neither go to *blocking*. A port that
should forward goes *listening*, then after ``forward_delay`` (15 s)
*learning*, then after another ``forward_delay`` *forwarding*: a loop
converges in 30 s with exactly one port blocked. Topology changes travel to
the root as TCN BPDUs and back in the topology-change flag, during which the
FDB ages out after ``forward_delay`` instead of ``ageing_time``.

With STP off (``stp_state 0``) a port goes straight to forwarding and BPDUs
are flooded like any frame, so a loop loops.

Kernel: net/bridge/br_stp.c, br_stp_timer.c, br_stp_bpdu.c (br_stp_rcv).
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Final

from netstack.bridge.br_private import (
    BR_KERNEL_STP,
    BR_NO_STP,
    BR_ROOT_BLOCK,
    BR_STATE_BLOCKING,
    BR_STATE_DISABLED,
    BR_STATE_FORWARDING,
    BR_STATE_LEARNING,
    BR_STATE_LISTENING,
    BR_STATE_NAMES,
    BR_USER_STP,
    NetBridge,
    NetBridgePort,
    br_is_designated_port,
    br_is_root_bridge,
    clock_t_to_jiffies,
    round_jiffies,
)
from netstack.bridge.br_stp_bpdu import (
    BrConfigBpdu,
    br_send_config_bpdu,
    br_send_tcn_bpdu,
)
from netstack.core.dev import netif_carrier_off, netif_carrier_on
from netstack.errors import ConfigError
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.timer import TimerList

__all__ = [
    "br_become_designated_port",
    "br_become_root_bridge",
    "br_config_bpdu_generation",
    "br_configuration_update",
    "br_port_state_selection",
    "br_received_config_bpdu",
    "br_received_tcn_bpdu",
    "br_set_state",
    "br_stp_port_timer_init",
    "br_stp_timer_init",
    "br_timer_value",
    "br_topology_change_detection",
]

BR_HOLD_TIME_S: Final = 1
BR_MIN_HELLO_TIME_S: Final = 1
BR_MAX_HELLO_TIME_S: Final = 10
BR_MIN_FORWARD_DELAY_S: Final = 2
BR_MAX_FORWARD_DELAY_S: Final = 30
BR_MIN_MAX_AGE_S: Final = 6
BR_MAX_MAX_AGE_S: Final = 40


def _now(br: NetBridge) -> int:
    return br.dev.net.clock.jiffies


@kernel("net/bridge/br_stp.c", "br_set_state")
def br_set_state(p: NetBridgePort, state: int) -> None:
    """Kernel: net/bridge/br_stp.c, br_set_state()."""
    p.state = state
    if p.br.log.isEnabledFor(logging.INFO):  # a lab's ports change state by the thousand
        p.br.log.info(
            "br_port_state",
            msg=f"port {p.port_no}({p.dev.name}) entered {BR_STATE_NAMES[state]} state",
        )
    if p.br.stp_enabled == BR_KERNEL_STP:
        if state == BR_STATE_BLOCKING:
            p.stats.transition_blk += 1
        elif state == BR_STATE_FORWARDING:
            p.stats.transition_fwd += 1


@kernel("br_should_become_root_port")
def _should_become_root_port(p: NetBridgePort, root_port: int) -> bool:
    """Kernel: br_should_become_root_port()."""
    br = p.br
    if p.state == BR_STATE_DISABLED or br_is_designated_port(p):
        return False
    if br.bridge_id <= p.designated_root:
        return False
    if not root_port:
        return True
    rp = br.get_port(root_port)
    assert rp is not None
    if p.designated_root != rp.designated_root:
        return p.designated_root < rp.designated_root
    a = p.designated_cost + p.path_cost
    b = rp.designated_cost + rp.path_cost
    if a != b:
        return a < b
    if p.designated_bridge != rp.designated_bridge:
        return p.designated_bridge < rp.designated_bridge
    if p.designated_port != rp.designated_port:
        return p.designated_port < rp.designated_port
    return p.port_id < rp.port_id


@kernel("br_root_port_block")
def _root_port_block(br: NetBridge, p: NetBridgePort) -> None:
    """Kernel: br_root_port_block()."""
    br.log.info("br_root_block", msg=f"port {p.port_no}({p.dev.name}) tried to become root port")
    br_set_state(p, BR_STATE_LISTENING)
    if br.forward_delay > 0:
        p.forward_delay_timer.mod(_now(br) + br.forward_delay)


@kernel("net/bridge/br_stp.c", "br_root_selection")
def br_root_selection(br: NetBridge) -> None:
    """Kernel: net/bridge/br_stp.c, br_root_selection()."""
    root_port = 0
    for p in br.port_list:
        if not _should_become_root_port(p, root_port):
            continue
        if p.flags & BR_ROOT_BLOCK:
            _root_port_block(br, p)
        else:
            root_port = p.port_no
    br.root_port = root_port
    if not root_port:
        br.designated_root = br.bridge_id
        br.root_path_cost = 0
    else:
        rp = br.get_port(root_port)
        assert rp is not None
        br.designated_root = rp.designated_root
        br.root_path_cost = rp.designated_cost + rp.path_cost


@kernel("net/bridge/br_stp.c", "br_become_root_bridge")
def br_become_root_bridge(br: NetBridge) -> None:
    """Kernel: net/bridge/br_stp.c, br_become_root_bridge()."""
    br.max_age = br.bridge_max_age
    br.hello_time = br.bridge_hello_time
    br.forward_delay = br.bridge_forward_delay
    br_topology_change_detection(br)
    br.tcn_timer.delete()
    if br.dev.flags & 0x1:  # IFF_UP
        br_config_bpdu_generation(br)
        br.hello_timer.mod(_now(br) + br.hello_time)


@kernel("br_transmit_config")
def br_transmit_config(p: NetBridgePort) -> None:
    """Send a configuration BPDU on *p* unless the hold timer runs. Kernel: br_transmit_config()."""
    if p.hold_timer.pending:
        p.config_pending = 1
        return
    br = p.br
    net = br.dev.net
    now = net.clock.jiffies
    if br_is_root_bridge(br):
        message_age = 0
    else:
        root = br.get_port(br.root_port)
        assert root is not None
        message_age = (now - root.designated_age) + (net.clock.hz // 256 + 1)  # MESSAGE_AGE_INCR
    bpdu = BrConfigBpdu(
        topology_change=br.topology_change,
        topology_change_ack=p.topology_change_ack,
        root=br.designated_root,
        root_path_cost=br.root_path_cost,
        bridge_id=br.bridge_id,
        port_id=p.port_id,
        message_age=message_age,
        max_age=br.max_age,
        hello_time=br.hello_time,
        forward_delay=br.forward_delay,
    )
    if message_age < br.max_age:
        br_send_config_bpdu(p, bpdu)
        p.topology_change_ack = 0
        p.config_pending = 0
        if br.stp_enabled == BR_KERNEL_STP:
            p.hold_timer.mod(round_jiffies(net, now + BR_HOLD_TIME_S * net.clock.hz))


@kernel("br_record_config_information")
def _record_config_information(p: NetBridgePort, bpdu: BrConfigBpdu) -> None:
    """Kernel: br_record_config_information()."""
    now = _now(p.br)
    p.designated_root = bpdu.root
    p.designated_cost = bpdu.root_path_cost
    p.designated_bridge = bpdu.bridge_id
    p.designated_port = bpdu.port_id
    p.designated_age = now - bpdu.message_age
    p.message_age_timer.mod(now + (bpdu.max_age - bpdu.message_age))


@kernel("br_record_config_timeout_values")
def _record_config_timeout_values(br: NetBridge, bpdu: BrConfigBpdu) -> None:
    """Kernel: br_record_config_timeout_values()."""
    br.max_age = bpdu.max_age
    br.hello_time = bpdu.hello_time
    br.forward_delay = bpdu.forward_delay
    br_set_topology_change(br, bpdu.topology_change)


@kernel("br_transmit_tcn")
def br_transmit_tcn(br: NetBridge) -> None:
    """Kernel: br_transmit_tcn()."""
    p = br.get_port(br.root_port)
    if p is not None:
        br_send_tcn_bpdu(p)


@kernel("br_should_become_designated_port")
def _should_become_designated_port(p: NetBridgePort) -> bool:
    """Kernel: br_should_become_designated_port()."""
    br = p.br
    if br_is_designated_port(p):
        return True
    if p.designated_root != br.designated_root:
        return True
    if br.root_path_cost != p.designated_cost:
        return br.root_path_cost < p.designated_cost
    if br.bridge_id != p.designated_bridge:
        return br.bridge_id < p.designated_bridge
    return p.port_id < p.designated_port


@kernel("br_designated_port_selection")
def br_designated_port_selection(br: NetBridge) -> None:
    """Kernel: br_designated_port_selection()."""
    for p in br.port_list:
        if p.state != BR_STATE_DISABLED and _should_become_designated_port(p):
            br_become_designated_port(p)


@kernel("br_supersedes_port_info")
def _supersedes_port_info(p: NetBridgePort, bpdu: BrConfigBpdu) -> bool:
    """Kernel: br_supersedes_port_info()."""
    if bpdu.root != p.designated_root:
        return bpdu.root < p.designated_root
    if bpdu.root_path_cost != p.designated_cost:
        return bpdu.root_path_cost < p.designated_cost
    if bpdu.bridge_id != p.designated_bridge:
        return bpdu.bridge_id < p.designated_bridge
    if bpdu.bridge_id != p.br.bridge_id:
        return True
    return bpdu.port_id <= p.designated_port


def _topology_change_acknowledged(br: NetBridge) -> None:
    br.topology_change_detected = 0
    br.tcn_timer.delete()


@kernel("net/bridge/br_stp.c", "br_topology_change_detection")
def br_topology_change_detection(br: NetBridge) -> None:
    """Kernel: net/bridge/br_stp.c, br_topology_change_detection()."""
    if br.stp_enabled != BR_KERNEL_STP:
        return
    isroot = br_is_root_bridge(br)
    br.log.info(
        "br_topology_change",
        msg=f"topology change detected, {'propagating' if isroot else 'sending tcn bpdu'}",
    )
    now = _now(br)
    if isroot:
        br_set_topology_change(br, 1)
        br.topology_change_timer.mod(now + br.bridge_forward_delay + br.bridge_max_age)
    elif not br.topology_change_detected:
        br_transmit_tcn(br)
        br.tcn_timer.mod(now + br.bridge_hello_time)
    br.topology_change_detected = 1


@kernel("br_config_bpdu_generation")
def br_config_bpdu_generation(br: NetBridge) -> None:
    """Kernel: br_config_bpdu_generation()."""
    for p in br.port_list:
        if p.state != BR_STATE_DISABLED and br_is_designated_port(p):
            br_transmit_config(p)


@kernel("br_configuration_update")
def br_configuration_update(br: NetBridge) -> None:
    """Kernel: br_configuration_update()."""
    br_root_selection(br)
    br_designated_port_selection(br)


@kernel("br_become_designated_port")
def br_become_designated_port(p: NetBridgePort) -> None:
    """Kernel: br_become_designated_port()."""
    br = p.br
    p.designated_root = br.designated_root
    p.designated_cost = br.root_path_cost
    p.designated_bridge = br.bridge_id
    p.designated_port = p.port_id


@kernel("br_make_blocking")
def _make_blocking(p: NetBridgePort) -> None:
    """Kernel: br_make_blocking()."""
    if p.state not in (BR_STATE_DISABLED, BR_STATE_BLOCKING):
        if p.state in (BR_STATE_FORWARDING, BR_STATE_LEARNING):
            br_topology_change_detection(p.br)
        br_set_state(p, BR_STATE_BLOCKING)
        p.forward_delay_timer.delete()


@kernel("br_make_forwarding")
def _make_forwarding(p: NetBridgePort) -> None:
    """Kernel: br_make_forwarding()."""
    br = p.br
    if p.state != BR_STATE_BLOCKING:
        return
    if br.stp_enabled == BR_NO_STP or br.forward_delay == 0:
        br_set_state(p, BR_STATE_FORWARDING)
        br_topology_change_detection(br)
        p.forward_delay_timer.delete()
    elif br.stp_enabled == BR_KERNEL_STP:
        br_set_state(p, BR_STATE_LISTENING)
    else:
        br_set_state(p, BR_STATE_LEARNING)
    if br.forward_delay != 0:
        p.forward_delay_timer.mod(_now(br) + br.forward_delay)


@kernel("net/bridge/br_stp.c", "br_port_state_selection")
def br_port_state_selection(br: NetBridge) -> None:
    """Root and designated ports forward, the others block; carrier follows.

    Kernel: net/bridge/br_stp.c, br_port_state_selection().
    """
    liveports = 0
    for p in br.port_list:
        if p.state == BR_STATE_DISABLED:
            continue
        if br.stp_enabled != BR_USER_STP:
            if p.port_no == br.root_port:
                p.config_pending = 0
                p.topology_change_ack = 0
                _make_forwarding(p)
            elif br_is_designated_port(p):
                p.message_age_timer.delete()
                _make_forwarding(p)
            else:
                p.config_pending = 0
                p.topology_change_ack = 0
                _make_blocking(p)
        if p.state == BR_STATE_FORWARDING:
            liveports += 1
    if liveports == 0:
        netif_carrier_off(br.dev)
    else:
        netif_carrier_on(br.dev)


def _topology_change_acknowledge(p: NetBridgePort) -> None:
    p.topology_change_ack = 1
    br_transmit_config(p)


@kernel("net/bridge/br_stp.c", "br_received_config_bpdu")
def br_received_config_bpdu(p: NetBridgePort, bpdu: BrConfigBpdu) -> None:
    """Kernel: net/bridge/br_stp.c, br_received_config_bpdu()."""
    p.stats.rx_bpdu += 1
    br = p.br
    was_root = br_is_root_bridge(br)
    if _supersedes_port_info(p, bpdu):
        _record_config_information(p, bpdu)
        br_configuration_update(br)
        br_port_state_selection(br)
        if not br_is_root_bridge(br) and was_root:
            br.hello_timer.delete()
            if br.topology_change_detected:
                br.topology_change_timer.delete()
                br_transmit_tcn(br)
                br.tcn_timer.mod(_now(br) + br.bridge_hello_time)
        if p.port_no == br.root_port:
            _record_config_timeout_values(br, bpdu)
            br_config_bpdu_generation(br)
            if bpdu.topology_change_ack:
                _topology_change_acknowledged(br)
    elif br_is_designated_port(p):
        br_transmit_config(p)  # br_reply()


@kernel("net/bridge/br_stp.c", "br_received_tcn_bpdu")
def br_received_tcn_bpdu(p: NetBridgePort) -> None:
    """Kernel: net/bridge/br_stp.c, br_received_tcn_bpdu()."""
    p.stats.rx_tcn += 1
    if br_is_designated_port(p):
        p.br.log.info("br_tcn_received", msg=f"port {p.port_no}({p.dev.name}) received tcn bpdu")
        br_topology_change_detection(p.br)
        _topology_change_acknowledge(p)


@kernel("__br_set_topology_change")
def br_set_topology_change(br: NetBridge, val: int) -> None:
    """Kernel: __br_set_topology_change() (ageing drops to 2 × forward_delay meanwhile)."""
    if br.stp_enabled == BR_KERNEL_STP and br.topology_change != val:
        br.ageing_time = 2 * br.forward_delay if val else br.bridge_ageing_time
    br.topology_change = val


# -- parameters (ip link set br0 type bridge hello_time …) ------------------------------------
def _range_error(msg: str) -> ConfigError:
    """The kernel returns ERANGE without an extack message (*msg* names the check)."""
    del msg
    return ConfigError("RTNETLINK answers: Numerical result out of range", errno.ERANGE)


@kernel("br_set_hello_time")
def br_set_hello_time(br: NetBridge, val: int) -> None:
    """Kernel: br_set_hello_time() (ERANGE outside 1–10 s)."""
    net = br.dev.net
    t = clock_t_to_jiffies(net, val)
    if t < BR_MIN_HELLO_TIME_S * net.clock.hz or t > BR_MAX_HELLO_TIME_S * net.clock.hz:
        raise _range_error("Invalid Hello Time")
    br.bridge_hello_time = t
    if br_is_root_bridge(br):
        br.hello_time = t


@kernel("br_set_max_age")
def br_set_max_age(br: NetBridge, val: int) -> None:
    """Kernel: br_set_max_age() (ERANGE outside 6–40 s)."""
    net = br.dev.net
    t = clock_t_to_jiffies(net, val)
    if t < BR_MIN_MAX_AGE_S * net.clock.hz or t > BR_MAX_MAX_AGE_S * net.clock.hz:
        raise _range_error("Invalid Max Age")
    br.bridge_max_age = t
    if br_is_root_bridge(br):
        br.max_age = t


@kernel("__br_set_forward_delay")
def br_set_forward_delay_jiffies(br: NetBridge, t: int) -> None:
    """Kernel: __br_set_forward_delay()."""
    br.bridge_forward_delay = t
    if br_is_root_bridge(br):
        br.forward_delay = t


@kernel("br_set_forward_delay")
def br_set_forward_delay(br: NetBridge, val: int) -> None:
    """Kernel: br_set_forward_delay() (2–30 s, checked only while STP is on)."""
    net = br.dev.net
    t = clock_t_to_jiffies(net, val)
    hz = net.clock.hz
    if br.stp_enabled != BR_NO_STP and (
        t < BR_MIN_FORWARD_DELAY_S * hz or t > BR_MAX_FORWARD_DELAY_S * hz
    ):
        raise _range_error("Invalid Forward Delay")
    br_set_forward_delay_jiffies(br, t)


@kernel("br_set_ageing_time")
def br_set_ageing_time(br: NetBridge, val: int) -> None:
    """Kernel: br_set_ageing_time(): 0 never ages, 1 forgets at once; gc runs now."""
    t = clock_t_to_jiffies(br.dev.net, val)
    br.bridge_ageing_time = t
    br.ageing_time = t
    br.gc_work.mod(_now(br))  # mod_delayed_work(…, 0)


# -- timers (br_stp_timer.c) -------------------------------------------------------------------
def _is_designated_for_some_port(br: NetBridge) -> bool:
    return any(
        p.state != BR_STATE_DISABLED and p.designated_bridge == br.bridge_id for p in br.port_list
    )


@kernel("br_hello_timer_expired")
def _hello_timer_expired(br: NetBridge) -> None:
    """Kernel: br_hello_timer_expired()."""
    if br.dev.flags & 0x1:
        br_config_bpdu_generation(br)
        if br.stp_enabled == BR_KERNEL_STP:
            net = br.dev.net
            br.hello_timer.mod(round_jiffies(net, net.clock.jiffies + br.hello_time))


@kernel("br_message_age_timer_expired")
def _message_age_timer_expired(p: NetBridgePort) -> None:
    """Kernel: br_message_age_timer_expired()."""
    if p.state == BR_STATE_DISABLED:
        return
    br = p.br
    br.log.info(
        "br_neighbor_lost",
        msg=f"port {p.port_no}({p.dev.name}) neighbor {p.designated_bridge[:2].hex()}."
        f"{p.designated_bridge[2:].hex(':')} lost",
    )
    was_root = br_is_root_bridge(br)
    br_become_designated_port(p)
    br_configuration_update(br)
    br_port_state_selection(br)
    if br_is_root_bridge(br) and not was_root:
        br_become_root_bridge(br)


@kernel("br_forward_delay_timer_expired")
def _forward_delay_timer_expired(p: NetBridgePort) -> None:
    """Kernel: br_forward_delay_timer_expired()."""
    br = p.br
    if p.state == BR_STATE_LISTENING:
        br_set_state(p, BR_STATE_LEARNING)
        p.forward_delay_timer.mod(_now(br) + br.forward_delay)
    elif p.state == BR_STATE_LEARNING:
        br_set_state(p, BR_STATE_FORWARDING)
        if _is_designated_for_some_port(br):
            br_topology_change_detection(br)
        netif_carrier_on(br.dev)


@kernel("br_tcn_timer_expired")
def _tcn_timer_expired(br: NetBridge) -> None:
    """Kernel: br_tcn_timer_expired()."""
    if not br_is_root_bridge(br) and br.dev.flags & 0x1:
        br_transmit_tcn(br)
        br.tcn_timer.mod(_now(br) + br.bridge_hello_time)


@kernel("br_topology_change_timer_expired")
def _topology_change_timer_expired(br: NetBridge) -> None:
    """Kernel: br_topology_change_timer_expired()."""
    br.topology_change_detected = 0
    br_set_topology_change(br, 0)


@kernel("br_hold_timer_expired")
def _hold_timer_expired(p: NetBridgePort) -> None:
    """Kernel: br_hold_timer_expired()."""
    if p.config_pending:
        br_transmit_config(p)


@kernel("br_stp_timer_init")
def br_stp_timer_init(br: NetBridge) -> None:
    """Kernel: br_stp_timer_init()."""
    br.hello_timer.function = lambda: _hello_timer_expired(br)
    br.tcn_timer.function = lambda: _tcn_timer_expired(br)
    br.topology_change_timer.function = lambda: _topology_change_timer_expired(br)


@kernel("br_stp_port_timer_init")
def br_stp_port_timer_init(p: NetBridgePort) -> None:
    """Kernel: br_stp_port_timer_init()."""
    p.message_age_timer.function = lambda: _message_age_timer_expired(p)
    p.forward_delay_timer.function = lambda: _forward_delay_timer_expired(p)
    p.hold_timer.function = lambda: _hold_timer_expired(p)


@kernel("br_timer_value")
def br_timer_value(br: NetBridge, timer: TimerList) -> int:
    """Ticks left in USER_HZ (0 if not armed). Kernel: br_timer_value()."""
    if not timer.pending:
        return 0
    net = br.dev.net
    return max(0, (timer.expires - net.clock.jiffies) * 100 // net.clock.hz)
