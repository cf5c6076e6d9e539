"""TCP receive memory: coalescing, collapsing and pruning the receive queues.

Theory of operation. Every skb TCP keeps for the reader — in order on
``receive_queue``, ahead of a hole on ``out_of_order_queue`` — is charged by its
``truesize`` to ``sk_rmem_alloc`` (``skb_set_owner_r``), and the kernel's memory
accounting takes that charge from ``sk_forward_alloc``, memory the socket
reserved from the protocol in whole pages (``sk_rmem_schedule``) and gives back
in whole pages when more than one is unused (``sk_mem_reclaim``). The send
side draws on the same reserve for what it queues (``tcp.helpers.sk_wmem_charge``). Linux 6.x
keeps many small segments cheap three ways, all modelled here:

* **coalescing** (``tcp_try_coalesce``): a segment that continues the tail skb
  of a queue is copied into that skb's tailroom (``skb_try_coalesce``) and
  costs nothing more (``TcpExtTCPRcvCoalesce``). A tun device's skb is a
  kmalloc'ed head whose tailroom is what the slab's size class left over
  (``drivers/tun.py``); skbs built from page fragments (TCP's own send skbs over
  veth, GRO aggregates: an explicit truesize) are left alone — the kernel would
  steal their fragments instead, which is not modelled.
* **the fast path's admission**: a segment that passes header prediction
  (``pred_flags``) is queued without any receive-buffer check as long as its
  truesize fits ``sk_forward_alloc`` (``tcp_rcv_established``), so the queue may
  overshoot ``sk_rcvbuf`` by up to a page; only the slow path checks
  ``tcp_can_ingest`` (6.18: ``sk_rmem_alloc <= sk_rcvbuf``).
* **pruning** (``tcp_prune_queue``), when the slow path finds no room: the
  window is clamped (``tcp_clamp_window``: ``rcv_ssthresh`` down to two
  segments), the out-of-order queue's ranges of small skbs and then the
  receive queue are copied into dense skbs of up to a page
  (``tcp_collapse_ofo_queue``, ``tcp_collapse``: ``TcpExtTCPRcvCollapsed`` per
  skb freed); if that is not enough the out-of-order queue is dropped from its
  end (``tcp_prune_ofo_queue``, ``TcpExtOfoPruned``), and if even that is not
  enough the segment is refused (``TcpExtRcvPruned``; the caller counts
  ``TcpExtTCPRcvQDrop`` or ``TcpExtTCPOFODrop``).

Checked against Linux 6.18 with ``tests/packetdrill/rcvbuf-collapse.pkt`` and
the counters of ``tests/tcp/test_tcp_rcvmem.py``.

Kernel: net/ipv4/tcp_input.c (tcp_try_coalesce, tcp_can_ingest,
tcp_try_rmem_schedule, tcp_prune_queue, tcp_clamp_window, tcp_collapse,
tcp_collapse_ofo_queue, tcp_prune_ofo_queue), net/core/skbuff.c
(skb_try_coalesce), include/net/sock.h (sk_mem_charge, sk_mem_uncharge,
sk_rmem_schedule), net/core/sock.c (__sk_mem_schedule, __sk_mem_reclaim,
sk_forced_mem_schedule).
"""

from __future__ import annotations

import struct
from typing import Final

from netstack.core.skbuff import (
    SKB_SHINFO_SIZE,
    DropReason,
    SkBuff,
    consume_skb,
    kfree_skb,
    skb_head_obj_size,
)
from netstack.core.sock import SOCK_RCVBUF_LOCK
from netstack.sites import kernel
from netstack.tcp.output import tcp_receive_window, tcp_win_from_space
from netstack.tcp.sock import TcpSkbCb, TcpSock, after, before
from netstack.wire.tcp import TCPHDR_FIN, TCPHDR_SYN

