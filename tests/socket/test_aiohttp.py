"""Issue 14's acceptance (asyncio part): aiohttp, unmodified, client and server over a lab.

aiohttp's ``ClientSession`` on host ``a`` and its web server (``AppRunner`` +
``TCPSite``) on host ``b``, both on asyncio — the lab's asyncio loop
(trio-asyncio, :mod:`netstack.socket.aio`): clean, under 5 % loss with
reordering, and across a partition, where aiohttp's own ``ClientTimeout``
decides. The same program and seed give the same pcap.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
import trio
from adapter_apps import NETEM, aiohttp_server, lab_pair

import netstack
from netstack import Lab
from netstack.testing import seeds

BODY = bytes(range(256)) * 400  # 100 KB


async def _get_all(url: str, paths: list[str], **kw: object) -> list[tuple[int, str]]:
    async with aiohttp.ClientSession(**kw) as session:  # type: ignore[arg-type]
        out = []
        for path in paths:
            async with session.get(url + path) as r:
                out.append((r.status, await r.text()))
        return out


async def test_aiohttp_client_and_server(lab: Lab) -> None:
    a, b = lab_pair(lab)
    runner = await b.run_asyncio(aiohttp_server)

    async def client() -> tuple[list[tuple[int, str]], bytes]:
        got = await _get_all("http://b:8080", ["/one", "/two"])
        async with (
            aiohttp.ClientSession() as session,
            session.post("http://b:8080/echo", data=BODY) as r,
        ):
            echoed = await r.read()
        return got, echoed

    got, echoed = await a.run_asyncio(client)
    assert got == [(200, "b /one\n" * 20), (200, "b /two\n" * 20)]
    assert echoed == BODY[::-1]
    # the first session kept its connection alive for both GETs: two connections,
    # both over IPv6 (glibc's order puts b's 2001:db8::2 first)
    assert a.nstat()["TcpActiveOpens"] == 2
    assert b.nstat()["TcpPassiveOpens"] == 2
    assert a.nstat().get("IpOutRequests", 0) == 0
    await b.run_asyncio(runner.cleanup)


@pytest.mark.slow
@seeds(3)
async def test_aiohttp_over_loss_and_reordering(lab: Lab) -> None:
    a, b = lab_pair(lab, netem=NETEM)
    await b.run_asyncio(aiohttp_server)

    async def client() -> tuple[list[tuple[int, str]], bytes]:
        got = await _get_all("http://b:8080", [f"/{i}" for i in range(20)])
        async with (
            aiohttp.ClientSession() as session,
            session.post("http://b:8080/echo", data=BODY) as r,
        ):
            echoed = await r.read()
        return got, echoed

    got, echoed = await a.run_asyncio(client)
    assert got == [(200, f"b /{i}\n" * 20) for i in range(20)]
    assert echoed == BODY[::-1]
    retrans = a.nstat().get("TcpRetransSegs", 0) + b.nstat().get("TcpRetransSegs", 0)
    # a bound: which segments netem's seeded loss hits follows aiohttp's writes
    assert retrans > 0  # netem lost segments and TCP repaired them
    assert "dropped 0" not in a.tc("-s qdisc show dev eth0")  # netem did drop


async def test_aiohttp_partition_client_timeout(lab: Lab) -> None:
    """aiohttp's ClientTimeout decides: a connect into a partition fails after
    ``total``; a response stuck behind a partition after ``sock_read``; healed, the
    same session works again."""
    a, b = lab_pair(lab)
    await b.run_asyncio(aiohttp_server)

    async def client() -> list[object]:
        loop = asyncio.get_running_loop()
        out: list[object] = []
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            lab.partition("a", "b")
            t0 = loop.time()
            with pytest.raises(asyncio.TimeoutError):  # total: asyncio's TimeoutError
                await session.get("http://10.0.0.2:8080/")
            out.append(loop.time() - t0)
            t0 = loop.time()
            with pytest.raises(aiohttp.ConnectionTimeoutError):  # sock_connect: aiohttp's
                await session.get(
                    "http://10.0.0.2:8080/", timeout=aiohttp.ClientTimeout(sock_connect=2)
                )
            out.append(loop.time() - t0)
            lab.heal()
            async with session.get("http://10.0.0.2:8080/after") as r:
                out.append(await r.text())
            # a partition while the server is thinking: the answer never arrives
            t0 = loop.time()
            lab.partition("a", "b", at=trio.current_time() + 1)
            read_timeout = aiohttp.ClientTimeout(total=None, sock_read=3)
            with pytest.raises(aiohttp.SocketTimeoutError):
                async with session.get("http://10.0.0.2:8080/slow/2", timeout=read_timeout) as r:
                    await r.text()
            out.append(loop.time() - t0)
        return out

    elapsed, connect_elapsed, text, read_elapsed = await a.run_asyncio(client)
    assert elapsed == pytest.approx(5.0)
    assert connect_elapsed == pytest.approx(2.0)
    assert text == "b /after\n" * 20
    assert read_elapsed == pytest.approx(3.0, abs=0.01)
    # the SYNs (and their retransmissions at 1-5 s under total=5, at 1 and 2 s under
    # sock_connect=2: the first four RTOs stay 1 s, tcp_syn_linear_timeouts) never
    # reached b's stack
    assert a.nstat()["TcpExtTCPTimeouts"] == 7
    assert b.nstat()["TcpPassiveOpens"] == 1


async def _exchange(seed: int, out: list[bytes]) -> None:
    async with netstack.open_lab(seed=seed) as lab:
        a, b = lab_pair(lab, netem=NETEM)
        cap = a.capture("eth0")
        runner = await b.run_asyncio(aiohttp_server)
        await a.run_asyncio(_get_all, "http://b:8080", [f"/{i}" for i in range(5)])
        await b.run_asyncio(runner.cleanup)
        await trio.sleep(1)
        out.append(b"".join(f"{ts:.9f}".encode() + bytes(data) for ts, data, _ in cap.frames))


def test_same_seed_same_pcap() -> None:
    runs: list[bytes] = []
    netstack.run(_exchange, 5, runs)
    netstack.run(_exchange, 5, runs)
    netstack.run(_exchange, 6, runs)
    assert len(runs[0]) > 3_000
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
