"""The receiver's ACK pattern of a bulk transfer, as Linux 6.x sends it (issue 16).

Figures measured on Linux 6.18 (this machine, a veth pair in two namespaces,
2 MB in one ``sendall``, a reader calling ``recv(65536)`` in a loop) are in
docs/timed.md, "When the receiving application runs"; these tests pin
netstack's own pattern, the quick ACKs at the start and the ACK every one or
two segments once the reader keeps up.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing

from netstack.core.skbuff import SkBuff
from netstack.core.sock import AF_INET, SOCK_STREAM
from netstack.host import Lab, open_lab
from netstack.tcp import TcpSock, tcp_of
from netstack.tcp import input as tcp_input
from netstack.tcp.input import tcp_incr_quickack
from netstack.tcp.rcvmem import HP_DATA, HP_MISS, sk_rmem_schedule, tcp_fast_path_data
from netstack.tcp.sock import TCP_MAX_QUICKACKS
from netstack.testing import builders
from netstack.userspace.packetdrill import run_script

MSS = 1448


async def test_a_window_under_two_segments_earns_one_quick_ack(lab: Lab) -> None:
    """``tcp_incr_quickack``: rcv_wnd / (2 * rcv_mss) quick ACKs; only zero becomes two."""
    host = lab.add_host("a")
    sk = host.socket(AF_INET, SOCK_STREAM).sock
    assert isinstance(sk, TcpSock)
    sk.icsk_ack_rcv_mss = MSS
    for rcv_wnd, quick in ((1000, 2), (2 * MSS + 100, 1), (9 * MSS, 4), (64 * MSS, 16)):
        sk.icsk_ack_quick = 0
        sk.rcv_wnd = rcv_wnd
        tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)
        assert sk.icsk_ack_quick == quick, rcv_wnd


async def _ack_steps(
    lab: Lab,
    size: int,
    *,
    tso: bool = True,
    kind: str = "veth",
    bh_polls: bool = False,
    **link: float,
) -> tuple[int, list[int]]:
    """Send *size* bytes a → b in one ``sendall``, b reading ``recv(65536)`` in a loop.

    Returns the data segments b received (as captured, so GSO skbs count once)
    and how many bytes each of b's ACKs acknowledged that the previous did not.

    The hosts' NAPI polls run in their own tasks (``polls_at_bh_enable=False``):
    in the kernel ``veth_xmit`` → ``__netif_rx`` receives each segment in the
    sender's ``local_bh_enable``, inside its ``tcp_sendmsg``, and the reader,
    woken on another CPU (``sk_data_ready``), reads meanwhile; netstack runs one
    thing at a time, so only the NAPI task's cut-short poll lets it read between
    one ``sendall``'s segments (with the default the whole flight is received
    inside the ``sendall`` before the reader runs; *bh_polls* keeps it).
    """
    lab.polls_at_bh_enable = bh_polls  # before the hosts: add_host copies it
    a, b = lab.add_host("a"), lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind=kind, **link)  # type: ignore[arg-type]
    builders.add_addr(a, "eth0", "10.0.0.1/24")
    builders.add_addr(b, "eth0", "10.0.0.2/24")
    if not tso:
        for h in (a, b):
            h.ethtool("-K eth0 tso off gso off")
    cap = b.capture("eth0")
    srv = b.socket(AF_INET, SOCK_STREAM)
    await srv.bind(("0.0.0.0", 5001))
    srv.listen(1)
    got = []

    async def reader() -> None:
        conn, _ = await srv.accept()
        while data := await conn.recv(65536):
            got.append(len(data))
        conn.close()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        cli = a.socket(AF_INET, SOCK_STREAM)
        await cli.connect(("10.0.0.2", 5001))
        await cli.sendall(bytes(size))
        cli.close()
    assert sum(got) == size
    isn = 0
    segments = 0
    acked = [0]
    for _, frame, out in cap.frames:
        ip = dpkt.ethernet.Ethernet(frame).data
        if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
            continue  # ARP
        tcp = ip.data
        if not out:
            if tcp.flags & dpkt.tcp.TH_SYN:
                isn = tcp.seq + 1
            segments += bool(ip.len - ip.hl * 4 - tcp.off * 4)
        elif not tcp.flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN):
            acked.append((tcp.ack - isn) & 0xFFFFFFFF)
    return segments, [y - x for x, y in itertools.pairwise(acked)]


async def test_a_veth_receiver_acks_every_segment_or_two_as_the_reader_keeps_up(
    lab: Lab, autojump_clock: object
) -> None:
    """Over a veth without GRO (the kernel's ``__netif_rx`` path) the reader runs
    after each packet that brought its TCP socket data, as a reader on another
    CPU keeps up on a real machine: Linux 6.18's pattern with TSO off — 21 (here
    22) single-segment ACKs (16 quick ACKs, then the ones ``tcp_grow_window``
    re-arms), then an ACK every second segment (``__tcp_ack_snd_check``) or
    after the read of an odd one (``tcp_cleanup_rbuf``). Before, the whole
    flight was received in one NAPI poll before the reader ran: 28 ACKs, the
    largest for 55 segments.
    """
    segments, steps = await _ack_steps(lab, 256 << 10, tso=False)
    assert segments == 182  # 181 full segments and the last 56 bytes (ACKed by b's FIN)
    assert steps[:22] == [MSS] * 22
    assert Counter(steps[22:]) == Counter({2 * MSS: 78, MSS: 3})
    assert len(steps) == 103


async def test_with_polls_at_bh_enable_the_reader_acks_what_one_send_left(
    lab: Lab, autojump_clock: object
) -> None:
    """The default (one machine, reader and sender as if on one CPU): each
    segment is received at its transmit's ``local_bh_enable`` inside the
    ``sendall`` and quick-ACKed into the sender's backlog, which
    ``release_sock`` runs; once the quick ACKs are spent the receiver offers no
    larger window until the reader, which runs only when the sender waits for
    send-buffer space, drains what that call left and ``tcp_cleanup_rbuf`` ACKs
    it all: 20 single-segment ACKs, then one each for 30, 50, 45 and 36
    segments. Linux 6.18 over a veth with TSO and GSO off, 256 KB, reader and
    writer on one CPU or not (``scripts/linux_ack_pattern.py``, 8 runs): 21
    single-segment ACKs, then 31, 31 and 44 segments in every run, then one ACK
    for 1 and one for 53 (26 ACKs) or single-segment ACKs to the end (79).
    """
    segments, steps = await _ack_steps(lab, 256 << 10, tso=False, bh_polls=True)
    assert segments == 182
    # the last ACK also covers the 56 bytes of the last segment and the FIN
    assert steps == [MSS] * 20 + [30 * MSS, 50 * MSS, 45 * MSS, 36 * MSS + 56 + 1]


async def test_a_rate_limited_link_gives_the_same_per_segment_pattern(
    lab: Lab, autojump_clock: object
) -> None:
    """At 100 Mbit/s segments arrive 116 µs apart and the reader reads each one
    before the next: 22 single-segment ACKs, then one ACK per one or
    two segments (Linux 6.18 behind tbf 100mbit: 640-805 ACKs for 2 MB, 45-60 %
    of them covering one segment, the rest two, with a few stretch ACKs when
    the reader was late)."""
    segments, steps = await _ack_steps(lab, 256 << 10, kind="nic", rate=100e6, delay=0.001)
    assert segments == 182
    assert steps[:22] == [MSS] * 22
    assert Counter(steps[22:]) == Counter({2 * MSS: 74, MSS: 11})
    assert len(steps) == 107


def test_sack_compression_counts_the_acks_it_held_back() -> None:
    """tests/packetdrill/sack-compress.pkt (passes on Linux 6.18 too): three
    out-of-order segments ACKed at once, three held back and sent as one by
    the compressed-ACK timer; TCPAckCompressed counts the two that never
    went out (the timer's own ACK is not counted: tcp_compressed_ack_kick)."""
    script = Path(__file__).parent.parent / "packetdrill" / "sack-compress.pkt"

    async def main() -> tuple[str, int]:
        async with open_lab(seed=0) as lab:
            host = lab.add_host("pd")
            result = await run_script(host.net, str(script), [])
            return result.status, tcp_of(host.net).snmp()["TcpExt"].TCPAckCompressed

    assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) == ("pass", 2)


