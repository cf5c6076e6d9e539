"""TCP, shared by the IP families: the state machine, input, output, timers, congestion control.

Theory of operation: :mod:`netstack.tcp.sock` holds the per-connection state
(``struct tcp_sock``), :mod:`~netstack.tcp.input` and :mod:`~netstack.tcp.output`
are ``tcp_input.c``/``tcp_output.c``, :mod:`~netstack.tcp.minisocks` the
request and TIME_WAIT socks, :mod:`~netstack.tcp.timer` the timers,
:mod:`~netstack.tcp.tcp` the socket calls, :mod:`~netstack.tcp.cong` and
:mod:`~netstack.tcp.cubic` the congestion-control algorithms, and
:mod:`~netstack.tcp.proto` the per-Net state (sysctls, SNMP, hash tables).
Everything family-specific (routing, headers, checksums, replies without a
socket) goes through ``sk.af_ops``; IPv4 provides it in
``netstack.ipv4.tcp_ipv4`` and IPv6 will in ``netstack.ipv6.tcp_ipv6``.

Kernel: net/ipv4/tcp*.c, include/net/tcp.h.
"""

from netstack.tcp.proto import Tcp, tcp_init, tcp_of
from netstack.tcp.sock import TCP_STATE_NAMES, TcpSock
from netstack.tcp.tcp import TcpInfo, tcp_get_info

__all__ = ["TCP_STATE_NAMES", "Tcp", "TcpInfo", "TcpSock", "tcp_get_info", "tcp_init", "tcp_of"]
