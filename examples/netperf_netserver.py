"""netperf from Python: a netserver, the control connection, TCP_RR and a timed UDP_STREAM.

python examples/netperf_netserver.py

Two hosts on a 100 Mbit/s, 1 ms link, in timed mode (their CPUs' time
exists). netperf first fails — nothing serves b's control port — then b runs
a netserver, and TCP_RR and UDP_STREAM go through it: parameters out on the
control connection, results back, as netperf and netserver do.
"""

from __future__ import annotations

import trio

import netstack
from netstack.cpu.timed import Machine, TimedModel
from netstack.userspace.netperf import netperf
from netstack.userspace.netperf.netperf import (
    NETSERVER_PORT,
    NetperfControlError,
    NetperfResult,
    netserver,
)


async def main() -> list[NetperfResult]:
    async with (
        netstack.open_lab(timed=TimedModel(Machine())) as lab,
        trio.open_nursery() as nursery,
    ):
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind="nic", rate=100e6, delay=0.001)
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        try:
            await netperf(a, b, "10.0.0.2", transactions=1, control_port=NETSERVER_PORT)
        except NetperfControlError as e:
            print(f"no netserver on {e.address} port {e.port}: {e.strerror}")

        await nursery.start(netserver, b)  # netserver -p 12865 on b
        rr = await netperf(
            a, b, "10.0.0.2", test="TCP_RR", seconds=0.1, control_port=NETSERVER_PORT
        )
        print(
            f"TCP_RR: {rr.transactions} transactions in {rr.virtual_seconds:.3f} s, "
            f"{rr.transactions_per_s:.1f} per s; CPU a {rr.local_cpu:.2f} %, "
            f"b {rr.remote_cpu:.2f} %"
        )
        udp = await netperf(
            a,
            b,
            "10.0.0.2",
            test="UDP_STREAM",
            port=12867,
            seconds=0.1,
            send_size=1400,
            control_port=NETSERVER_PORT,
        )
        print(
            f"UDP_STREAM: {udp.bytes_sent // 1400} datagrams sent, "
            f"{udp.messages_received} received in {udp.virtual_seconds:.3f} s: "
            f"{udp.throughput_mbps:.1f} Mbit/s; CPU a {udp.local_cpu:.2f} %, "
            f"b {udp.remote_cpu:.2f} %"
        )
        print(b.ss("-ltn"))
        nursery.cancel_scope.cancel()
    return [rr, udp]


if __name__ == "__main__":
    netstack.run(main)
