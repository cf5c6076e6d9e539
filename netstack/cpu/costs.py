"""The cost table of timed mode: what each emulated kernel function costs.

Theory of operation: one table serves every experiment. It gives, for the
reference machine (:class:`~netstack.cpu.timed.Machine`'s default: a 2010
dual-socket Xeon E5540 at 2.53 GHz, the machine of seed 1), the nanoseconds of
CPU one call of each kernel function costs *excluding* the functions it calls
that are listed here themselves and excluding cache misses on shared lines,
which the coherence model adds where they happen. Functions that touch every
byte (copies, checksums) add a per-byte part. A kernel function that netstack
emulates but that this table does not list costs ``default_ns``.

The figures are estimates assembled from published measurements; where a
figure comes from a specific source, the comment beside it says which. No
experiment has costs of its own: an experiment's inputs are its workload,
its machine and the patch toggles.

Kernel: the functions of net/ as ``perf top`` sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["CostTable", "default_costs"]

ByteCount = Callable[[Mapping[str, Any]], int]


@attrs.frozen
class CostTable:
    """Nanoseconds per call of each kernel function, on the reference machine.

    Attributes:
        functions: kernel function name → ns per call (self cost).
        per_byte: kernel function name → (ns per byte, how to count the
            bytes from the call's arguments).
        default_ns: a listed-nowhere kernel function.
        syscall_ns: entering and leaving the kernel once (``entry_SYSCALL``).
        user_ns: user-space work per system call of a sending loop
            (building the next call's arguments).
    """

    functions: Mapping[str, float]
    per_byte: Mapping[str, tuple[float, ByteCount]]
    default_ns: float = 15.0
    syscall_ns: float = 70.0
    user_ns: float = 60.0


def _span(args: Mapping[str, Any]) -> int:
    """Bytes of a ``(buf, start, end)`` call."""
    end = args.get("end")
    if end is None:
        end = len(args["buf"])
    return int(end) - int(args.get("start", 0))


def _data_len(args: Mapping[str, Any]) -> int:
    data = args.get("data")
    return len(data) if data is not None else 0


# Per-byte costs. copy_from_user/copy_to_user of data not already in L1 run at
# ~12 GB/s on a 2010-2014 Xeon core (≈ 0.08 ns/byte); csum_partial's adc loop
# does ~4 bytes/cycle at 2.53 GHz (≈ 0.1 ns/byte). Together they are why a
# receiver without CHECKSUM_COMPLETE runs out of CPU in seed 4.
COPY_NS_PER_BYTE = 0.08
CSUM_NS_PER_BYTE = 0.1


def default_costs() -> CostTable:
    """The one cost table (see the module docstring for its sources)."""
    return CostTable(functions=dict(FUNCTIONS), per_byte=dict(PER_BYTE))


PER_BYTE: Mapping[str, tuple[float, ByteCount]] = {
    "csum_partial": (CSUM_NS_PER_BYTE, _span),
    "udp_sendmsg": (COPY_NS_PER_BYTE, _data_len),  # ip_generic_getfrag: copy from user
}

# Self cost of one call, ns on the reference machine.
#
# Anchors: seed 1's after-patch profile (16 CPUs, UDP 200 B through GRE,
# 2.83 µs of CPU per packet on hyper-threaded cores, i.e. ~1.77 µs of one
# core's time) gives dev_queue_xmit 2.2 % ≈ 62 ns, __ip_local_out 2.3 %,
# __alloc_skb 2.4 %, ip_append_data 2.4 %, ip_push_pending_frames 2.5 %
# (~65-70 ns each); its large entries (__ip_route_output_key 21.4 %,
# dst_release 11.5 %) are cache misses on the then-shared dst, which the
# coherence model adds where they happen. Seed 2 (24 hyper-threads at
# 2.67 GHz, UDP sendto to a dummy device, 1.89 µs per call after its patch)
# fixes the total of the send path: ~1.25 µs of one reference core per
# sendto including the system call. The split between functions follows the
# amount of work each does in the kernel source.
FUNCTIONS: Mapping[str, float] = {
    # --- socket layer, UDP send -------------------------------------------------
    "udp_sendmsg": 120.0,  # + ip_append_data bookkeeping, udp header, csum setup
    "ip_make_skb": 170.0,  # __ip_make_skb: __alloc_skb + ip_append_data + header
    "sock_wfree": 20.0,
    "sock_def_write_space": 15.0,
    "skb_set_owner_w": 10.0,
    # --- routing ------------------------------------------------------------------
    "ip_route_output_key_hash_rcu": 60.0,
    "ip_route_output": 20.0,
    "fib_lookup": 20.0,
    "fib_table_lookup": 50.0,  # LC-trie walk (called for the local and the main table)
    "__ip_dev_find": 25.0,
    "__mkroute_output": 40.0,
    "rt_cache_valid": 5.0,
    "rt_nexthop": 3.0,
    "ipv4_mtu": 8.0,
    "dst_hold": 5.0,  # + the atomic on the refcount's line
    "dst_release": 5.0,
    "dst_check": 5.0,
    "ip_route_input_slow": 80.0,
    "fib_validate_source": 40.0,
    # --- IP output ----------------------------------------------------------------
    "__ip_select_ident": 35.0,  # siphash + the ip_idents atomic (its line is modelled)
    "ip_select_ident_segs": 10.0,
    "ip_local_out": 40.0,
    "ip_send_check": 5.0,
    "ip_fast_csum": 15.0,  # 20-byte header checksum
    "ip_output": 30.0,
    "ip_finish_output": 35.0,
    "ip_finish_output2": 60.0,  # incl. __ipv4_neigh_lookup_noref
    "ip_fragment": 120.0,
    "ip_do_fragment": 150.0,
    # --- neighbour ----------------------------------------------------------------
    "neigh_confirm": 5.0,
    "neigh_output": 10.0,
    "neigh_hh_output": 25.0,  # seqlock + fixed 16-byte copy + skb_push
    "memcpy": 12.0,  # an out-of-line memcpy call of a few bytes (seed 2's aligned hh copy)
    "neigh_resolve_output": 80.0,
    "neigh_event_send": 30.0,
    "neigh_direct_output": 10.0,
    # --- device layer, transmit ---------------------------------------------------
    "__dev_queue_xmit": 62.0,  # seed 1: dev_queue_xmit 2.2 %
    "netdev_core_pick_tx": 15.0,
    "__dev_xmit_skb": 40.0,
    "validate_xmit_skb": 25.0,
    "validate_xmit_skb_list": 10.0,
    "netif_skb_features": 20.0,
    "can_checksum_protocol": 5.0,
    "skb_checksum_help": 40.0,  # + csum_partial per byte
    "dev_hard_start_xmit": 30.0,
    "dev_queue_xmit_nit": 30.0,
    "spin_lock": 0.0,  # the lock word's atomic and any spinning are modelled
    "spin_trylock": 0.0,
    "spin_unlock": 5.0,
    # --- qdisc ----------------------------------------------------------------------
    "qdisc_run_begin": 5.0,
    "qdisc_run_end": 5.0,
    "qdisc_run": 10.0,
    "__qdisc_run": 20.0,
    "qdisc_restart": 25.0,
    "dequeue_skb": 30.0,
    "try_bulk_dequeue_skb": 20.0,
    "sch_direct_xmit": 40.0,
    "pfifo_fast_enqueue": 45.0,
    "pfifo_fast_dequeue": 45.0,
    "qdisc_pkt_len_init": 10.0,
    "dql_queued": 5.0,
    "dql_completed": 30.0,
    "netdev_tx_sent_queue": 10.0,
    "netdev_tx_completed_queue": 15.0,
    "net_tx_action": 60.0,
    # --- drivers --------------------------------------------------------------------
    "dummy_xmit": 25.0,  # per-CPU dstats + consume
    "consume_skb": 80.0,  # skb_release_all + kmem_cache_free x 2
    "kfree_skb_reason": 80.0,
    "kfree_skb_list_reason": 10.0,
    "loopback_xmit": 40.0,
    "veth_xmit": 40.0,
    "__dev_forward_skb2": 40.0,
    "skb_scrub_packet": 15.0,
    "skb_orphan": 5.0,
    "e1000_xmit_frame": 120.0,  # descriptor setup, doorbell
    "e1000_clean_tx_irq": 80.0,
    "e1000_clean_rx_irq": 100.0,  # per packet: descriptor, build_skb
    "veth_poll": 40.0,
    # --- device layer, receive ------------------------------------------------------
    "netif_rx": 50.0,  # enqueue_to_backlog
    "process_backlog": 40.0,
    "napi_gro_receive": 30.0,
    "netif_receive_skb": 20.0,
    "__netif_receive_skb_core": 60.0,
    "eth_type_trans": 25.0,
    # --- IP input -------------------------------------------------------------------
    "ip_rcv": 50.0,
    "ip_rcv_finish_core": 30.0,
    "ip_local_deliver": 20.0,
    "ip_protocol_deliver_rcu": 25.0,
    "ip_forward": 60.0,
    "ip_decrease_ttl": 5.0,
    "ip_defrag": 150.0,
    "ip_frag_reasm": 200.0,
    # --- UDP receive ---------------------------------------------------------------
    "__udp4_lib_rcv": 70.0,
    "__udp4_lib_lookup": 45.0,
    "udp_queue_rcv_one_skb": 40.0,
    "__udp_enqueue_schedule_skb": 60.0,
    "sock_def_readable": 40.0,
    "udp_recvmsg": 150.0,
    "__skb_recv_datagram": 40.0,
    "udp_lib_checksum_complete": 10.0,
    # --- tunnels: transmit -----------------------------------------------------------
    # The tunnel's part of seed 1's packet is a second IP output: building the
    # outer header, routing it and sending it down the underlay. Its functions
    # cost what their IP-layer counterparts above cost for the work they do.
    "ipgre_xmit": 40.0,
    "gre_tap_xmit": 40.0,
    "ipip_tunnel_xmit": 40.0,
    "sit_tunnel_xmit": 60.0,
    "ip_tunnel_xmit": 150.0,  # tnl_params, outer route, headroom, TOS/TTL, DF
    "tnl_update_pmtu": 25.0,
    "iptunnel_handle_offloads": 10.0,
    "gre_build_header": 30.0,  # + csum_partial over the payload with the C bit
    "gre_calc_hlen": 3.0,
    "ip_tunnel_ecn_encap": 5.0,
    "INET_ECN_encapsulate": 3.0,
    "iptunnel_xmit": 60.0,  # skb_scrub_packet, push, outer header, ident, ip_local_out
    "pskb_inet_may_pull": 5.0,
    "ip_rt_update_pmtu": 10.0,
    "__ip_rt_update_pmtu": 20.0,
    "skb_cloned": 2.0,
    "skb_push": 3.0,
    "skb_pull": 3.0,
    "csum_fold": 3.0,
    "csum_tcpudp_magic": 5.0,
    "csum_tcpudp_nofold": 5.0,
    "ip_compute_csum": 10.0,  # + csum_partial per byte
    # --- tunnels: receive --------------------------------------------------------------
    "gre_rcv": 40.0,
    "gre_parse_header": 40.0,
    "__ipgre_rcv": 30.0,
    "tunnel4_rcv": 20.0,
    "ipip_rcv": 30.0,
    "ipip_tunnel_rcv": 20.0,
    "ipip6_rcv": 60.0,
    "ip_tunnel_lookup": 60.0,
    "ip_tunnel_rcv": 80.0,
    "__iptunnel_pull_header": 30.0,
    "INET_ECN_decapsulate": 5.0,
    "IP_ECN_decapsulate": 5.0,
    "gro_cells_receive": 40.0,
    "gro_cell_poll": 30.0,
    # --- TCP (estimates from perf profiles of netperf TCP_STREAM/TCP_RR on
    # Nehalem/Westmere-class servers, e.g. the netdev 0.1/1.1 TSO/GRO talks:
    # a 64 KB GSO skb costs TCP about what one MSS segment does; the per-byte
    # copy is charged to the copy, not to these) ---------------------------------------
    "tcp_v4_rcv": 150.0,  # lookup, checksum state, socket lock
    "tcp_v4_do_rcv": 20.0,
    "tcp_v6_rcv": 150.0,  # tcp_v4_rcv's work over the IPv6 header
    "tcp_v6_do_rcv": 20.0,
    "tcp_rcv_established": 120.0,
    "tcp_rcv_state_process": 200.0,
    "tcp_ack": 250.0,  # window update, clean_rtx_queue, RTT, cong_avoid
    "tcp_clean_rtx_queue": 120.0,
    "tcp_sacktag_write_queue": 200.0,
    "tcp_fastretrans_alert": 80.0,
    "tcp_data_queue": 150.0,
    "tcp_data_queue_ofo": 250.0,
    "tcp_event_data_recv": 40.0,
    "__tcp_ack_snd_check": 30.0,
    "__tcp_transmit_skb": 350.0,  # clone, header, options, ip_queue_xmit
    "__ip_queue_xmit": 120.0,
    "ip6_xmit": 120.0,  # __ip_queue_xmit's work for IPv6 (TCPv6 output)
    "tcp_write_xmit": 150.0,
    "tcp_sendmsg_locked": 300.0,  # + the copy from user space
    "tcp_recvmsg_locked": 250.0,  # + the copy to user space
    "tcp_cleanup_rbuf": 30.0,
    "__tcp_send_ack": 100.0,
    "tcp_retransmit_timer": 300.0,
    "tcp_delack_timer_handler": 50.0,
    "tcp_conn_request": 800.0,
    "tcp_check_req": 400.0,
    "tcp_create_openreq_child": 1500.0,
    # --- GRO / GSO --------------------------------------------------------------------
    "inet_gro_receive": 60.0,
    "tcp_gro_receive": 60.0,  # + the merge copy (netstack's skbs are linear)
    "inet_gro_complete": 30.0,
    "skb_segment": 200.0,  # per GSO skb; + per segment in the caller
    "inet_gso_segment": 60.0,
    # the IPv6 and tunnel callbacks do the IPv4 ones' work on their own headers
    "ipv6_gro_receive": 60.0,
    "ipv6_gro_complete": 30.0,
    "ipv6_gso_segment": 60.0,
    "gre_gro_receive": 60.0,
    "gre_gro_complete": 30.0,
    "gre_gso_segment": 60.0,
    # --- ICMP -----------------------------------------------------------------------
    "icmp_rcv": 60.0,
    # __icmp_send: checks and rate limits; the error's route lookup and output
    # are charged to the functions that do them
    "__icmp_send": 120.0,
    "icmp_echo": 30.0,
    "icmp_reply": 100.0,
    "icmp_push_reply": 80.0,
    # --- TCP ------------------------------------------------------------------------
    # sequence-space comparisons are inlined by the compiler: their few
    # instructions are part of their callers' cost, never a perf top line
    "before": 0.0,
    "after": 0.0,
    "between": 0.0,
}