__all__ = [
    "HP_DATA",
    "HP_MISS",
    "HP_PURE_ACK",
    "HP_STEP5",
    "sk_forced_mem_schedule",
    "skb_set_owner_r",
    "skb_try_coalesce",
    "tcp_fast_path_check",
    "tcp_fast_path_data",
    "tcp_fast_path_on",
    "tcp_rmem_free",
    "tcp_try_coalesce",
    "tcp_try_rmem_schedule",
]

PAGE_SIZE: Final = 4096
PAGE_SHIFT: Final = 12
# SKB_MAX_ORDER(0, 0): the most data one page-sized skb head holds
SKB_MAX_ORDER0: Final = PAGE_SIZE - SKB_SHINFO_SIZE
M32: Final = 0xFFFFFFFF
_SYN_FIN: Final = TCPHDR_SYN | TCPHDR_FIN
# header prediction: the flag word (doff, flags, window) without the reserved bits and PSH
TCP_HP_BITS: Final = ~0x0F080000 & M32
TCP_FLAG_ACK: Final = 0x00100000
# header prediction's reads in one: the word at offset 12 (doff, flags, window)
# and, with timestamps, the aligned option's first word (offset 20), TSval, TSecr
_HP_WORD: Final = struct.Struct("!I")
_HP_WORD_TS: Final = struct.Struct("!I4xIII")
_TS_ALIGNED_WORD: Final = 0x0101080A  # NOP, NOP, TIMESTAMP, 10


# ------------------------------------------------------------------ accounting
@kernel("include/net/sock.h", "sk_mem_pages")
def sk_mem_pages(amt: int) -> int:
    """Kernel: include/net/sock.h, sk_mem_pages()."""
    return (amt + PAGE_SIZE - 1) >> PAGE_SHIFT


@kernel("include/net/sock.h", "sk_rmem_schedule", "net/core/sock.c", "__sk_mem_schedule")
def sk_rmem_schedule(sk: TcpSock, size: int) -> bool:
    """Reserve whole pages for *size* bytes (no global limit is modelled: it succeeds).

    Kernel: include/net/sock.h, sk_rmem_schedule(); net/core/sock.c, __sk_mem_schedule().
    """
    delta = size - sk.sk_forward_alloc
    if delta > 0:
        sk.sk_forward_alloc += sk_mem_pages(delta) << PAGE_SHIFT
    return True


@kernel("net/core/sock.c", "sk_forced_mem_schedule")
def sk_forced_mem_schedule(sk: TcpSock, size: int) -> None:
    """Kernel: net/core/sock.c, sk_forced_mem_schedule()."""
    delta = size - sk.sk_forward_alloc
    if delta > 0:
        sk.sk_forward_alloc += sk_mem_pages(delta) << PAGE_SHIFT


@kernel("include/net/sock.h", "skb_set_owner_r", "sk_mem_charge")
def skb_set_owner_r(sk: TcpSock, skb: SkBuff) -> None:
    """Charge *skb* to the socket's receive memory.

    Kernel: include/net/sock.h, skb_set_owner_r() / sk_mem_charge().
    """
    size = skb.truesize
    sk.sk_rmem_alloc += size
    sk.sk_forward_alloc -= size


@kernel("include/net/sock.h", "sk_mem_uncharge", "sk_mem_reclaim")
def tcp_rmem_free(sk: TcpSock, skb: SkBuff) -> None:
    """Give back *skb*'s charge (``sock_rfree``) and whole unused pages.

    Kernel: include/net/sock.h, sk_mem_uncharge() / sk_mem_reclaim().
    """
    size = skb.truesize
    sk.sk_rmem_alloc -= size
    fwd = sk.sk_forward_alloc + size
    if fwd >= PAGE_SIZE:
        fwd &= PAGE_SIZE - 1  # __sk_mem_reclaim() of the whole pages
    sk.sk_forward_alloc = fwd


