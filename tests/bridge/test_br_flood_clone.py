"""``br_flood`` writes ``skb_clone`` out for every port but the last: the clones it
makes are the ones ``deliver_clone`` (``SkBuff.clone``) and ``__br_forward`` make."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.bridge import br_forward
from netstack.bridge.br_forward import BR_PKT_BROADCAST, br_flood
from netstack.bridge.br_private import NetBridge
from netstack.core.skbuff import CHECKSUM_COMPLETE, PACKET_BROADCAST, SkBuff
from netstack.core.slotcopy import slot_names


@pytest.mark.pure_python_layout("compares the clones' rare fields through __dict__")
async def test_the_written_out_clones_match_deliver_clones(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    s1 = lab.add_switch("s1", sysctls=IPV4_ONLY)
    for i in range(4):
        lab.add_host(f"h{i}", sysctls=IPV4_ONLY)
        lab.add_link(f"h{i}:eth0", "s1")
    await trio.sleep(1)  # carriers up, the ports forwarding
    br: NetBridge = s1.dev("br0").priv
    ports = list(br.port_list)
    assert br_forward._new_skb is not None  # the pure-Python build writes it out
    sent: list[SkBuff] = []
    monkeypatch.setattr(br_forward, "dev_queue_xmit", sent.append)
    # a broadcast frame as it arrived on the first port, with fields a clone copies
    skb = SkBuff(bytearray(96), 30, 30 + 42)
    skb.dev = ports[0].dev
    skb.mac_header = 16
    skb.network_header = 30
    skb.protocol = 0x0806
    skb.pkt_type = PACKET_BROADCAST
    skb.priority = 5
    skb.queue_mapping = 1
    skb.ip_summed = CHECKSUM_COMPLETE  # cleared on the way out (skb_forward_csum)
    skb.csum_start = 3
    skb.mark = 7  # a rare field
    skb.cb = cb = object()
    br_flood(br, skb, BR_PKT_BROADCAST, True, False)
    # three clones: two written out, the last port's by deliver_clone()
    assert [c.dev for c in sent] == [p.dev for p in ports[1:]]
    reference = sent[-1]
    for clone in sent[:-1]:
        for field in slot_names(SkBuff):
            if field != "dev":
                assert getattr(clone, field) == getattr(reference, field), field
        assert clone.__dict__ == reference.__dict__ == {"mark": 7}
        assert clone.buf is skb.buf and clone.cb is cb and clone.ip_summed == 0
    assert skb._dataref == [4]
