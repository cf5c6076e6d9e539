"""The cost table of timed mode: what each emulated kernel function costs.

Theory of operation: one table serves every experiment. It gives, for the
reference machine (:class:`~netstack.cpu.timed.Machine`'s default: a 2010
dual-socket Xeon E5540 at 2.53 GHz, the machine of seed 1), the nanoseconds of
CPU one call of each kernel function costs *excluding* the functions it calls
that are listed here themselves and excluding cache misses on shared lines,
which the coherence model adds where they happen. Functions that touch every
byte (copies, checksums) add a per-byte part.

A key is charged only where the data path says so (``if TIMED:
spend("ip_rcv")``, :mod:`netstack.sites`); a function the table does not list
costs nothing of its own. What is listed: the out-of-line kernel functions —
those ``perf top`` can show — on the per-packet paths (UDP and TCP send and
receive over IPv4 and IPv6, the qdisc and driver paths, tunnels, GRO/GSO,
ICMP errors). What is not: the static inline helpers and accessors the
compiler folds into their callers (``tcp_packets_in_flight``,
``neigh_output``, ``skb_push``, ``fib_lookup``…); the figure of the function
that calls them includes their work ("incl." below). A few inline helpers
stay separate sites because *where* their time falls matters: those that run
under a lock their caller takes or drops (``netif_xmit_frozen_or_stopped``,
``dev_xmit_complete``, ``qdisc_bstats_update`` in the qdisc's transmit path)
and those whose count per call varies (``ip_fast_csum`` once per GSO segment,
``tcp_event_new_data_sent`` carrying the per-skb work of ``tcp_write_xmit``'s
loop, ``sk_stream_alloc_skb`` that of ``tcp_sendmsg``'s). The reasoning, and
how the figures were recalibrated when timed mode stopped charging every
docstring-named function a flat default, is in ``docs/timed.md``.

The figures are estimates assembled from published measurements; where a
figure comes from a specific source, the comment beside it says which. No
experiment has costs of its own: an experiment's inputs are its workload,
its machine and the patch toggles.

Kernel: the functions of net/ as ``perf top`` sees them.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = [
    "COPY_NS_PER_BYTE",
    "CSUM_NS_PER_BYTE",
    "FUNCTIONS",
    "PER_BYTE",
    "CostTable",
    "default_costs",
]


@attrs.frozen
class CostTable:
    """Nanoseconds per call of each kernel function, on the reference machine.

    Attributes:
        functions: kernel function name → ns per call (self cost).
        per_byte: kernel function name → ns per byte of the work its caller
            passes to ``spend(name, nbytes)``.
        syscall_ns: entering and leaving the kernel once (``entry_SYSCALL``).
        user_ns: user-space work per system call of a sending loop
            (building the next call's arguments).
    """

    functions: Mapping[str, float]
    per_byte: Mapping[str, float]
    syscall_ns: float = 70.0
    user_ns: float = 60.0


# Per-byte costs. copy_from_user/copy_to_user of data not already in L1 run at
# ~12 GB/s on a 2010-2014 Xeon core (≈ 0.08 ns/byte); csum_partial's adc loop
# does ~4 bytes/cycle at 2.53 GHz (≈ 0.1 ns/byte). Together they are why a
# receiver without CHECKSUM_COMPLETE runs out of CPU in seed 4.
COPY_NS_PER_BYTE = 0.08
CSUM_NS_PER_BYTE = 0.1


def default_costs() -> CostTable:
    """The one cost table (see the module docstring for its sources)."""
    return CostTable(functions=dict(FUNCTIONS), per_byte=dict(PER_BYTE))


PER_BYTE: Mapping[str, float] = {
    "csum_partial": CSUM_NS_PER_BYTE,
    "udp_sendmsg": COPY_NS_PER_BYTE,  # ip_generic_getfrag: copy from user
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
# sendto including the system call. Seed 4 (the receive CPU of a TCP stream
# through IPIP saturating at 6.5 Gbit/s without GRO) fixes the total of the
# TCP receive path and of the ACKs it sends. The split between functions
# follows the amount of work each does in the kernel source.
FUNCTIONS: Mapping[str, float] = {
    # --- socket layer, UDP send -------------------------------------------------
    "udp_sendmsg": 130.0,  # + ip_append_data bookkeeping, udp header, csum setup; incl. ipv4_mtu
    "ip_make_skb": 170.0,  # __ip_make_skb: __alloc_skb + ip_append_data + header
    "sock_wfree": 35.0,  # incl. sock_def_write_space
    # --- routing ------------------------------------------------------------------
    "ip_route_output_key_hash_rcu": 85.0,  # incl. fib_lookup
    "ip_route_output": 20.0,
    "fib_table_lookup": 50.0,  # LC-trie walk (called for the local and the main table)
    "__ip_dev_find": 25.0,
    "__mkroute_output": 50.0,  # incl. rt_set_nexthop, dst_hold, rt_cache_valid
    "ip_route_input_slow": 100.0,  # incl. fib_lookup
    "fib_validate_source": 40.0,
    # --- IP output ----------------------------------------------------------------
    "__ip_select_ident": 35.0,  # siphash + the ip_idents atomic (its line is modelled)
    "ip_local_out": 40.0,
    "ip_fast_csum": 15.0,  # 20-byte header checksum
    "ip_output": 30.0,
    "ip_finish_output": 45.0,  # incl. ipv4_mtu
    # incl. __ipv4_neigh_lookup_noref; incl. neigh_hh_output, neigh_output
    "ip_finish_output2": 90.0,
    "ip_fragment": 120.0,
    "ip_do_fragment": 150.0,
    # --- neighbour ----------------------------------------------------------------
    "neigh_confirm": 5.0,
    "memcpy": 12.0,  # an out-of-line memcpy call of a few bytes (seed 2's aligned hh copy)
    "neigh_resolve_output": 80.0,
    "neigh_event_send": 30.0,
    "neigh_direct_output": 10.0,
    # --- device layer, transmit ---------------------------------------------------
    "__dev_queue_xmit": 62.0,  # seed 1: dev_queue_xmit 2.2 %
    "netdev_core_pick_tx": 15.0,
    "__dev_xmit_skb": 55.0,  # incl. qdisc_run_begin, spin_unlock, qdisc_run_end, __netif_schedule
    "validate_xmit_skb": 30.0,  # incl. can_checksum_protocol
    "validate_xmit_skb_list": 10.0,
    "netif_skb_features": 20.0,
    "skb_checksum_help": 60.0,  # + csum_partial per byte; incl. skb_cow, csum_fold, skb_cloned
    "dev_hard_start_xmit": 30.0,
    "dev_queue_xmit_nit": 30.0,
    # --- qdisc ----------------------------------------------------------------------
    "__qdisc_run": 20.0,
    "qdisc_restart": 25.0,
    "dequeue_skb": 35.0,  # incl. qdisc_pkt_len_init
    "try_bulk_dequeue_skb": 20.0,
    "sch_direct_xmit": 55.0,  # incl. spin_unlock, qdisc_pkt_len_init
    "pfifo_fast_enqueue": 50.0,  # incl. qdisc_pkt_len_init
    "pfifo_fast_dequeue": 45.0,
    "dql_completed": 30.0,
    # incl. qdisc_run, qdisc_run_begin, spin_unlock, qdisc_run_end, __netif_schedule
    "net_tx_action": 120.0,
    # --- drivers --------------------------------------------------------------------
    "dummy_xmit": 25.0,  # per-CPU dstats + consume
    "consume_skb": 85.0,  # skb_release_all + kmem_cache_free x 2; incl. tcp_wfree
    "kfree_skb_reason": 85.0,  # incl. dst_release
    "kfree_skb_list_reason": 10.0,
    "loopback_xmit": 45.0,  # incl. skb_orphan
    "veth_xmit": 40.0,
    "__dev_forward_skb2": 40.0,
    # descriptor setup, doorbell; incl. netdev_tx_sent_queue, dql_queued
    "e1000_xmit_frame": 135.0,
    # incl. netdev_tx_completed_queue, netif_schedule_queue, __netif_schedule, __netif_reschedule
    "e1000_clean_tx_irq": 110.0,
    # per packet: descriptor, build_skb; incl. csum_tcpudp_magic, csum_tcpudp_nofold, csum_fold
    "e1000_clean_rx_irq": 120.0,
    "veth_poll": 40.0,
    # --- device layer, receive ------------------------------------------------------
    "netif_rx": 65.0,  # enqueue_to_backlog; incl. napi_schedule
    "process_backlog": 40.0,
    "napi_gro_receive": 60.0,  # incl. dev_gro_receive, gro_list_prepare, gro_normal_one
    "netif_receive_skb": 20.0,
    "__netif_receive_skb_core": 60.0,
    "eth_type_trans": 25.0,
    # --- IP input -------------------------------------------------------------------
    "ip_rcv": 80.0,  # incl. ip_rcv_finish_core
    "ip_local_deliver": 45.0,  # incl. ip_protocol_deliver_rcu
    "ip_forward": 60.0,
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
    # --- tunnels: transmit -----------------------------------------------------------
    # The tunnel's part of seed 1's packet is a second IP output: building the
    # outer header, routing it and sending it down the underlay. Its functions
    # cost what their IP-layer counterparts above cost for the work they do.
    "ipgre_xmit": 45.0,  # incl. pskb_inet_may_pull
    "gre_tap_xmit": 40.0,
    "ipip_tunnel_xmit": 45.0,  # incl. pskb_inet_may_pull
    # incl. ipip6_tunnel_xmit, ip6_rt_update_pmtu, __ip6_rt_update_pmtu, ip6_mtu, ipv4_mtu
    "sit_tunnel_xmit": 150.0,
    # tnl_params, outer route, headroom, TOS/TTL, DF; incl. ipv4_link_failure, ip_tunnel_ecn_encap,
    # INET_ECN_encapsulate, skb_cloned
    "ip_tunnel_xmit": 165.0,
    "tnl_update_pmtu": 45.0,  # incl. ip_rt_update_pmtu, ipv4_mtu
    "iptunnel_handle_offloads": 10.0,
    # + csum_partial over the payload with the C bit; incl. skb_push, gre_calc_hlen
    "gre_build_header": 35.0,
    # skb_scrub_packet, push, outer header, ident, ip_local_out; incl. skb_scrub_packet,
    # dst_release, skb_push
    "iptunnel_xmit": 85.0,
    "__ip_rt_update_pmtu": 30.0,  # incl. ipv4_mtu
    "ip_compute_csum": 15.0,  # + csum_partial per byte; incl. csum_fold
    # VXLAN: by analogy with GRE's functions for the same work (no experiment
    # runs VXLAN, so these are not calibrated against a published figure)
    "vxlan_xmit": 60.0,  # incl. vxlan_find_mac (the FDB lookup), the default entry's list
    # the route cache, headroom, TOS/TTL, the VXLAN header; incl. udp_flow_src_port,
    # ip_tunnel_ecn_encap, vxlan_build_skb
    "vxlan_xmit_one": 140.0,
    "udp_tunnel_xmit_skb": 40.0,  # incl. udp_set_csum, __skb_push (then iptunnel_xmit)
    # --- tunnels: receive --------------------------------------------------------------
    "gre_rcv": 40.0,
    "gre_parse_header": 45.0,  # incl. gre_calc_hlen
    "__ipgre_rcv": 30.0,
    "tunnel4_rcv": 20.0,
    "ipip_rcv": 30.0,
    "ipip_tunnel_rcv": 20.0,
    "ipip6_rcv": 75.0,  # incl. pskb_inet_may_pull, IP_ECN_decapsulate, INET_ECN_decapsulate
    "ip_tunnel_lookup": 95.0,  # incl. ip_tunnel_hash, ip_tunnel_key_match
    # incl. skb_scrub_packet, pskb_inet_may_pull, IP_ECN_decapsulate, INET_ECN_decapsulate
    "ip_tunnel_rcv": 110.0,
    "__iptunnel_pull_header": 50.0,  # incl. skb_scrub_packet, dst_release
    # incl. vxlan_vs_find_vni, vxlan_snoop (learning), IP_ECN_decapsulate
    "vxlan_rcv": 110.0,
    "gro_cells_receive": 45.0,  # incl. napi_schedule, skb_cloned
    "gro_cell_poll": 30.0,
    # --- TCP (estimates from perf profiles of netperf TCP_STREAM/TCP_RR on
    # Nehalem/Westmere-class servers, e.g. the netdev 0.1/1.1 TSO/GRO talks:
    # a 64 KB GSO skb costs TCP about what one MSS segment does; the per-byte
    # copy is charged to the copy, not to these) ---------------------------------------
    # lookup, checksum state, socket lock; incl. tcp_v4_checksum_init, tcp_v4_fill_cb,
    # __inet_lookup_established
    "tcp_v4_rcv": 195.0,
    "tcp_v4_do_rcv": 20.0,
    # tcp_v4_rcv's work over the IPv6 header; incl. tcp_v6_checksum_init, tcp_v6_fill_cb,
    # __inet_lookup_established, tcp_v6_check
    "tcp_v6_rcv": 205.0,
    "tcp_v6_do_rcv": 20.0,
    # incl. tcp_parse_options, tcp_validate_incoming, tcp_paws_discard, tcp_paws_reject,
    # tcp_paws_check
    "tcp_rcv_established": 345.0,
    "tcp_rcv_state_process": 200.0,
    # window update, clean_rtx_queue, RTT, cong_avoid; incl. tcp_ack_update_window,
    # tcp_may_update_window, inet_csk_reset_xmit_timer, usecs_to_jiffies, tcp_in_cwnd_reduction
    "tcp_ack": 350.0,
    # incl. tcp_ack_update_rtt, tcp_rtt_estimator, tcp_set_rto, usecs_to_jiffies, cubictcp_acked
    "tcp_clean_rtx_queue": 210.0,
    # incl. tcp_match_skb_to_sack, tcp_set_skb_tso_segs, tcp_mark_lost_retrans, tcp_fragment
    "tcp_sacktag_write_queue": 335.0,
    # incl. tcp_update_scoreboard, tcp_mark_head_lost, tcp_in_cwnd_reduction, tcp_time_to_recover,
    # tcp_set_ca_state
    "tcp_fastretrans_alert": 135.0,
    "tcp_data_queue": 170.0,  # incl. tcp_receive_window, tcp_try_rmem_schedule
    # incl. tcp_try_rmem_schedule, inet_csk_schedule_ack, tcp_sack_new_ofo_skb
    "tcp_data_queue_ofo": 295.0,
    # incl. inet_csk_schedule_ack, tcp_measure_rcv_mss, tcp_rcv_rtt_measure_ts, tcp_grow_window,
    # tcp_win_from_space
    "tcp_event_data_recv": 120.0,
    # incl. tcp_win_from_space, tcp_in_quickack_mode, __tcp_select_window, tcp_space, tcp_full_space
    "__tcp_ack_snd_check": 115.0,
    # clone, header, options, ip_queue_xmit; incl. tcp_win_from_space, tcp_established_options,
    # tcp_select_window, tcp_receive_window, __tcp_select_window
    "__tcp_transmit_skb": 585.0,
    # incl. ip_dont_fragment, ip_select_ident_segs, rt_cache_valid, dst_hold
    "__ip_queue_xmit": 155.0,
    # __ip_queue_xmit's work for IPv6 (TCPv6 output); incl. ip6_mtu, ip6_flow_hdr, ip6_local_out,
    # ip6_output, __ip6_finish_output
    "ip6_xmit": 255.0,
    # incl. tcp_packets_in_flight, tcp_wnd_end, tcp_init_tso_segs, tcp_cwnd_test, tcp_snd_wnd_test
    "tcp_write_xmit": 375.0,
    # + the copy from user space; incl. sk_stream_memory_free, tcp_send_mss, tcp_current_mss,
    # sk_can_gso, tcp_xmit_size_goal
    "tcp_sendmsg_locked": 435.0,
    "tcp_recvmsg_locked": 260.0,  # + the copy to user space; incl. tcp_rcv_space_adjust
    "tcp_cleanup_rbuf": 35.0,  # incl. tcp_receive_window
    "__tcp_send_ack": 145.0,  # incl. tcp_acceptable_seq, tcp_wnd_end, tcp_init_nondata_skb
    "tcp_retransmit_timer": 300.0,
    "tcp_delack_timer_handler": 50.0,
    "tcp_conn_request": 800.0,
    "tcp_check_req": 400.0,
    "tcp_create_openreq_child": 1500.0,
    # --- GRO / GSO --------------------------------------------------------------------
    # incl. call_gro_receive, tcp4_gro_receive, inet_gro_compute_pseudo,
    # __skb_gro_checksum_validate, csum_add
    "inet_gro_receive": 110.0,
    # + the merge copy (netstack's skbs are linear); incl. skb_gro_receive
    "tcp_gro_receive": 70.0,
    "inet_gro_complete": 60.0,  # incl. tcp4_gro_complete, tcp_gro_complete, csum_tcpudp_nofold
    "skb_segment": 205.0,  # per GSO skb; + per segment in the caller; incl. can_checksum_protocol
    # incl. SKB_GSO_CB, csum_fold, tcp4_gso_segment, tcp_gso_segment, ipip_gso_segment
    "inet_gso_segment": 110.0,
    # the IPv6 and tunnel callbacks do the IPv4 ones' work on their own headers
    # incl. tcp6_gro_receive, ip6_gro_compute_pseudo, __skb_gro_checksum_validate, csum_add,
    # __skb_incr_checksum_unnecessary
    "ipv6_gro_receive": 140.0,
    "ipv6_gro_complete": 75.0,  # incl. ipv6_exthdrs_len, tcp6_gro_complete, tcp_gro_complete
    # incl. csum_fold, SKB_GSO_CB, ipv6_gso_pull_exthdrs, tcp6_gso_segment, tcp_gso_segment
    "ipv6_gso_segment": 155.0,
    "gre_gro_receive": 60.0,
    "gre_gro_complete": 30.0,
    "gre_gso_segment": 60.0,
    "vxlan_gro_receive": 60.0,  # incl. vxlan_gro_remcsum, eth_gro_receive's caller
    "__skb_udp_tunnel_segment": 60.0,  # incl. skb_udp_tunnel_segment, udp_set_csum per segment
    # --- ICMP -----------------------------------------------------------------------
    # incl. gre_err, skb_checksum_simple_validate, icmp_unreach, raw_icmp_error, tunnel4_err
    "icmp_rcv": 145.0,
    # __icmp_send: checks and rate limits; the error's route lookup and output
    # are charged to the functions that do them
    # incl. icmp_is_err, icmpv4_xrlim_allow, ipv4_mtu, icmpv4_mask_allow, icmp_global_allow
    "__icmp_send": 170.0,
    "icmp_echo": 30.0,
    "icmp_reply": 100.0,
    "icmp_push_reply": 80.0,
    # --- out-of-line kernel functions the table now lists on their own ----------
    "bstats_update": 15.0,
    "csum_ipv6_magic": 15.0,
    "csum_partial": 15.0,
    "dev_xmit_complete": 15.0,
    "dql_avail": 15.0,
    # incl. ip6_pol_route, ip6_rcv_finish, ip6_route_input, rt6_need_strict, __ipv6_addr_type
    "ipv6_rcv": 270.0,
    "mod_timer": 15.0,
    "netif_tx_queue_stopped": 15.0,
    "netif_xmit_frozen_or_stopped": 15.0,
    "qdisc_bstats_update": 25.0,  # incl. qdisc_pkt_len_init
    "sk_stream_alloc_skb": 50.0,
    # incl. tcp_check_space, tcp_rearm_rto, sock_def_write_space, inet_csk_reset_xmit_timer,
    # tcp_rto_delta_us
    "tcp_event_new_data_sent": 210.0,
}