# ------------------------------------------------------------------ coalescing
@kernel("net/core/skbuff.c", "skb_try_coalesce")
def skb_try_coalesce(to: SkBuff, frm: SkBuff) -> bool:
    """Append *frm*'s data to *to* if it fits *to*'s tailroom (no truesize change).

    Only linear kmalloc'ed heads (truesize from their buffer) take part: the
    kernel would steal page fragments of the others, which is not modelled.
    Kernel: net/core/skbuff.c, skb_try_coalesce().
    """
    if to.cloned or to._truesize or frm._truesize:
        return False
    n = frm.tail - frm.data
    if n > len(to.buf) - to.tail:
        return False
    t = to.tail
    to.buf[t : t + n] = frm.buf[frm.data : frm.tail]
    to.tail = t + n
    return True


@kernel("net/ipv4/tcp_input.c", "tcp_try_coalesce")
def tcp_try_coalesce(sk: TcpSock, to: SkBuff, frm: SkBuff) -> bool:
    """Merge *frm* into *to* when it continues it.

    Kernel: net/ipv4/tcp_input.c, tcp_try_coalesce().
    """
    tcb_to: TcpSkbCb = to.cb
    tcb_from: TcpSkbCb = frm.cb
    if tcb_from.seq != tcb_to.end_seq:
        return False
    if not skb_try_coalesce(to, frm):
        return False
    sk.ext.TCPRcvCoalesce += 1
    tcb_to.end_seq = tcb_from.end_seq
    tcb_to.ack_seq = tcb_from.ack_seq
    tcb_to.tcp_flags |= tcb_from.tcp_flags
    return True


# ------------------------------------------------------------------ header prediction
@kernel("include/net/tcp.h", "__tcp_fast_path_on", "tcp_fast_path_on")
def tcp_fast_path_on(sk: TcpSock) -> None:
    """Predict the next segment's flag word.

    Kernel: include/net/tcp.h, __tcp_fast_path_on() / tcp_fast_path_on().
    """
    sk.pred_flags = (sk.tcp_header_len << 26) | TCP_FLAG_ACK | (sk.snd_wnd >> sk.snd_wscale)


@kernel("include/net/tcp.h", "tcp_fast_path_check")
def tcp_fast_path_check(sk: TcpSock) -> None:
    """Kernel: include/net/tcp.h, tcp_fast_path_check()."""
    if not sk.out_of_order_queue and sk.rcv_wnd and sk.sk_rmem_alloc < sk.sk_rcvbuf:
        tcp_fast_path_on(sk)


# tcp_fast_path_data()'s verdicts
HP_MISS: Final = 0  # the slow path
HP_DATA: Final = 1  # data the fast path queues (the slow path runs, told so)
HP_PURE_ACK: Final = 2  # a pure ACK: the fast path's tcp_ack(sk, skb, 0)
HP_STEP5: Final = 3  # data beyond sk_forward_alloc: the slow path from step 5, unvalidated


