"""TCP's clocks read as the kernel's: from boot, never 0 when a socket exists.

The kernel keeps "none yet" as a 0 stamp (``retrans_stamp``, ``rto_stamp``);
its clocks (``tcp_clock_ns``, CLOCK_MONOTONIC since boot) never read 0 when a
socket connects. netstack's read ``TCP_CLOCK_BOOT_MS`` at virtual time 0, so a
connect at virtual time 0 times out as one a second later does (it gave up
4 s late before, its first retransmission stamped 0), and timestamp offsets
compensate, so TSvals on the wire are what they were.
"""

from __future__ import annotations

from typing import Any

import dpkt
import pytest
import trio

from netstack.host import Host, Lab
from netstack.socket import AF_INET, SOCK_STREAM
from netstack.tcp import tcp_of
from netstack.tcp.proto import TCP_CLOCK_BOOT_MS


def _black_hole(lab: Lab) -> tuple[Host, Any]:
    a = lab.add_host("a")
    port = lab.add_port("a:eth0")
    a.ip("addr add 10.0.0.1/24 dev eth0")
    a.sysctl("net.ipv4.tcp_syn_retries=2")
    a.ip("neigh add 10.0.0.2 lladdr 02:00:00:00:00:02 dev eth0")
    return a, port


async def test_connect_at_virtual_time_zero_times_out_on_time(
    lab: Lab, autojump_clock: object
) -> None:
    """tcp_syn_retries=2 into a black hole: ETIMEDOUT after 7 s, as Linux 6.18
    (7.13 s in a namespace) and as a connect one second later — not the 11 s
    it took when the first retransmission's stamp read 0."""
    a, _ = _black_hole(lab)
    assert trio.current_time() == 0
    c = a.socket(AF_INET, SOCK_STREAM)
    with pytest.raises(TimeoutError):
        await c.connect(("10.0.0.2", 80))
    assert trio.current_time() == pytest.approx(7, abs=0.1)
    assert tcp_of(a.net).snmp()["TcpExt"].TCPSynRetrans == 5


async def test_tsvals_do_not_move(lab: Lab, autojump_clock: object) -> None:
    """The SYN's TSval is still the per-pair offset plus the virtual milliseconds."""
    a, port = _black_hole(lab)
    await trio.sleep(0.25)
    c = a.socket(AF_INET, SOCK_STREAM)
    with trio.move_on_after(0.1):
        await c.connect(("10.0.0.2", 80))
    tcp = tcp_of(a.net)
    assert tcp.tcp_time_stamp_ms() == 350 + TCP_CLOCK_BOOT_MS
    frames = []
    while True:
        try:
            frames.append(dpkt.ethernet.Ethernet(port.receive_nowait()))
        except trio.WouldBlock:
            break
    (syn,) = [e.data.data for e in frames if isinstance(e.data, dpkt.ip.IP) and e.data.p == 6]
    opts = dict(dpkt.tcp.parse_opts(syn.opts))
    tsval = int.from_bytes(opts[dpkt.tcp.TCP_OPT_TIMESTAMP][:4], "big")
    offset = (tcp.secure_tcp_ts_off(0x0A000001, 0x0A000002) + TCP_CLOCK_BOOT_MS) & 0xFFFFFFFF
    assert tsval == (offset + 250) & 0xFFFFFFFF
