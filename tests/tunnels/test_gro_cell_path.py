"""A tunnel's GRO cell on a flow that cannot merge: what it checks, and what it skips.

The decapsulated datagram goes through ``napi_gro_receive`` → ``dev_gro_receive``
→ ``inet_gro_receive`` → ``udp4_gro_receive``, which flushes it (no encapsulation
socket), and up through ``gro_normal_one``. The UDP checksum is validated there
only when ``__skb_gro_checksum_validate_needed`` says so: never for a checksum
the sender left to the device (CHECKSUM_PARTIAL, IPIP with its modern
features), once for one summed in software (GRE with the seeds' feature word),
after which ``udp_rcv`` trusts it (CHECKSUM_UNNECESSARY).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
import netstack.ipv4.offload as offload
from netstack.core import gro_cells
from netstack.core.dev import netif_receive_skb
from netstack.core.skbuff import CHECKSUM_UNNECESSARY, SkBuff
from netstack.gro import core as gro_core
from netstack.gro.core import GroNode


def tunnel(lab: netstack.Lab, kind: str) -> tuple[netstack.Host, netstack.Host]:
    a, b = (lab.add_host(n, sysctls=IPV4_ONLY) for n in ("a", "b"))
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    for h, local, remote, addr in (
        (a, "192.0.2.1", "192.0.2.2", "10.9.0.1/30"),
        (b, "192.0.2.2", "192.0.2.1", "10.9.0.2/30"),
    ):
        h.ip(f"link add t1 type {kind} remote {remote} local {local}")
        h.ip("link set t1 up")
        h.ip(f"addr add {addr} dev t1")
    return a, b


async def exchange(a: netstack.Host, b: netstack.Host, n: int) -> None:
    rx = b.socket()
    await rx.bind(("0.0.0.0", 9000))
    tx = a.socket()
    for i in range(n):
        await tx.sendto(b"%d" % i, ("10.9.0.2", 9000))
        with trio.fail_after(1):
            data, _ = await rx.recvfrom(100)
        assert data == b"%d" % i


@pytest.mark.parametrize(("kind", "pseudo_sums"), [("ipip", 0), ("gre", 5)])
async def test_the_gro_cell_sums_the_pseudo_header_only_when_it_validates(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    pseudo_sums: int,
) -> None:
    a, b = tunnel(lab, kind)
    calls: list[int] = []
    real = offload.inet_gro_compute_pseudo

    def counting(skb: SkBuff, proto: int) -> int:
        calls.append(proto)
        return real(skb, proto)

    monkeypatch.setattr(offload, "inet_gro_compute_pseudo", counting)
    await exchange(a, b, 5)
    gro = b.dev("t1").napi_list[0].gro
    assert isinstance(gro, GroNode)
    s = gro.statistics()
    assert (s.received, s.normal, s.held, s.merged) == (5, 5, 0, 0)
    assert calls == [17] * pseudo_sums
    udp = b.snmp()["Udp"]
    assert (udp.InDatagrams, udp.InCsumErrors) == (5, 0)


async def test_a_datagram_validated_in_the_cell_is_not_summed_again(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tunnel(lab, "gre")
    seen: list[int] = []
    real = netif_receive_skb

    def spy(skb: SkBuff) -> None:
        seen.append(skb.ip_summed)  # as GRO passes it up
        real(skb)

    monkeypatch.setattr(gro_core, "netif_receive_skb", spy)
    await exchange(a, b, 3)
    assert seen == [CHECKSUM_UNNECESSARY] * 3


async def test_a_cloned_skb_bypasses_the_cell(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, b = tunnel(lab, "ipip")
    t = b.dev("t1").priv
    taken: list[SkBuff] = []

    def netif_rx(skb: SkBuff) -> int:
        taken.append(skb)
        return 0

    monkeypatch.setattr(gro_cells, "netif_rx", netif_rx)
    skb = SkBuff(bytearray(40), 0, 40)
    skb.dev = b.dev("t1")
    clone = skb.clone()
    assert gro_cells.gro_cells_receive(t.gro_cells, skb) == 0
    assert taken == [skb] and not t.gro_cells.queues[0]
    clone_taken = gro_cells.gro_cells_receive(t.gro_cells, clone)
    assert clone_taken == 0 and taken == [skb, clone]