@kernel("net/ipv4/tcp_input.c", "tcp_rcv_established", "tcp_parse_aligned_timestamp", "after")
def tcp_fast_path_data(sk: TcpSock, skb: SkBuff) -> int:
    """Which of tcp_rcv_established()'s fast paths takes this segment (HP_*)?

    Header prediction matches (``pred_flags``: header length, ACK only,
    window), the segment is the next expected, acknowledges nothing unsent,
    carries the aligned timestamp option with a TSval not older than
    ``ts_recent`` when timestamps are on. Then a segment of just the header is
    a pure ACK (HP_PURE_ACK); one with data whose truesize fits
    ``sk_forward_alloc`` is HP_DATA: netstack runs the slow path for it, told
    only to skip the receive-buffer admission, as the fast path does; other
    data is HP_STEP5, the fast path's ``goto step5``: the slow path without
    tcp_validate_incoming(), which the prediction stands for — unless it ends
    beyond the window (6.17: ``goto validate``, HP_MISS).
    Unless it misses, the timestamp option is read here, as the kernel reads it
    (``saw_tstamp``, ``rcv_tsval``, ``rcv_tsecr``: no tcp_parse_options() walk).
    Call it before tcp_ack() and tcp_validate_incoming() change the state.
    Kernel: net/ipv4/tcp_input.c, tcp_rcv_established() / tcp_parse_aligned_timestamp();
    after(), written out.
    """
    pred = sk.pred_flags
    if not pred:
        return HP_MISS
    buf = skb.buf
    th = skb.transport_header
    hlen = sk.tcp_header_len
    length = skb.tail - th
    if hlen == 32 and length >= 32:
        # the word, the aligned option and tcp_parse_aligned_timestamp()'s values
        word, opt, tsval, tsecr = _HP_WORD_TS.unpack_from(buf, th + 12)
    else:  # (a shorter segment cannot match a 32-byte header's prediction)
        word = _HP_WORD.unpack_from(buf, th + 12)[0]
        opt = tsval = tsecr = 0
    if word & TCP_HP_BITS != pred:
        return HP_MISS
    tcb: TcpSkbCb = skb.cb
    if tcb.seq != sk.rcv_nxt or ((sk.snd_nxt - tcb.ack_seq) & M32) > 0x7FFFFFFF:
        return HP_MISS
    if hlen == 32:
        if opt != _TS_ALIGNED_WORD:
            return HP_MISS
        if (tsval - sk.ts_recent) & 0x80000000:
            return HP_MISS
        sk.saw_tstamp = True
        sk.rcv_tsval = tsval
        sk.rcv_tsecr = tsecr
    else:
        sk.saw_tstamp = False
    if length == hlen:
        return HP_PURE_ACK
    if length < hlen:
        return HP_MISS
    if ((sk.rcv_nxt + tcp_receive_window(sk) - tcb.end_seq) & M32) > 0x7FFFFFFF:
        return HP_MISS  # 6.17: goto validate, tcp_sequence() drops or takes it
    return HP_DATA if skb.truesize <= sk.sk_forward_alloc else HP_STEP5


# ------------------------------------------------------------------ pruning
@kernel("net/ipv4/tcp_input.c", "tcp_can_ingest")
def tcp_can_ingest(sk: TcpSock, skb: SkBuff) -> bool:
    """Is the queued memory within sk_rcvbuf? (*skb* is not counted.)

    6.17's "stronger sk_rcvbuf checks" (queued + truesize, then + length) were
    given up again ("tcp: give up on stronger sk_rcvbuf checks (for now)",
    in the 6.18 stable series): the 6.18 measured here prunes a 2,900-byte
    in-order segment's way clear once 14,144 bytes are queued in a 16 KB buffer
    and takes it (tests/tcp/test_tcp_rcvmem.py, "ofo-pruned-long-in-order").
    Kernel: net/ipv4/tcp_input.c, tcp_can_ingest().
    """
    return sk.sk_rmem_alloc <= sk.sk_rcvbuf


@kernel("net/ipv4/tcp_input.c", "tcp_clamp_window")
def tcp_clamp_window(sk: TcpSock) -> None:
    """The buffer is full: grow it to what is queued if allowed, shrink rcv_ssthresh.

    Kernel: net/ipv4/tcp_input.c, tcp_clamp_window().
    """
    sk.icsk_ack_quick = 0
    rmem2 = sk.tcp.tcp_rmem[2]
    if sk.sk_rcvbuf < rmem2 and not sk.sk_userlocks & SOCK_RCVBUF_LOCK:
        sk.sk_rcvbuf = min(sk.sk_rmem_alloc, rmem2)
    if sk.sk_rmem_alloc > sk.sk_rcvbuf:
        sk.rcv_ssthresh = min(sk.window_clamp, 2 * sk.advmss)


def _copy_cb(cb: TcpSkbCb) -> TcpSkbCb:
    new = TcpSkbCb(cb.seq, cb.end_seq, cb.tcp_flags)
    for name in TcpSkbCb.__slots__:
        if hasattr(cb, name):
            setattr(new, name, getattr(cb, name))
    return new


