"""Your own asyncio code over an emulated network: an echo server and a client with
timeouts, a lossy link, a partition, and a pcap.

    client ── 2 ms, netem loss 5% + reordering ── server

The server (``asyncio.start_server``) and the client (``asyncio.open_connection``,
``asyncio.wait_for``) are ordinary asyncio programs that would run unchanged with
``asyncio.run`` on two real machines; netstack runs each on a host, on asyncio's
loop driven by Trio (trio-asyncio) in the lab's virtual time.

python examples/asyncio_echo.py [PCAP]      (needs: pip install 'netstack[asyncio]')
"""

from __future__ import annotations

import asyncio
import sys

import trio

import netstack


# -- the programs under test: plain asyncio
async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
    writer.close()


async def echo_lines(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, lines: int, patience: float
) -> bool:
    """Send *lines* lines, one at a time; True if each came back in *patience* seconds."""
    for i in range(lines):
        writer.write(b"line %d\n" % i)
        await writer.drain()
        if await asyncio.wait_for(reader.readline(), patience) != b"line %d\n" % i:
            return False
    return True


async def ask_once(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, patience: float
) -> tuple[bytes | None, float]:
    """One line; its echo (None if none came in *patience* s) and the seconds waited."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    writer.write(b"are you there?\n")
    try:
        return await asyncio.wait_for(reader.readline(), patience), loop.time() - t0
    except TimeoutError:
        return None, loop.time() - t0


# -- the lab
async def main(pcap: str | None = None) -> dict[str, object]:
    async with netstack.open_lab(seed=1) as lab:
        c, s = lab.add_host("client"), lab.add_host("server")
        lab.add_link("client:eth0", "server:eth0", kind="nic", rate=100e6, delay=0.002)
        c.ip("addr add 10.0.0.1/24 dev eth0")
        s.ip("addr add 10.0.0.2/24 dev eth0")
        for h in (c, s):
            h.tc("qdisc add dev eth0 root netem delay 2ms 1ms loss 5% reorder 25% 50%")
        if pcap:
            c.capture("eth0", pcap)

        # the server keeps serving on its host after this call returns
        await s.run_asyncio(asyncio.start_server, echo, None, 7)
        # the client's connection, too: later calls use it
        reader, writer = await c.run_asyncio(asyncio.open_connection, "server", 7)
        ok = await c.run_asyncio(echo_lines, reader, writer, 100, 5.0)
        print(f"100 lines echoed over a lossy link: {ok}")

        # the network breaks for 20 s; the client gives up after 5 s
        lab.partition("client", "server", until=trio.current_time() + 20)
        answer, waited = await c.run_asyncio(ask_once, reader, writer, 5.0)
        print(f"partition: answer {answer!r} after {waited:.1f} s")
        await trio.sleep(20)  # healed: TCP's retransmission gets the line through
        late = await c.run_asyncio(reader.readline)
        print(f"after the partition healed, the late echo: {late!r}")
        writer.close()

        retrans = c.nstat().get("TcpRetransSegs", 0)
        print(f"client retransmitted {retrans} segments")
        return {"ok": ok, "answer": answer, "waited": waited, "late": late, "retrans": retrans}


if __name__ == "__main__":
    netstack.run(main, sys.argv[1] if len(sys.argv) > 1 else None)
