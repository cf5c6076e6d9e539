"""GRE devices have ip_gre.c's ``GRE_FEATURES`` (3.8+): what passes through them.

``__gre_tunnel_init`` gives a GRE or gretap device SG, FRAGLIST, HIGHDMA and
HW_CSUM, and without output sequencing the software GSO types. So a datagram
sent through the tunnel keeps its UDP checksum CHECKSUM_PARTIAL
(``udp4_hwcsum``: the field holds the pseudo-header sum), the tunnel marks it
``encapsulation``, veth (``hw_enc_features``: HW_CSUM) passes it on, and the
receiver takes it as verified: no one sums the payload. This machine's kernel
has no ip_gre module; VXLAN over veth, whose device advertises the same
HW_CSUM, shows the bytes on the veth (the last test).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import dpkt
import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY, stream_transfer, tunnel_pair

import netstack
from netstack.core.dev import __netif_receive_skb_core
from netstack.core.skbuff import CHECKSUM_PARTIAL, CHECKSUM_UNNECESSARY, SkBuff
from netstack.gro import core as gro_core
from netstack.socket import AF_INET
from netstack.tcp import tcp_of


def _fold(s: int) -> int:
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo_sum(ip: dpkt.ip.IP) -> int:
    """The folded pseudo-header sum of *ip*'s UDP datagram: what ``udp4_hwcsum``
    leaves in the checksum field for the device to finish."""
    words = struct.unpack("!4H", ip.src + ip.dst)
    return _fold(sum(words) + 17 + len(bytes(ip.data)))


def full_checksum(ip: dpkt.ip.IP) -> int:
    raw = bytearray(bytes(ip.data))
    raw[6:8] = b"\0\0"
    if len(raw) % 2:
        raw += b"\0"
    s = pseudo_sum(ip) + sum(struct.unpack(f"!{len(raw) // 2}H", raw))
    return ~_fold(s) & 0xFFFF or 0xFFFF


async def received(
    a: netstack.Host, b: netstack.Host, monkeypatch: pytest.MonkeyPatch, n: int
) -> list[tuple[int, int, int, dpkt.ip.IP]]:
    """Send *n* datagrams a → b through the tunnel; for each, as b's tunnel passes
    it up: ip_summed, csum_start and csum_offset relative to the inner IPv4
    header, and that header with its datagram as bytes."""
    seen: list[tuple[int, int, int, dpkt.ip.IP]] = []
    t1 = b.dev("t1")

    def spy(skb: SkBuff) -> None:
        if skb.dev is t1:
            nh = skb.data
            ip = dpkt.ip.IP(bytes(skb.buf[nh : skb.tail]))
            seen.append((skb.ip_summed, skb.csum_start - nh, skb.csum_offset, ip))
        __netif_receive_skb_core(skb)

    monkeypatch.setattr(gro_core, "netif_receive_skb_core", spy)
    rx = b.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket()
    for i in range(n):
        await tx.sendto(b"datagram %d" % i, ("10.9.0.2", 9000))
        with trio.fail_after(1):
            data, _ = await rx.recvfrom(100)
        assert data == b"datagram %d" % i
    udp = b.snmp()["Udp"]
    assert (udp.InDatagrams, udp.InCsumErrors) == (n, 0)
    return seen


@pytest.mark.pure_python_layout(
    "spies by replacing a compiled module's function, which its compiled callers do not read"
)
async def test_the_inner_udp_checksum_crosses_the_tunnel_partial(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tunnel_pair(lab)
    seen = await received(a, b, monkeypatch, 3)
    assert len(seen) == 3
    for summed, start, offset, ip in seen:
        # left to the device by udp_sendmsg, and by every device after it
        assert (summed, start, offset) == (CHECKSUM_PARTIAL, 20, 6)
        assert ip.data.sum == pseudo_sum(ip) != full_checksum(ip)


@pytest.mark.pure_python_layout(
    "spies by replacing a compiled module's function, which its compiled callers do not read"
)
async def test_with_tx_checksumming_off_the_sender_sums_it(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tunnel_pair(lab)
    a.ethtool("-K t1 tx off")
    seen = await received(a, b, monkeypatch, 2)
    for summed, _, _, ip in seen:
        assert summed == CHECKSUM_UNNECESSARY  # validated in b's GRO cell
        assert ip.data.sum == full_checksum(ip)


@pytest.mark.parametrize("kind", ["gre", "gretap"])
async def test_features_and_output_sequencing(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, kind: str
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    h.ip(f"link add t1 type {kind} remote 192.0.2.2 local 192.0.2.1")
    out = h.ethtool("-k t1").splitlines()
    for line in (
        "\ttx-checksum-ip-generic: on",
        "scatter-gather: on",
        "\ttx-scatter-gather-fraglist: on",
        "highdma: on",
        "tcp-segmentation-offload: on",
    ):
        assert line in out
    # ipgre_link_update(): "TCP offload with GRE SEQ is not supported"
    h.ip(f"link set t1 type {kind} remote 192.0.2.2 local 192.0.2.1 oseq")
    out = h.ethtool("-k t1").splitlines()
    assert "tcp-segmentation-offload: off" in out
    assert "\ttx-checksum-ip-generic: on" in out
    h.ip(f"link set t1 type {kind} remote 192.0.2.2 local 192.0.2.1 nooseq")
    assert "tcp-segmentation-offload: on" in h.ethtool("-k t1").splitlines()


@pytest.mark.parametrize("gre_tso", [True, False], ids=["veth-carries-it", "veth-cuts-it"])
async def test_a_tcp_gso_skb_through_the_tunnel(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, gre_tso: bool
) -> None:
    """TCP builds GSO skbs for the tunnel; GRE encapsulates them whole
    (SKB_GSO_GRE). veth, whose hw_enc_features take GRE segmentation, passes
    them on uncut: b's tunnel receives aggregates it never had to merge. With
    ``tx-gre-segmentation off`` on a's veth, ``gre_gso_segment`` cuts them there."""
    a, b = tunnel_pair(lab)
    if not gre_tso:
        a.ethtool("-K eth0 tx-gre-segmentation off")
    payload = bytes(range(256)) * 1024  # 256 KB
    got, _ = await stream_transfer(a, b, AF_INET, "10.9.0.2", 5001, payload)
    assert got == payload
    mtu = b.dev("t1").mtu
    frames = b.dev("eth0").statistics()
    segments = len(payload) // (mtu - 40)
    if gre_tso:
        assert frames.rx_bytes / frames.rx_packets > 2 * mtu
        assert b.dev("t1").statistics().rx_packets < segments // 4
    else:
        assert frames.rx_bytes / frames.rx_packets <= mtu + 24  # outer IPv4 and GRE
        assert b.dev("t1").statistics().rx_packets > segments
    assert tcp_of(b.net).snmp()["Tcp"].InErrs == 0