@kernel("net/ipv4/tcp_input.c", "tcp_collapse_one")
def _collapse_one(sk: TcpSock, q: list[SkBuff], i: int) -> None:
    """Free q[i], copied into a new skb. Kernel: net/ipv4/tcp_input.c, tcp_collapse_one()."""
    skb = q.pop(i)
    tcp_rmem_free(sk, skb)
    consume_skb(skb)
    sk.ext.TCPRcvCollapsed += 1


@kernel("net/ipv4/tcp_input.c", "tcp_collapse")
def tcp_collapse(
    sk: TcpSock, q: list[SkBuff], i: int, tail: SkBuff | None, start: int, end: int
) -> None:
    """Copy the skbs q[i:] before *tail* holding start..end into dense page-sized skbs.

    Skbs entirely before *start* are freed; skbs already dense (their truesize
    worth no more window than their length) are kept, as are SYN and FIN skbs.
    Kernel: net/ipv4/tcp_input.c, tcp_collapse().
    """

    def at_tail(j: int) -> bool:
        return j >= len(q) or q[j] is tail

    end_of_skbs = True
    while not at_tail(i):
        skb = q[i]
        tcb: TcpSkbCb = skb.cb
        if not before(start, tcb.end_seq):  # no new bits: drop it, start over
            _collapse_one(sk, q, i)
            end_of_skbs = True
            continue
        if not tcb.tcp_flags & _SYN_FIN and (
            tcp_win_from_space(sk, skb.truesize) > skb.tail - skb.data or before(tcb.seq, start)
        ):
            end_of_skbs = False
            break
        if not at_tail(i + 1) and tcb.end_seq != q[i + 1].cb.seq:
            end_of_skbs = False
            break
        start = tcb.end_seq  # a dense skb: keep it
        i += 1
    if end_of_skbs or q[i].cb.tcp_flags & _SYN_FIN:
        return
    skb = q[i]
    while before(start, end):
        copy = min(SKB_MAX_ORDER0, (end - start) & M32)
        # alloc_skb(copy): the head's whole data area, as its slab object gives it
        nskb = SkBuff(bytearray(skb_head_obj_size(copy) - SKB_SHINFO_SIZE), 0, 0)
        ncb = _copy_cb(skb.cb)
        ncb.seq = ncb.end_seq = start
        nskb.cb = ncb
        q.insert(i, nskb)
        i += 1
        skb_set_owner_r(sk, nskb)
        while copy > 0:
            tcb = skb.cb
            offset = (start - tcb.seq) & M32
            size = (tcb.end_seq - start) & M32
            if size and not size & 0x80000000:
                size = min(copy, size)
                src = skb.data + offset
                t = nskb.tail
                nskb.buf[t : t + size] = skb.buf[src : src + size]
                nskb.tail = t + size
                ncb.end_seq = (ncb.end_seq + size) & M32
                copy -= size
                start = (start + size) & M32
            if not before(start, tcb.end_seq):
                _collapse_one(sk, q, i)
                if at_tail(i) or q[i].cb.tcp_flags & _SYN_FIN:
                    return
                skb = q[i]


@kernel("net/ipv4/tcp_input.c", "tcp_collapse_ofo_queue")
def tcp_collapse_ofo_queue(sk: TcpSock) -> None:
    """Collapse each contiguous range of the out-of-order queue that is not one
    dense skb already, stopping once an eighth of sk_rcvbuf was left as tiny ranges.

    Kernel: net/ipv4/tcp_input.c, tcp_collapse_ofo_queue().
    """
    q = sk.out_of_order_queue
    sum_tiny = 0
    k = 0
    while k < len(q):
        head = q[k]
        start = head.cb.seq
        end = head.cb.end_seq
        range_truesize = head.truesize
        j = k + 1
        while j < len(q):
            cb: TcpSkbCb = q[j].cb
            if after(cb.seq, end) or before(cb.end_seq, start):
                break
            range_truesize += q[j].truesize
            if before(cb.seq, start):
                start = cb.seq
            if after(cb.end_seq, end):
                end = cb.end_seq
            j += 1
        nxt = q[j] if j < len(q) else None
        if range_truesize != head.truesize or ((end - start) & M32) >= SKB_MAX_ORDER0:
            tcp_collapse(sk, q, k, nxt, start, end)
        else:
            sum_tiny += range_truesize
            if sum_tiny > sk.sk_rcvbuf >> 3:
                return
        k = q.index(nxt) if nxt is not None else len(q)


