"""A link end driven from Python: send raw frames into a host, read what it sends.

Theory of operation: ``lab.add_port("b:eth0")`` gives host *b* an Ethernet NIC
``eth0`` whose cable ends in a :class:`Port` instead of another host. Frames
written with :meth:`Port.send` arrive at ``eth0`` as if from the wire (any
bytes: short, malformed, hostile — that is the point); every frame ``eth0``
transmits can be read with :meth:`Port.receive`. Tests use it to speak to a
stack byte by byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from netstack.core.netdevice import NetDevice

__all__ = ["Port"]


class Port:
    """The Python end of a cable (a ``FrameSink`` for the NIC driver)."""

    def __init__(self, dev: NetDevice, capacity: int = 4096) -> None:
        self.dev = dev
        self._send, self._recv = trio.open_memory_channel[bytes](capacity)
        self.dropped = 0
        self.received = 0
        self.sent = 0

    # -- FrameSink (called by the NIC's wire) --------------------------------------
    def deliver(self, frame: bytes) -> None:
        try:
            self._send.send_nowait(frame)
            self.received += 1
        except trio.WouldBlock:
            self.dropped += 1

    def carrier_up(self) -> bool:
        return True

    # -- the Python side ---------------------------------------------------------------------
    def send_nowait(self, frame: bytes | bytearray) -> None:
        """Put *frame* on the wire towards the device, now."""
        self.sent += 1
        self.dev.net.cpus.run_on(0)
        self.dev.priv.deliver(bytes(frame))

    async def send(self, frame: bytes | bytearray) -> None:
        """Put *frame* on the wire towards the device, then yield."""
        self.send_nowait(frame)
        await trio.lowlevel.checkpoint()

    async def receive(self) -> bytes:
        """The next frame the device transmitted (wrap in ``trio.fail_after`` to bound it)."""
        return await self._recv.receive()

    def receive_nowait(self) -> bytes:
        """The next frame, or ``trio.WouldBlock``."""
        return self._recv.receive_nowait()

    def drain(self) -> list[bytes]:
        """Every frame received so far."""
        out = []
        while True:
            try:
                out.append(self._recv.receive_nowait())
            except trio.WouldBlock:
                return out