# ---------------------------------------------------------------------------
# This machine's kernel (root, ip, tcpdump and the vxlan module)
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_real_kernel_leaves_a_tunnelled_datagram_partial_over_veth(tmp_path: Path) -> None:
    """A datagram through a VXLAN device over veth: the capture on the receiving
    veth shows the inner UDP checksum field holding the pseudo-header sum only
    (CHECKSUM_PARTIAL all the way), as netstack's GRE leaves it above."""
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tcpdump") is None:
        pytest.skip("needs root, ip and tcpdump")
    pid = os.getpid()
    ns = (f"nsgf{pid}a", f"nsgf{pid}b")
    va, vb = f"gf{pid}a", f"gf{pid}b"
    script = f"""
set -e
ip netns add {ns[0]}; ip netns add {ns[1]}
ip link add {va} type veth peer name {vb}
ip link set {va} netns {ns[0]}; ip link set {vb} netns {ns[1]}
ip -n {ns[0]} addr add 10.0.0.1/24 dev {va}; ip -n {ns[0]} link set {va} up
ip -n {ns[1]} addr add 10.0.0.2/24 dev {vb}; ip -n {ns[1]} link set {vb} up
ip -n {ns[0]} link add vxlan0 type vxlan id 42 dstport 4789 remote 10.0.0.2 dev {va}
ip -n {ns[1]} link add vxlan0 type vxlan id 42 dstport 4789 remote 10.0.0.1 dev {vb}
ip -n {ns[0]} addr add 192.168.42.1/24 dev vxlan0; ip -n {ns[0]} link set vxlan0 up
ip -n {ns[1]} addr add 192.168.42.2/24 dev vxlan0; ip -n {ns[1]} link set vxlan0 up
ip netns exec {ns[1]} tcpdump --immediate-mode -i {vb} -U -w {tmp_path}/real.pcap udp 2>/dev/null &
sleep 1
ip netns exec {ns[0]} python3 -c "
import socket,time
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
for i in range(3):
    s.sendto(b'hello',('192.168.42.2',5000)); time.sleep(0.1)
"
sleep 0.5
kill %1; wait || true
"""
    try:
        r = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
        if r.returncode != 0:
            pytest.skip(f"real kernel setup failed: {r.stderr.decode()[-200:]}")
        with (tmp_path / "real.pcap").open("rb") as f:
            frames = [bytes(buf) for _, buf in dpkt.pcap.Reader(f)]
    finally:
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
        subprocess.run(["ip", "link", "del", va], capture_output=True)
    inner = []
    for frame in frames:
        outer = dpkt.ethernet.Ethernet(frame).data
        if not isinstance(outer, dpkt.ip.IP) or not isinstance(outer.data, dpkt.udp.UDP):
            continue
        if outer.data.dport != 4789:
            continue
        ip = dpkt.ethernet.Ethernet(bytes(outer.data.data)[8:]).data
        if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP):
            inner.append(ip)
    assert inner
    for ip in inner:
        assert ip.data.data == b"hello"
        assert ip.data.sum == pseudo_sum(ip) != full_checksum(ip)
