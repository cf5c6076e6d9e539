"""Fuzz the layer-2 receive handlers: ``br_handle_frame``, STP's BPDU receive, VLAN untagging.

Each example builds a switch ``s`` (STP on, VLAN filtering on; a port ``p1``
driven from Python, a port to host ``h``; ``p1`` is a trunk for VLAN 10) and
a host ``v`` with a VLAN device ``eth0.10`` on a Python-driven NIC, then
injects frames built valid — broadcast, multicast, unicast, 802.1Q and
802.1ad tags (nested too), configuration and TCN BPDUs, LLC frames — and
mutated by hypothesis (truncations, byte overwrites, bad source MACs).

For every frame: nothing escapes the stack; afterwards the switch still
forwards a valid broadcast from ``p1`` to ``h`` and ``v`` still receives a
tagged ARP request on ``eth0.10``.
"""

from __future__ import annotations

from typing import Final

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.host import open_lab, run

FUZZ: Final = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SRC: Final = bytes.fromhex("020000000077")
BCAST: Final = b"\xff" * 6
STP: Final = bytes.fromhex("0180c2000000")
IPV4_ONLY: Final[dict[str, str | int]] = {"net.ipv6.conf.all.disable_ipv6": 1}


def arp(tag: bytes = b"") -> bytes:
    body = bytes.fromhex("0001080006040001") + SRC + bytes([10, 0, 0, 7]) + bytes(6)
    body += bytes([10, 0, 0, 1])
    return BCAST + SRC + tag + b"\x08\x06" + body + bytes(18)


def bpdu(kind: int) -> bytes:
    if kind == 0:
        data = b"\x00\x00\x00\x00\x00" + b"\x10\x00" + SRC + bytes(4) + b"\x10\x00" + SRC
        data += b"\x80\x01" + b"\x00\x00\x14\x00\x02\x00\x0f\x00"
    else:
        data = b"\x00\x00\x00\x80"
    llc = b"\x42\x42\x03"
    return STP + SRC + len(llc + data).to_bytes(2, "big") + llc + data


BASES: Final = [
    arp(),
    arp(b"\x81\x00\x00\x0a"),
    arp(b"\x88\xa8\x00\x64\x81\x00\x00\x0a"),
    arp(b"\x81\x00\x00\x00"),  # priority tag
    bpdu(0),
    bpdu(1),
    BCAST[:5] + b"\x00" + SRC + b"\x81\x00",  # a tag and nothing behind it
    STP[:5] + b"\x0e" + SRC + b"\x00\x30" + b"\xaa\xaa\x03" + bytes(45),  # LLDP-ish LLC
]


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    frame = bytearray(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(0, 3))):
        if not frame:
            break
        i = draw(st.integers(0, len(frame) - 1))
        frame[i] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        frame = frame[: draw(st.integers(0, len(frame)))]
    return bytes(frame)


@FUZZ
@given(st.lists(frames(), min_size=1, max_size=6))
@pytest.mark.slow
def test_layer2_receive_survives_anything(batch: list[bytes]) -> None:
    async def main() -> None:
        async with open_lab() as lab:
            s = lab.add_switch("s", stp=True, vlan_filtering=True, sysctls=IPV4_ONLY)
            s.ip("link set br0 type bridge forward_delay 200")  # forwarding after 4 s
            p1 = lab.add_port("s:p1")
            h = lab.add_host("h", sysctls=IPV4_ONLY)
            lab.add_link("h:eth0", "s")
            s.bridge("vlan add dev p1 vid 10")
            v = lab.add_host("v", sysctls=IPV4_ONLY)
            pv = lab.add_port("v:eth0")
            v.ip("link add link eth0 name eth0.10 type vlan id 10")
            v.ip("link set eth0.10 up")
            cap = h.capture("eth0")
            await trio.sleep(5)
            for frame in batch:
                p1.send_nowait(frame)
                pv.send_nowait(frame)
            await trio.sleep(0.5)
            before = sum(1 for _, f, out in cap.frames if not out and f[6:12] == SRC)
            vrx = v.dev("eth0.10").statistics().rx_packets
            p1.send_nowait(arp())
            pv.send_nowait(arp(b"\x81\x00\x00\x0a"))
            await trio.sleep(0.01)
            after = sum(1 for _, f, out in cap.frames if not out and f[6:12] == SRC)
            assert after == before + 1
            assert v.dev("eth0.10").statistics().rx_packets == vrx + 1

    run(main)