async def test_the_sender_takes_predicted_pure_acks_on_the_fast_path(
    lab: Lab, autojump_clock: object
) -> None:
    """Header prediction's pure-ACK path (``tcp_rcv_established``: the segment
    is just the header, the predicted flags and window, the next sequence):
    ``tcp_ack(sk, skb, 0)`` counts ``TCPHPAcks`` for an ACK that advances
    ``snd_una``, and only the slow path's ACKs (a new window) count
    ``TCPPureAcks``: here 13 and 90, most of the ACKs offer a window grown by
    the reader. Before, every ACK took the slow path: ``TCPHPAcks`` stayed 0
    and all 103 counted as pure ACKs.
    """
    await _ack_steps(lab, 256 << 10, tso=False)
    ext = tcp_of(lab.host("a").net).snmp()["TcpExt"]
    assert (ext.TCPHPAcks, ext.TCPPureAcks) == (13, 90)


@pytest.mark.pure_python_layout(
    "patches tcp_fast_path_data, which the compiled tcp_rcv_established calls directly"
)
async def test_the_receiver_counts_its_predicted_data_segments(
    lab: Lab, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Header prediction's data path counts ``TCPHPHits`` for every segment it
    queues (``tcp_rcv_established``: ``NET_INC_STATS(..., LINUX_MIB_TCPHPHITS)``).
    Before, ``TCPHPHits`` stayed 0.

    A receiver here takes it only with forward-allocated memory for the skb
    (``truesize <= sk_forward_alloc``); each segment is given a page of it
    (a reader that keeps up frees the page before the next segment comes)."""
    taken: Counter[int] = Counter()
    real = tcp_fast_path_data

    def classify(sk: TcpSock, skb: SkBuff) -> int:
        if sk.net is lab.host("b").net and sk.sk_forward_alloc < skb.truesize:
            sk_rmem_schedule(sk, skb.truesize)
        hp = real(sk, skb)
        if sk.net is lab.host("b").net:
            taken[hp] += 1
        return hp

    monkeypatch.setattr(tcp_input, "tcp_fast_path_data", classify)
    await _ack_steps(lab, 256 << 10, tso=False)
    ext = tcp_of(lab.host("b").net).snmp()["TcpExt"]
    # every data segment predicted; the one miss is a's FIN
    assert taken == Counter({HP_DATA: 181, HP_MISS: 1})
    assert ext.TCPHPHits == 181