@kernel("net/ipv4/tcp_input.c", "tcp_prune_ofo_queue")
def tcp_prune_ofo_queue(sk: TcpSock, in_skb: SkBuff) -> bool:
    """Drop out-of-order skbs from the highest sequence down, an eighth of
    sk_rcvbuf at a time, until the segment fits; never those below *in_skb*.

    Kernel: net/ipv4/tcp_input.c, tcp_prune_ofo_queue().
    """
    q = sk.out_of_order_queue
    if not q:
        return False
    goal = sk.sk_rcvbuf >> 3
    in_seq = in_skb.cb.seq
    pruned = False
    while q:
        skb = q[-1]
        if after(in_seq, skb.cb.seq):
            break
        pruned = True
        q.pop()
        goal -= skb.truesize
        tcp_rmem_free(sk, skb)
        sk.sk_drops += max(skb.gso_segs, 1)  # sk_drops_add()
        kfree_skb(skb, DropReason.TCP_OFO_QUEUE_PRUNE)
        if not q or goal <= 0:
            if tcp_can_ingest(sk, in_skb):  # the syzbot fix: the incoming skb
                break
            goal = sk.sk_rcvbuf >> 3
    if pruned:
        sk.ext.OfoPruned += 1
        if sk.sack_ok:  # tcp_sack_reset()
            sk.dsack = 0
            sk.num_sacks = 0
            sk.selective_acks = []
    return pruned


@kernel("net/ipv4/tcp_input.c", "tcp_prune_queue")
def tcp_prune_queue(sk: TcpSock, in_skb: SkBuff) -> int:
    """Make room for *in_skb*: clamp, collapse, then prune out-of-order data.

    Returns 0 when it fits, -1 when the caller must drop it.
    Kernel: net/ipv4/tcp_input.c, tcp_prune_queue().
    """
    if not sk.sk_rmem_alloc:  # 6.17+: nothing queued, nothing to do
        return -1
    sk.ext.PruneCalled += 1
    if not tcp_can_ingest(sk, in_skb):
        tcp_clamp_window(sk)
    if tcp_can_ingest(sk, in_skb):
        return 0
    tcp_collapse_ofo_queue(sk)
    rq = sk.receive_queue
    if rq:
        lst = list(rq)
        tcp_collapse(sk, lst, 0, None, sk.copied_seq, sk.rcv_nxt)
        rq.clear()
        rq.extend(lst)
    if tcp_can_ingest(sk, in_skb):
        return 0
    tcp_prune_ofo_queue(sk, in_skb)
    if tcp_can_ingest(sk, in_skb):
        return 0
    sk.ext.RcvPruned += 1
    sk.pred_flags = 0
    return -1


@kernel("net/ipv4/tcp_input.c", "tcp_try_rmem_schedule")
def tcp_try_rmem_schedule(sk: TcpSock, skb: SkBuff) -> bool:
    """Room for *skb* in the receive buffer, pruning if need be? (True: yes.)

    Kernel: net/ipv4/tcp_input.c, tcp_try_rmem_schedule().
    """
    size = skb.truesize
    if not tcp_can_ingest(sk, skb) or not sk_rmem_schedule(sk, size):
        if tcp_prune_queue(sk, skb) < 0:
            return False
        while not sk_rmem_schedule(sk, size):
            if not tcp_prune_ofo_queue(sk, skb):
                return False
    return True
