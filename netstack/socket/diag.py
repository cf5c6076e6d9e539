"""sock_diag for inet sockets: what ``ss`` asks the kernel, and the rows it gets back.

Theory of operation: user space never walks the kernel's socket tables;
``ss`` sends a ``SOCK_DIAG_BY_FAMILY`` request (:class:`InetDiagReqV2`: the
family, the protocol, a bitmask of states, the extensions it wants) on a
``NETLINK_SOCK_DIAG`` socket, and the kernel dumps one ``struct
inet_diag_msg`` per matching socket (:class:`InetDiagMsg`), with the
attributes asked for (``INET_DIAG_INFO``: ``tcp_info``) and
``INET_DIAG_SKV6ONLY``. :func:`inet_diag_dump` is that request's handler: it
picks the protocol's dumper (``inet_diag_handler``: :func:`tcp_diag_dump`
over TCP's hash tables — listeners, connections, request and TIME_WAIT
socks — and :func:`udp_diag_dump` over the UDP table).

Field names and values are the kernel's: ``idiag_state`` is the state
number ss maps to its names (a TIME_WAIT sock reports its ``tw_substate``,
a request sock ``TCP_SYN_RECV``, a UDP socket ``TCP_ESTABLISHED`` once
connected and ``TCP_CLOSE`` before); the queues are, for a listener, its
accept queue and backlog, for a TCP connection the bytes not yet read and
not yet acknowledged, for UDP the bytes held in its receive and send
buffers. Addresses are integers (the kernel's ``__be32 idiag_src[4]``): 32
bits for AF_INET, 128 for AF_INET6, where an AF_INET6 socket talking IPv4
(dual stack) shows ``::ffff:a.b.c.d``, as ``inet_diag_msg_common_fill``
fills ``sk_v6_rcv_saddr``/``sk_v6_daddr``. ``sdiag_family`` AF_UNSPEC dumps
both families in table order, as the kernel's dumpers accept it.

Kernel: net/ipv4/inet_diag.c (inet_diag_dump_icsk, inet_sk_diag_fill,
inet_twsk_diag_fill, inet_req_diag_fill), net/ipv4/tcp_diag.c
(tcp_diag_get_info), net/ipv4/udp_diag.c (udp_dump), include/uapi/linux/inet_diag.h.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any, Final

import attrs

from netstack.core.sock import AF_INET, AF_INET6, AF_UNSPEC
from netstack.ipv4 import ipv4_of
from netstack.tcp import TcpInfo, TcpSock, tcp_get_info, tcp_of
from netstack.tcp.sock import (
    TCP_LISTEN,
    TCP_NEW_SYN_RECV,
    TCP_SYN_RECV,
    TCP_TIME_WAIT,
    RequestSock,
    TimewaitSock,
)
from netstack.wire.ipv4 import IPPROTO_TCP, IPPROTO_UDP

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "INET_DIAG_INFO",
    "TCPF_ALL",
    "InetDiagMsg",
    "InetDiagReqV2",
    "inet_diag_dump",
    "tcp_diag_dump",
    "udp_diag_dump",
]

INET_DIAG_INFO: Final = 2  # enum inet_diag attribute: struct tcp_info
TCPF_ALL: Final = (1 << (TCP_NEW_SYN_RECV + 1)) - 1  # every state bit (ss's SS_ALL)
_M32: Final = 0xFFFFFFFF
_V4MAPPED_PREFIX: Final = 0xFFFF << 32


@attrs.frozen
class InetDiagReqV2:
    """``struct inet_diag_req_v2``: what to dump.

    Attributes:
        sdiag_family: AF_INET, AF_INET6, or AF_UNSPEC for both.
        sdiag_protocol: IPPROTO_TCP or IPPROTO_UDP.
        idiag_ext: bitmask of ``1 << (INET_DIAG_x - 1)`` extensions (``INET_DIAG_INFO``).
        idiag_states: bitmask of ``1 << TCP_x`` states to dump.
    """

    sdiag_family: int
    sdiag_protocol: int
    idiag_ext: int = 0
    idiag_states: int = TCPF_ALL


@attrs.frozen
class InetDiagMsg:
    """``struct inet_diag_msg`` and the attributes ss reads with it.

    Attributes:
        idiag_family: the socket's family (``sk_family``).
        idiag_state: ``TCP_*`` state (see the module docstring for tw, request and UDP).
        idiag_sport / idiag_dport: local and remote port (0: none).
        idiag_src / idiag_dst: local and remote address as an integer.
        idiag_rqueue / idiag_wqueue: the receive and send queue figures.
        skv6only: ``INET_DIAG_SKV6ONLY``: a full AF_INET6 socket's IPV6_V6ONLY (the
            kernel sends it for those only; ss reads its absence as 0).
        info: ``INET_DIAG_INFO``, the ``tcp_info``, when asked for (full TCP sockets).
    """

    idiag_family: int
    idiag_state: int
    idiag_sport: int
    idiag_dport: int
    idiag_src: int
    idiag_dst: int
    idiag_rqueue: int
    idiag_wqueue: int
    skv6only: bool = False
    info: TcpInfo | None = None


def _v6view(family: int, wire_family: int, addr: int) -> int:
    """An AF_INET6 socket talking IPv4 reports ``::ffff:a.b.c.d`` (inet_diag_msg_common_fill)."""
    if family == AF_INET6 and wire_family == AF_INET and addr:
        return _V4MAPPED_PREFIX | addr
    return addr


def _tcp_msg(sk: Any, want_info: bool) -> InetDiagMsg:
    fam = sk.family
    if isinstance(sk, TimewaitSock):  # inet_twsk_diag_fill
        wf = sk.af_ops.family
        return InetDiagMsg(
            fam, sk.tw_substate, sk.num, sk.dport,
            _v6view(fam, wf, sk.rcv_saddr), _v6view(fam, wf, sk.daddr), 0, 0,
        )  # fmt: skip
    if isinstance(sk, RequestSock):  # inet_req_diag_fill
        wf = sk.af_specific.family
        return InetDiagMsg(
            fam, TCP_SYN_RECV, sk.num, sk.rmt_port,
            _v6view(fam, wf, sk.loc_addr), _v6view(fam, wf, sk.rmt_addr), 0, 0,
        )  # fmt: skip
    v6only = fam == AF_INET6 and bool(sk.ipv6only)
    info = tcp_get_info(sk) if want_info else None
    if sk.state == TCP_LISTEN:  # tcp_diag_get_info: sk_ack_backlog, sk_max_ack_backlog
        return InetDiagMsg(
            fam, TCP_LISTEN, sk.inet_num, 0, sk.inet_rcv_saddr, 0,
            len(sk.accept_queue), sk.sk_max_ack_backlog, v6only, info,
        )  # fmt: skip
    return InetDiagMsg(
        fam, sk.state, sk.inet_num, sk.inet_dport,
        sk.user_addr(sk.inet_saddr), sk.user_addr(sk.inet_daddr),
        (sk.rcv_nxt - sk.copied_seq) & _M32, (sk.write_seq - sk.snd_una) & _M32, v6only, info,
    )  # fmt: skip


def tcp_diag_dump(net: Net, req: InetDiagReqV2) -> list[InetDiagMsg]:
    """The TCP sockets of *net* matching *req*, in hash-table order (listeners first).

    Kernel: net/ipv4/inet_diag.c, inet_diag_dump_icsk().
    """
    want_info = bool(req.idiag_ext & (1 << (INET_DIAG_INFO - 1)))
    out: list[InetDiagMsg] = []
    for sk in tcp_of(net).hashinfo.sockets():
        if req.sdiag_family != AF_UNSPEC and sk.family != req.sdiag_family:
            continue
        if isinstance(sk, TimewaitSock):
            state = TCP_TIME_WAIT
        elif isinstance(sk, RequestSock):
            state = TCP_NEW_SYN_RECV
        else:
            state = sk.state
        if not req.idiag_states & (1 << state):
            continue
        out.append(_tcp_msg(sk, want_info and isinstance(sk, TcpSock)))
    return out


def udp_diag_dump(net: Net, req: InetDiagReqV2) -> list[InetDiagMsg]:
    """The IPv4 UDP sockets of *net* matching *req*, by port (the hash slots' order).

    Kernel: net/ipv4/udp_diag.c, udp_dump().
    """
    out: list[InetDiagMsg] = []
    for sk in sorted(ipv4_of(net).udp_table.sockets(), key=lambda s: s.inet_num):
        if req.sdiag_family != AF_UNSPEC and sk.family != req.sdiag_family:
            continue
        state = sk.state  # TCP_ESTABLISHED once connected (ip4_datagram_connect), else TCP_CLOSE
        if not req.idiag_states & (1 << state):
            continue
        v6only = sk.family == AF_INET6 and bool(getattr(sk, "ipv6only", False))
        out.append(
            InetDiagMsg(
                sk.family, state, sk.inet_num, sk.inet_dport, sk.inet_rcv_saddr,
                sk.inet_daddr, sk.sk_rmem_alloc, sk.sk_wmem_alloc, v6only,
            )
        )  # fmt: skip
    return out


def inet_diag_dump(net: Net, req: InetDiagReqV2) -> list[InetDiagMsg]:
    """A ``SOCK_DIAG_BY_FAMILY`` dump request, handed to the protocol's dumper.

    Raises:
        OSError: ENOENT for a protocol without a diag handler.

    Kernel: net/ipv4/inet_diag.c, inet_diag_dump() → inet_diag_lock_handler().
    """
    if req.sdiag_protocol == IPPROTO_TCP:
        return tcp_diag_dump(net, req)
    if req.sdiag_protocol == IPPROTO_UDP:
        return udp_diag_dump(net, req)
    raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
