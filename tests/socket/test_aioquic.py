"""aioquic, unmodified: a QUIC (UDP) client and server on asyncio over a lab.

The TLS 1.3 handshake and one bidirectional stream, over IPv6 by name and over
IPv4 through aioquic's dual-stack socket (``::ffff:10.0.0.2``); under 5 % loss
with reordering, where QUIC's own loss recovery repairs it; and into a
partition, where aioquic's ``idle_timeout`` ends the handshake attempt.
"""

from __future__ import annotations

import asyncio

import pytest
from adapter_apps import NETEM, lab_pair, quic_client_config, quic_server
from aioquic.asyncio.client import connect

from netstack import Lab
from netstack.testing import seeds

MESSAGE = b"hello over QUIC " * 500  # 8 KB: several packets each way


async def _exchange(host: str, data: bytes, **config: object) -> bytes:
    async with connect(host, 4433, configuration=quic_client_config(**config)) as conn:
        reader, writer = await conn.create_stream()
        writer.write(data)
        writer.write_eof()
        return await reader.read()


async def test_aioquic_handshake_and_stream(lab: Lab) -> None:
    a, b = lab_pair(lab)
    await b.run_asyncio(quic_server)
    assert await a.run_asyncio(_exchange, "b", MESSAGE) == MESSAGE[::-1]
    udp6 = b.snmp6()["Udp6"]
    assert udp6.InDatagrams > 4
    assert udp6.NoPorts == 0
    # over IPv4: aioquic maps 10.0.0.2 to ::ffff:10.0.0.2 on its dual-stack socket
    assert await a.run_asyncio(_exchange, "10.0.0.2", b"v4") == b"4v"
    # a bound: the datagrams are aioquic's (coalescing, ACK frequency: its version's)
    assert a.snmp()["Udp"].OutDatagrams > 0
    assert b.snmp()["Udp"].InDatagrams == a.snmp()["Udp"].OutDatagrams


@seeds(3)
async def test_aioquic_over_loss_and_reordering(lab: Lab) -> None:
    a, b = lab_pair(lab, netem=NETEM)
    await b.run_asyncio(quic_server)
    for i in range(5):
        data = MESSAGE + b"%d" % i
        assert await a.run_asyncio(_exchange, "10.0.0.2", data) == data[::-1]
    sent = a.snmp()["Udp"].OutDatagrams
    received = b.snmp()["Udp"].InDatagrams
    assert received < sent  # netem lost some, QUIC sent them again


async def test_aioquic_partition_idle_timeout(lab: Lab) -> None:
    a, b = lab_pair(lab)
    await b.run_asyncio(quic_server)
    lab.partition("a", "b")

    async def attempt() -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(ConnectionError):
            await _exchange("10.0.0.2", b"x", idle_timeout=4.0)
        return loop.time() - t0

    assert await a.run_asyncio(attempt) == pytest.approx(4.0, abs=0.01)
    assert b.snmp()["Udp"].InDatagrams == 0
    assert a.snmp()["Udp"].OutDatagrams > 1  # the Initial, then its probes
    lab.heal()
    assert await a.run_asyncio(_exchange, "10.0.0.2", b"healed") == b"delaeh"
