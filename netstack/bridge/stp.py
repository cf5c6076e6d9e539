"""LLC Type 1 receive and the STP SAP: how BPDUs find the bridge.

Theory of operation: an 802.3 frame (length, not EtherType) carrying LLC
arrives with ``skb.protocol == ETH_P_802_2``. ``llc_rcv`` (registered for
that protocol when the ``llc`` module loads) reads DSAP, SSAP and control,
trims the frame to the 802.3 length and pulls the 3-byte UI header;
``stp_pdu_rcv`` accepts DSAP = SSAP = 0x42 with a UI control and hands the
BPDU to the registered STP protocol — the bridge's ``br_stp_rcv``. Anything
else is counted and dropped.

Kernel: net/llc/llc_input.c (llc_rcv, llc_fixup_skb), net/802/stp.c (stp_pdu_rcv).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from netstack.core.net import PacketType
from netstack.core.net_generic import NetKey
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.sites import kernel
from netstack.wire.stp import LLC_SAP_BSPAN, LLC_UI

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["ETH_P_802_2", "llc_init", "stp_init", "stp_proto_register"]

ETH_P_802_2: Final = 0x0004
GARP_ADDR_MIN: Final = 0x20
GARP_ADDR_MAX: Final = 0x2F

StpRcv = Callable[[SkBuff, "NetDevice"], None]


@kernel("net/llc/llc_input.c", "llc_rcv", "llc_fixup_skb")
def llc_rcv(net: Net, skb: SkBuff, dev: NetDevice, pt: PacketType, orig: NetDevice) -> None:
    """Kernel: net/llc/llc_input.c, llc_rcv() / llc_fixup_skb() for a UI PDU."""
    d = skb.data
    buf = skb.buf
    if skb.tail - d < 3:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return
    dsap, ssap, ctrl = buf[d], buf[d + 1], buf[d + 2]
    if ctrl & 0x3 != 0x3:  # not a U-format PDU: llc_len 4; no SAP here takes those
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return
    m = skb.mac_header
    pdulen = (buf[m + 12] << 8) | buf[m + 13]
    data_size = pdulen - 3
    if data_size < 0 or skb.tail - d - 3 < data_size:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return
    skb.data = d + 3
    skb.transport_header = skb.data
    skb.tail = skb.data + data_size  # pskb_trim_rcsum(): drop the Ethernet padding
    if dsap != LLC_SAP_BSPAN:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)  # no SAP registered for it
        return
    stp_pdu_rcv(net, skb, dev, ssap, ctrl)


@kernel("net/802/stp.c", "stp_pdu_rcv")
def stp_pdu_rcv(net: Net, skb: SkBuff, dev: NetDevice, ssap: int, ctrl: int) -> None:
    """Kernel: net/802/stp.c, stp_pdu_rcv()."""
    if ssap != LLC_SAP_BSPAN or ctrl != LLC_UI:
        kfree_skb(skb, DropReason.STP_INVALID)
        return
    last = skb.buf[skb.mac_header + 5]
    if GARP_ADDR_MIN <= last <= GARP_ADDR_MAX:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)  # GARP/MRP applications: none here
        return
    proto = _STP_PROTO.find(net)
    if proto is None:
        kfree_skb(skb, DropReason.NOT_SPECIFIED)
        return
    proto(skb, dev)


@kernel("llc_init")
def llc_init(net: Net) -> None:
    """The ``llc`` module's init: take ETH_P_802_2. Kernel: llc_init()."""
    net.dev_add_pack(
        PacketType(
            ETH_P_802_2,
            lambda skb, dev, pt, orig: llc_rcv(net, skb, dev, pt, orig),
            name="llc_rcv",
        )
    )


def stp_init(net: Net) -> None:
    """The ``stp`` module (SAP 0x42 opened on first use; nothing to do per Net)."""


_STP_PROTO: NetKey[StpRcv] = NetKey("stp_proto")


@kernel("net/802/stp.c", "stp_proto_register")
def stp_proto_register(net: Net, rcv: StpRcv) -> None:
    """Kernel: net/802/stp.c, stp_proto_register() (the bridge's br_stp_rcv)."""
    _STP_PROTO.set(net, rcv)
