"""802.1D BPDUs on the wire: building configuration and TCN BPDUs.

Theory of operation: a BPDU is an 802.3 frame (length, not EtherType, after
the MAC addresses) to the bridge group address ``01:80:c2:00:00:00``,
carrying an LLC header (DSAP = SSAP = 0x42, UI) and the 35-byte
configuration BPDU or the 4-byte TCN BPDU (:mod:`netstack.wire.stp`). Times
travel in 1/256 s; the kernel converts jiffies with ``br_set_ticks`` (round
down) and back with ``br_get_ticks`` (round up). The frame leaves through
``dev_queue_xmit`` on the port with ``TC_PRIO_CONTROL`` priority.

Receiving is ``br_stp_rcv`` (in :mod:`netstack.bridge.br_stp`, which it
drives); the LLC/STP demultiplexing is ``stp_pdu_rcv``
(:mod:`netstack.bridge`).

Kernel: net/bridge/br_stp_bpdu.c, net/llc/llc_output.c, net/802/stp.c.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from netstack.bridge.br_private import BR_KERNEL_STP, NetBridgePort
from netstack.core.dev import dev_queue_xmit
from netstack.core.skbuff import alloc_skb
from netstack.wire.ethernet import ETH_HDR, ETH_HLEN
from netstack.wire.stp import (
    BPDU_TYPE_CONFIG,
    BPDU_TYPE_TCN,
    CONFIG_BPDU,
    LLC_SAP_BSPAN,
    LLC_UI,
    STP_HZ,
)

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "BrConfigBpdu",
    "br_get_ticks",
    "br_send_config_bpdu",
    "br_send_tcn_bpdu",
    "br_set_ticks",
]

TC_PRIO_CONTROL: Final = 7
ETH_P_802_2: Final = 0x0004


@attrs.define
class BrConfigBpdu:
    """A configuration BPDU's fields, times in jiffies (kernel: ``struct br_config_bpdu``)."""

    topology_change: int = 0
    topology_change_ack: int = 0
    root: bytes = bytes(8)
    root_path_cost: int = 0
    bridge_id: bytes = bytes(8)
    port_id: int = 0
    message_age: int = 0
    max_age: int = 0
    hello_time: int = 0
    forward_delay: int = 0


def br_set_ticks(net: Net, j: int) -> int:
    """Jiffies → STP ticks (1/256 s), rounded down. Kernel: br_set_ticks()."""
    return (STP_HZ * j // net.clock.hz) & 0xFFFF


def br_get_ticks(net: Net, ticks: int) -> int:
    """STP ticks → jiffies, rounded up. Kernel: br_get_ticks()."""
    return -(-ticks * net.clock.hz // STP_HZ)


def br_send_bpdu(p: NetBridgePort, data: bytes) -> None:
    """Wrap *data* in LLC and 802.3 and transmit it on *p*. Kernel: br_send_bpdu()."""
    dev = p.dev
    length = len(data) + 3
    skb = alloc_skb(ETH_HLEN + length, headroom=32)
    skb.dev = dev
    skb.protocol = ETH_P_802_2
    skb.priority = TC_PRIO_CONTROL
    off = skb.put(ETH_HLEN + length)
    buf = skb.buf
    # llc_mac_hdr_init(): dev_hard_header() with ETH_P_802_2 writes the length
    ETH_HDR.pack_into(buf, off, p.br.group_addr, dev.dev_addr, length)
    buf[off + ETH_HLEN : off + ETH_HLEN + 3] = bytes((LLC_SAP_BSPAN, LLC_SAP_BSPAN, LLC_UI))
    buf[off + ETH_HLEN + 3 : off + ETH_HLEN + length] = data
    skb.mac_header = off
    skb.network_header = off + ETH_HLEN
    dev_queue_xmit(skb)


def br_send_config_bpdu(p: NetBridgePort, bpdu: BrConfigBpdu) -> None:
    """Kernel: net/bridge/br_stp_bpdu.c, br_send_config_bpdu()."""
    br = p.br
    if br.stp_enabled != BR_KERNEL_STP:
        return
    net = p.dev.net
    flags = (0x01 if bpdu.topology_change else 0) | (0x80 if bpdu.topology_change_ack else 0)
    data = CONFIG_BPDU.pack(
        0,  # protocol identifier
        0,  # version
        BPDU_TYPE_CONFIG,
        flags,
        bpdu.root,
        bpdu.root_path_cost,
        bpdu.bridge_id,
        bpdu.port_id,
        br_set_ticks(net, bpdu.message_age),
        br_set_ticks(net, bpdu.max_age),
        br_set_ticks(net, bpdu.hello_time),
        br_set_ticks(net, bpdu.forward_delay),
    )
    br_send_bpdu(p, data)
    p.stats.tx_bpdu += 1


def br_send_tcn_bpdu(p: NetBridgePort) -> None:
    """Kernel: net/bridge/br_stp_bpdu.c, br_send_tcn_bpdu()."""
    if p.br.stp_enabled != BR_KERNEL_STP:
        return
    br_send_bpdu(p, bytes((0, 0, 0, BPDU_TYPE_TCN)))
    p.stats.tx_tcn += 1
