"""Packet capture on a device: a packet tap writing pcap files (or keeping frames).

Theory of operation: a capture registers an ``ETH_P_ALL`` packet type on the
device, as ``tcpdump`` does through ``AF_PACKET``: it sees every frame the
device receives (from the MAC header) and every frame it transmits
(``dev_queue_xmit_nit``). Frames are written with the host's clock as
timestamp through dpkt's pcap writer (link type Ethernet), so Wireshark and
tcpdump read them.

A frame whose VLAN tag is in the skb's metadata (hardware-accelerated, as
veth and ``rx-vlan-offload`` NICs keep it) is written with the tag back in
the frame, as libpcap reconstructs it from ``PACKET_AUXDATA``.

One deliberate difference from a real tap: a transmitted packet whose L4
checksum is left to the device (``CHECKSUM_PARTIAL``) is written with the
checksum filled in, i.e. as it would be on the wire, so captures dissect
without "bad checksum" warnings.

Kernel: net/packet/af_packet.c (packet_rcv), net/core/dev.c (dev_queue_xmit_nit).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final

import dpkt

from netstack.core.net import PacketType
from netstack.core.skbuff import (
    CHECKSUM_PARTIAL,
    PACKET_LOOPBACK,
    PACKET_OUTGOING,
    SkBuff,
    consume_skb,
)
from netstack.wire.checksum import CSUM_MANGLED_0, csum_fold, csum_partial

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

LINKTYPE_RAW: Final = 101

__all__ = ["Capture"]

DLT_EN10MB: Final = 1
_H: Final = struct.Struct("!H")
_HH: Final = struct.Struct("!HH")


class Capture:
    """A running capture on one device (see :meth:`netstack.Host.capture`).

    Use as a context manager or call :meth:`stop`. ``frames`` holds
    ``(timestamp, bytes, outgoing)`` tuples when no path was given (or
    ``keep=True``); *callback*, if given, is called with each such tuple as
    the frame passes (``tcpdump`` in the shell prints from it).
    """

    def __init__(
        self,
        net: Net,
        dev: NetDevice,
        path: str | Path | None,
        *,
        keep: bool = False,
        snaplen: int = 262144,
        callback: Callable[[float, bytes, bool], None] | None = None,
    ) -> None:
        self.net = net
        self.dev = dev
        self.path = Path(path) if path is not None else None
        self.snaplen = snaplen
        self.frames: list[tuple[float, bytes, bool]] = []
        self.keep = keep or (path is None and callback is None)
        self.count = 0
        self.callback = callback
        self._file: BinaryIO | None = None
        self._writer: dpkt.pcap.Writer | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("wb")
            # devices without a link-layer header (tunnels) capture as raw IP, as libpcap does
            linktype = DLT_EN10MB if dev.header_ops is not None or dev.type == 772 else LINKTYPE_RAW
            self._writer = dpkt.pcap.Writer(self._file, snaplen=snaplen, linktype=linktype)
        self._pt = PacketType(0x0003, self._tap, dev=dev, name=f"capture:{dev.name}")
        net.dev_add_pack(self._pt)

    def _tap(self, skb: SkBuff, dev: NetDevice, pt: PacketType, orig_dev: NetDevice) -> None:
        if skb.pkt_type == PACKET_LOOPBACK:
            # a multicast/broadcast copy looped back by dev_loopback_xmit(): the tap
            # saw it leave already ("if (skb->pkt_type == PACKET_LOOPBACK) goto drop;")
            consume_skb(skb)
            return
        start = skb.mac_header if 0 <= skb.mac_header <= skb.data else skb.data
        frame = bytearray(skb.buf[start : skb.tail])
        outgoing = skb.pkt_type == PACKET_OUTGOING
        if skb.ip_summed == CHECKSUM_PARTIAL:
            cs = skb.csum_start - start
            where = cs + skb.csum_offset
            if cs >= 0 and where + 2 <= len(frame):
                _H.pack_into(frame, where, csum_fold(csum_partial(frame, cs)) or CSUM_MANGLED_0)
        if skb.vlan_proto and start == skb.mac_header:
            # an accelerated tag: libpcap puts it back where it was on the wire
            frame[12:12] = _HH.pack(skb.vlan_proto, skb.vlan_tci)
        consume_skb(skb)
        ts = self.net.clock.now()
        data = bytes(frame[: self.snaplen])
        self.count += 1
        if self._writer is not None:
            self._writer.writepkt(data, ts=ts)
        if self.keep:
            self.frames.append((ts, data, outgoing))
        if self.callback is not None:
            self.callback(ts, data, outgoing)

    def stop(self) -> None:
        """Detach the tap and close the file."""
        self.net.dev_remove_pack(self._pt)
        if self._file is not None:
            self._file.close()
            self._file = None
            self._writer = None

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
