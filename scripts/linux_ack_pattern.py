"""Measure the real kernel's receiver ACK pattern of a bulk transfer over a veth pair.

The figures in docs/timed.md ("When the receiving application runs") came
from this script on Linux 6.18. It needs root, ``ip``, ``tcpdump``, ``nstat``
(and ``ethtool`` / ``tc`` for the variations) and dpkt; it creates two network
namespaces (``ackA``, ``ackB``) joined by a veth pair with addresses in
10.9.0.0/24, sends SIZE bytes from A in one ``sendall`` to a reader in B that
calls ``recv(BUF)`` in a loop, captures B's side, and prints per run the data
packets B received, B's ACKs (pure ACKs: not SYN or FIN), how many bytes each
ACK acknowledged that the one before did not, and ``TcpExtDelayedACKs``::

    sudo python scripts/linux_ack_pattern.py --runs 5
    sudo python scripts/linux_ack_pattern.py --ethtool "tso off gso off"
    sudo python scripts/linux_ack_pattern.py --rx-ethtool "gro on"
    sudo python scripts/linux_ack_pattern.py --tc "tbf rate 100mbit burst 64kb latency 50ms"

The namespaces are deleted at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dpkt

NS_A, NS_B = "ackA", "ackB"
ADDR_A, ADDR_B = "10.9.0.1", "10.9.0.2"
SRC_A = bytes(map(int, ADDR_A.split(".")))

READER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(({addr!r}, 5001)); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0
while d := c.recv({buf}):
    n += len(d)
print(n, flush=True)
"""
WRITER = """
import socket
c = socket.create_connection(({addr!r}, 5001)); c.sendall(bytes({size})); c.close()
"""


def sh(cmd: str, check: bool = True) -> str:
    return subprocess.run(cmd, shell=True, check=check, capture_output=True, text=True).stdout


def setup(args: argparse.Namespace) -> None:
    teardown()
    sh(f"ip netns add {NS_A} && ip netns add {NS_B}")
    sh(f"ip link add va netns {NS_A} type veth peer name vb netns {NS_B}")
    sh(f"ip -n {NS_A} addr add {ADDR_A}/24 dev va && ip -n {NS_B} addr add {ADDR_B}/24 dev vb")
    for ns, dev in ((NS_A, "va"), (NS_B, "vb")):
        sh(f"ip -n {ns} link set {dev} up && ip -n {ns} link set lo up")
        if args.ethtool:
            sh(f"ip netns exec {ns} ethtool -K {dev} {args.ethtool}")
    if args.rx_ethtool:
        sh(f"ip netns exec {NS_B} ethtool -K vb {args.rx_ethtool}")
    if args.tc:
        sh(f"tc -n {NS_A} qdisc add dev va root {args.tc}")


def teardown() -> None:
    sh(f"ip netns del {NS_A}", check=False)
    sh(f"ip netns del {NS_B}", check=False)


def run_once(args: argparse.Namespace, pcap: Path) -> dict[str, object]:
    setup(args)
    dump = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            NS_B,
            "tcpdump",
            "-i",
            "vb",
            "-s",
            "128",
            "-U",
            "-B",
            "16384",  # KiB: a busy machine otherwise drops frames from the capture
            "-Z",
            "root",
            "-w",
            str(pcap),
            "tcp",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert dump.stderr is not None
    dump.stderr.readline()  # "listening on vb"
    time.sleep(1.0)
    reader = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            NS_B,
            sys.executable,
            "-c",
            READER.format(addr=ADDR_B, buf=args.buf),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None
    reader.stdout.readline()
    sh(f"ip netns exec {NS_B} nstat -n")
    writer = WRITER.format(addr=ADDR_B, size=args.size)
    subprocess.run(["ip", "netns", "exec", NS_A, sys.executable, "-c", writer], check=True)
    got = int(reader.stdout.readline())
    reader.wait()
    time.sleep(0.5)
    counters = json.loads(sh(f"ip netns exec {NS_B} nstat -az --json"))
    counters = counters.get("kernel", counters)
    dump.terminate()
    dump.wait()
    packets, acked = 0, [0]
    isn = 0
    with pcap.open("rb") as f:
        for _, frame in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(frame).data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            if ip.src == SRC_A:
                if tcp.flags & dpkt.tcp.TH_SYN:
                    isn = tcp.seq + 1
                packets += bool(ip.len - ip.hl * 4 - tcp.off * 4)
            elif not tcp.flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN):
                acked.append((tcp.ack - isn) & 0xFFFFFFFF)
    steps = [y - x for x, y in itertools.pairwise(acked)]
    return {
        "received": got,
        "packets": packets,
        "acks": len(steps),
        "steps": steps,
        "DelayedACKs": counters.get("TcpExtDelayedACKs", 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", type=int, default=2 << 20)
    parser.add_argument("--buf", type=int, default=65536, help="the reader's recv() size")
    parser.add_argument("--ethtool", default="", help="ethtool -K features of both ends")
    parser.add_argument("--rx-ethtool", default="", help="ethtool -K features of the receiver")
    parser.add_argument("--tc", default="", help="a root qdisc on the sender's end")
    parser.add_argument("--mss", type=int, default=1448, help="to print steps in segments")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args(argv)
    runs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.runs):
                for _ in range(3):  # tcpdump sometimes misses a run: measure it again
                    r = run_once(args, Path(tmp) / "rx.pcap")
                    if r["acks"]:
                        break
                steps: list[int] = r["steps"]  # type: ignore[assignment]
                print(
                    f"run {i}: {r['packets']} data packets, {r['acks']} ACKs, "
                    f"DelayedACKs {r['DelayedACKs']}; first ACKs (segments): "
                    f"{[round(s / args.mss, 1) for s in steps[:24]]}; "
                    f"largest {max(steps) / args.mss:.0f}",
                    flush=True,
                )
                runs.append(r)
    finally:
        teardown()
    if args.json:
        args.json.write_text(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
