"""``ip tunnel change … oseq``: new output flags through the ioctl path.

Linux 6.x's ``ipgre_tunnel_ctl`` (net/ipv4/ip_gre.c), after ``ip_tunnel_ctl`` has
applied addresses, keys, TTL and TOS (``ip_tunnel_update``, which leaves the
flags alone), copies ``i_flags``/``o_flags`` to the device for
``SIOCCHGTUNNEL`` and calls ``ipgre_link_update(dev, true)``: the GRE header
grows by the sequence number's 4 bytes (``tun_hlen``, ``hlen``,
``needed_headroom``), the MTU shrinks by as much, and the software GSO types
go ("TCP offload with GRE SEQ is not supported") — the same as
``ipgre_changelink`` does for ``ip link set … type gre … oseq``. This machine's
kernel has no ip_gre module, so these figures come from the source.
"""

from __future__ import annotations

import dpkt
import trio
import trio.testing
from helpers import tunnel_pair

import netstack


def gre_headers(frames: list[tuple[float, bytes, bool]]) -> list[bytes]:
    """The GRE headers (up to the inner packet) of the GRE frames a capture saw leave."""
    out = []
    for _, frame, outgoing in frames:
        ip = dpkt.ethernet.Ethernet(frame).data
        if outgoing and isinstance(ip, dpkt.ip.IP) and ip.p == 47:
            gre = bytes(ip.data)
            out.append(gre[: len(gre) - len(bytes(ip.data.data))])
    return out


async def send(a: netstack.Host, b: netstack.Host, n: int) -> None:
    rx = b.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket()
    for i in range(n):
        await tx.sendto(b"datagram %d" % i, ("10.9.0.2", 9000))
        with trio.fail_after(1):
            data, _ = await rx.recvfrom(100)
        assert data == b"datagram %d" % i
    rx.close()
    tx.close()


async def test_ip_tunnel_change_oseq_grows_the_header(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = tunnel_pair(lab, ioctl=True)
    t1 = a.dev("t1")
    assert (t1.mtu, t1.priv.tun_hlen) == (1476, 4)
    assert "tcp-segmentation-offload: on" in a.ethtool("-k t1").splitlines()
    headroom = t1.needed_headroom
    cap = a.capture("eth0")
    await send(a, b, 1)

    a.ip("tunnel change t1 mode gre remote 192.0.2.2 local 192.0.2.1 oseq")
    assert (t1.mtu, t1.priv.tun_hlen, t1.priv.hlen) == (1472, 8, 8)
    assert t1.needed_headroom == headroom + 4
    assert "tcp-segmentation-offload: off" in a.ethtool("-k t1").splitlines()
    detail = a.ip("-d link show t1")
    assert "mtu 1472 " in detail and " oseq " in detail
    assert "Sequence packets on output." in a.ip("tunnel show t1")
    await send(a, b, 2)

    before, *after = gre_headers(cap.frames)
    assert before == bytes.fromhex("00000800")  # no flags
    assert len(after) == 2
    seqs = []
    for hdr in after:
        assert len(hdr) == 8 and hdr[:4] == bytes.fromhex("10000800")  # S, IPv4
        seqs.append(int.from_bytes(hdr[4:], "big"))
    assert seqs[1] == seqs[0] + 1
    assert b.dev("t1").statistics().rx_packets == 3


async def test_ip_tunnel_change_key_sets_the_key_flags(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """``key`` sets GRE_KEY in both flag words: the receiver's lookup needs its
    ``i_flags`` to match the packets' K bit, and the sender's header carries it."""
    a, b = tunnel_pair(lab, ioctl=True)
    cap = a.capture("eth0")
    for h, remote, local in ((a, "192.0.2.2", "192.0.2.1"), (b, "192.0.2.1", "192.0.2.2")):
        h.ip(f"tunnel change t1 mode gre remote {remote} local {local} key 7")
        assert h.dev("t1").mtu == 1472
    await send(a, b, 1)
    (hdr,) = gre_headers(cap.frames)
    assert hdr == bytes.fromhex("20000800 00000007")
