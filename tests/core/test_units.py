"""Unit tests of core pieces: SkBuff, DQL, timers, sysctl table, patches."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio
import trio.testing

from netstack.core.dql import DQL_MAX_LIMIT, Dql
from netstack.core.net import Net
from netstack.core.skbuff import CHECKSUM_COMPLETE, CHECKSUM_NONE, SkBuff, alloc_skb
from netstack.core.sysctl import SysctlTable
from netstack.cpu import Clock
from netstack.errors import ConfigError, SkbPanic

# -- SkBuff --------------------------------------------------------------------------


def test_push_pull_put_reserve() -> None:
    skb = alloc_skb(100, headroom=32)
    assert (skb.data, skb.tail, len(skb)) == (32, 32, 0)
    off = skb.put(10)
    assert off == 32 and len(skb) == 10
    assert skb.push(14) == 18 and len(skb) == 24
    assert skb.pull(14) == 32
    with pytest.raises(SkbPanic):
        skb.push(40)
    with pytest.raises(SkbPanic):
        skb.pull(11)
    skb.put(200)  # grows the buffer
    assert skb.tailroom() == 0 and len(skb) == 210


def test_clone_shares_and_make_writable_copies() -> None:
    skb = alloc_skb(8, headroom=8)
    skb.put(8)
    skb.buf[8:16] = b"ABCDEFGH"
    c = skb.clone()
    assert c.buf is skb.buf
    assert c.cloned
    assert skb.cloned
    c.make_writable()
    assert c.buf is not skb.buf
    assert (skb.cloned, c.cloned) == (False, False)
    c.buf[8] = ord("Z")
    assert skb.tobytes() == b"ABCDEFGH" and c.tobytes() == b"ZBCDEFGH"


@pytest.mark.pure_python_layout(
    "writes an int into every SkBuff slot (a native bool field refuses it) and reads __dict__"
)
def test_clone_sets_every_field_as_init_and_copy_header_do() -> None:
    """skb_clone sets each slot itself: the same values SkBuff() and _copy_header() give."""
    skb = alloc_skb(64, headroom=32)
    skb.put(64)
    values = iter(range(1000, 2000))
    for name in SkBuff.__slots__:
        if name not in ("__dict__", "buf", "data", "tail", "_dataref", "_freed", "dst", "next"):
            setattr(skb, name, next(values))
    skb.mark = 7  # a rare field, in the instance dictionary
    skb.vlan_tci = 9
    c = skb.clone()
    ref = SkBuff(skb.buf, skb.data, skb.tail)
    skb._copy_header(ref)
    ref._dataref = skb._dataref
    for name in SkBuff.__slots__:
        if name != "__dict__":
            assert getattr(c, name) == getattr(ref, name), name
    assert c.__dict__ == ref.__dict__ == {"mark": 7, "vlan_tci": 9}
    assert c._dataref == [2] and c.buf is skb.buf


def test_cow_head_grows_headroom_and_shifts_offsets() -> None:
    skb = alloc_skb(20, headroom=4)
    skb.put(20)
    skb.reset_network_header()
    skb.transport_header = skb.data + 20
    skb.cow_head(40)
    assert skb.headroom() >= 40
    assert skb.network_header == skb.data and skb.transport_header == skb.data + 20


def test_trim_drops_checksum_complete() -> None:
    skb = alloc_skb(10)
    skb.put(10)
    skb.ip_summed = CHECKSUM_COMPLETE
    skb.trim(5)
    assert len(skb) == 5 and skb.ip_summed == CHECKSUM_NONE


def test_truesize_follows_the_allocation() -> None:
    # 6.3+: a head of up to 576 bytes (data aligned to 64, + 320 shinfo) is an object
    # of the skbuff_small_head slab (576 on 6.18: Linux's ss shows r832 per datagram)
    small = SkBuff(bytearray(200), 0, 200)
    assert small.truesize == 576 + 256
    assert SkBuff(bytearray(64), 0, 0).truesize == 576 + 256
    assert SkBuff(bytearray(300), 0, 0).truesize == 1024 + 256  # kmalloc-1024 (320 + 320)


def test_truesize_memo_follows_a_reallocated_buffer_and_an_explicit_value() -> None:
    skb = SkBuff(bytearray(300), 0, 200)
    assert skb.truesize == 1024 + 256
    skb.buf = bytearray(2000)  # pskb_expand_head(): a bigger data area
    assert skb.truesize == 4096 + 256  # kmalloc-4096 (2048 + 320 shinfo) + sk_buff
    assert SkBuff(bytearray(300), 0, 0).truesize == 1024 + 256  # the memo is per length
    skb.truesize = 777  # page fragments: set explicitly
    assert skb.truesize == 777


# -- DQL ----------------------------------------------------------------------------


def test_dql_limit_grows_when_starved() -> None:
    dql = Dql(Clock(1000, now=lambda: 0.0))
    assert dql.avail() == 0 and dql.max_limit == DQL_MAX_LIMIT
    dql.queued(1500)
    assert dql.avail() < 0  # limit 0: over the limit at once
    dql.completed(1500)  # drained while over the limit: starved
    assert dql.limit == 1500 and dql.avail() == 1500
    dql.queued(1500)
    dql.queued(1500)
    dql.completed(3000)
    assert dql.limit > 1500


def test_dql_refuses_completing_more_than_queued() -> None:
    dql = Dql(Clock(1000, now=lambda: 0.0))
    dql.queued(100)
    with pytest.raises(ValueError, match="exceeds"):
        dql.completed(200)


def test_dql_shrinks_by_the_least_slack_after_hold_time() -> None:
    t = [0.0]
    dql = Dql(Clock(1000, now=lambda: t[0]))
    dql.limit = dql.adj_limit = 100_000
    for step in range(50):  # always busy, completing little
        t[0] = step * 0.1
        dql.queued(3000)
        dql.completed(1500)
    assert dql.limit < 100_000


# -- timers ---------------------------------------------------------------------------


async def test_timers_fire_in_order_at_their_jiffy(autojump_clock: trio.testing.MockClock) -> None:
    net = Net("t")
    fired: list[tuple[str, int]] = []
    a = net.timers.timer(lambda: fired.append(("a", net.clock.jiffies)))
    b = net.timers.timer(lambda: fired.append(("b", net.clock.jiffies)))
    c = net.timers.timer(lambda: fired.append(("c", net.clock.jiffies)))
    async with trio.open_nursery() as nursery:
        net.attach(nursery)
        a.mod(300)
        b.mod(100)
        c.mod(200)
        assert c.delete()
        assert not c.delete()
        b.mod(150)  # re-armed: the old expiry is stale
        await trio.sleep(1)
        assert fired == [("b", 150), ("a", 300)]
        assert net.timers.pending_count() == 0
        nursery.cancel_scope.cancel()


async def test_timers_rearmed_later_fire_once_at_the_last_expiry_in_arming_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """mod_timer to a later jiffy only records it; the heap entry is re-queued when due
    under the key an immediate push would have had, so ties fire in arming order."""
    net = Net("t")
    fired: list[tuple[str, int]] = []

    def firing(name: str) -> Callable[[], None]:
        return lambda: fired.append((name, net.clock.jiffies))

    timers = {n: net.timers.timer(firing(n)) for n in "abcd"}
    async with trio.open_nursery() as nursery:
        net.attach(nursery)
        assert net.clock.now() == trio.current_time()  # the run's clock, read directly
        a, b, c, d = (timers[n] for n in "abcd")
        a.mod(10)
        b.mod(20)
        for j in range(11, 60):  # an RTO pushed back on every ACK
            assert a.mod(j)
        assert b.mod(59)  # re-armed after a's last re-arm: fires after it on the tie
        c.mod(40)
        assert c.mod(70)
        assert c.mod(30)  # earlier again: a new entry
        d.mod(5)
        assert d.mod(25)
        assert d.delete()
        assert net.timers.pending_count() == 3
        await trio.sleep(0.020)
        assert fired == []  # nothing fired at a queued, superseded expiry
        await trio.sleep(1)
        assert fired == [("c", 30), ("a", 59), ("b", 59)]
        assert net.timers.pending_count() == 0
        nursery.cancel_scope.cancel()


# -- sysctl ---------------------------------------------------------------------------


def test_sysctl_table_errors_are_procps_texts() -> None:
    class Obj:
        x = 1

    table = SysctlTable()
    table.register_int("net.test.x", Obj, "x", minimum=0, maximum=2)
    table.register("net.test.ro", lambda: "7")
    assert table.read("net/test/x") == "1"
    table.write("net.test.x", "2")
    assert Obj.x == 2
    with pytest.raises(ConfigError, match=r'setting key "net.test.x": Invalid argument'):
        table.write("net.test.x", "3")
    with pytest.raises(ConfigError, match="Invalid argument"):
        table.write("net.test.x", "abc")
    with pytest.raises(ConfigError, match="cannot stat /proc/sys/net/test/nope"):
        table.read("net.test.nope")
    with pytest.raises(ConfigError, match="Permission denied"):
        table.write("net.test.ro", "1")
    assert table.names("net.test") == ["net.test.ro", "net.test.x"]


def test_truesize_memo_stays_bounded_under_odd_lengths() -> None:
    """A flood of buffers of every length does not grow the truesize cache without bound."""
    from netstack.core import skbuff

    for n in range(3000):
        assert skbuff.SkBuff(bytearray(n), 0, n).truesize > n
    assert len(skbuff._TRUESIZE_OF_BUFLEN) <= skbuff._TRUESIZE_MEMO_MAX
