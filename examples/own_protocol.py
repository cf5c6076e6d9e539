"""Your own Trio code over an emulated network: a tiny key-value protocol, a lossy
link, a partition, and a pcap of it all.

    client ── 2 ms, netem loss 5% + reordering ── server

The server and the client are ordinary Trio programs (``trio.serve_tcp``,
``trio.open_tcp_stream``, a host name, a timeout); netstack puts each on a
host, and the same code would run unchanged on two real machines.

python examples/own_protocol.py [PCAP]
"""

from __future__ import annotations

import sys

import trio

import netstack


# -- the protocol under test: "SET k v" / "GET k", one line each, answers on one line
async def kv_server(
    port: int, *, task_status: trio.TaskStatus[object] = trio.TASK_STATUS_IGNORED
) -> None:
    store: dict[str, str] = {}

    async def session(stream: trio.SocketStream) -> None:
        buf = b""
        async for data in stream:
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                cmd, _, rest = line.decode().partition(" ")
                if cmd == "SET":
                    key, _, value = rest.partition(" ")
                    store[key] = value
                    await stream.send_all(b"OK\n")
                elif cmd == "GET":
                    await stream.send_all(f"{store.get(rest, '')}\n".encode())

    await trio.serve_tcp(session, port, task_status=task_status)


class KvClient:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = b""

    @classmethod
    async def connect(cls, host: str, port: int) -> KvClient:
        return cls(await trio.open_tcp_stream(host, port))

    async def call(self, line: str) -> str:
        await self.stream.send_all(line.encode() + b"\n")
        while b"\n" not in self.buf:
            self.buf += await self.stream.receive_some(4096)
        answer, self.buf = self.buf.split(b"\n", 1)
        return answer.decode()


# -- the lab
async def main(pcap: str | None = None) -> dict[str, object]:
    async with netstack.open_lab(seed=1) as lab:
        client, server = lab.add_host("client"), lab.add_host("server")
        lab.add_link("client:eth0", "server:eth0", kind="nic", rate=100e6, delay=0.002)
        client.ip("addr add 10.0.0.1/24 dev eth0")
        server.ip("addr add 10.0.0.2/24 dev eth0")
        for h in (client, server):
            h.tc("qdisc add dev eth0 root netem delay 2ms 1ms loss 5% reorder 25% 50%")
        if pcap:
            client.capture("eth0", pcap)

        await server.start(kv_server, 7000)  # the server runs on its host from now on

        async with client.as_current():  # this block is the client's program
            kv = await KvClient.connect("server", 7000)  # "server" resolves in the lab
            for i in range(50):
                assert await kv.call(f"SET k{i} v{i}") == "OK"
            values = [await kv.call(f"GET k{i}") for i in range(50)]
            print(f"50 SET + 50 GET over a lossy link: {values[:3]}… in "
                  f"{trio.current_time():.3f} virtual seconds")  # fmt: skip

            # the network breaks for 20 s; the client gives up after 5 s
            lab.partition("client", "server", until=trio.current_time() + 20)
            with trio.move_on_after(5) as scope:
                await kv.call("GET k0")
            timed_out = scope.cancelled_caught
            print(f"partition: no answer within 5 s (timed out: {timed_out})")

            await trio.sleep(20)  # healed by now: TCP's retransmission gets through
            # The request we gave up on was still in TCP's send queue: its answer
            # arrives now, and a client that reuses the stream reads it as the
            # answer to its next request — the bug this test finds.
            late = await kv.call("GET k1")
            print(f"after the partition healed, on the old stream: GET k1 -> {late!r}")
            kv = await KvClient.connect("server", 7000)  # the fix: a new connection
            fresh = await kv.call("GET k1")
            print(f"on a new connection: GET k1 -> {fresh!r}")

        retrans = client.nstat().get("TcpRetransSegs", 0)
        dropped = server.drops().get("NETFILTER_DROP", 0)
        print(
            f"client retransmitted {retrans} segments; "
            f"server dropped {dropped} during the partition"
        )
        return {
            "values": values,
            "timed_out": timed_out,
            "late": late,
            "fresh": fresh,
            "retrans": retrans,
            "dropped": dropped,
        }


if __name__ == "__main__":
    netstack.run(main, sys.argv[1] if len(sys.argv) > 1 else None)
