"""ICMP echo ("ping") sockets: ``socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)``.

Theory of operation: the application writes an ICMP echo request (type 8,
code 0, any id); the kernel replaces the identifier with the socket's own
(its "port", allocated from a rover, so ``tcpdump`` shows small ids), fills
the checksum and sends it. Echo replies carrying that identifier are queued
for the socket, ICMP header included; ICMP errors quoting our requests reach
the socket as for UDP (``IP_RECVERR`` recommended, as iputils ``ping`` does).
Creating one needs the caller's group in ``net.ipv4.ping_group_range``; the
default here is the systemd one (``0 2147483647``), since the emulated user
is root.

Kernel: net/ipv4/ping.c.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from netstack.core.skbuff import CHECKSUM_NONE, DropReason, SkBuff, consume_skb, kfree_skb
from netstack.core.sock import (
    MSG_CONFIRM,
    MSG_DONTWAIT,
    MSG_PEEK,
    MSG_TRUNC,
    SO_EE_ORIGIN_ICMP,
    SOCK_DGRAM,
    TCP_ESTABLISHED,
    SockWouldBlock,
    sock_oserror,
)
from netstack.ipv4.udp import ICMP_ERR_CONVERT, UdpSock
from netstack.sites import kernel
from netstack.wire.checksum import ip_compute_csum
from netstack.wire.icmp import (
    ICMP_DEST_UNREACH,
    ICMP_ECHO,
    ICMP_FRAG_NEEDED,
    ICMP_HLEN,
    ICMP_PARAMETERPROB,
    ICMP_SOURCE_QUENCH,
    NR_ICMP_UNREACH,
)
from netstack.wire.ipv4 import IPPROTO_ICMP

if TYPE_CHECKING:
    from netstack.ipv4.netns import Ipv4

__all__ = ["PingSock", "PingTable", "ping_err", "ping_rcv"]

EINVAL: Final = 22
EAGAIN: Final = 11
EMSGSIZE: Final = 90
EADDRINUSE: Final = 98
EDESTADDRREQ: Final = 89
_II: Final = struct.Struct("!II")
_EE: Final = struct.Struct("=IBBBBII")
_SIN: Final = struct.Struct("=HH4s8x")


class PingSock(UdpSock):
    """An ICMP echo socket (kernel: ``struct ping_sock`` / ``ping_prot``).

    Twin: netstack.ipv6.ping.Ping6Sock.
    """

    def __init__(self, ipv4: Ipv4) -> None:
        super().__init__(ipv4, SOCK_DGRAM, IPPROTO_ICMP)

    @kernel("ping_bind")
    def bind(self, addr: int, port: int) -> None:
        """Bind an address and (optionally) the identifier. Kernel: ping_bind()."""
        ipv4 = self.ipv4
        if self.inet_num:
            raise sock_oserror(EINVAL)
        if addr and ipv4.fib.inet_addr_type(addr) != 2 and not self.freebind:
            raise sock_oserror(99)  # EADDRNOTAVAIL
        self.inet_rcv_saddr = self.inet_saddr = addr
        ipv4.ping_table.get_port(self, port)

    def connect(self, addr: int, port: int) -> None:
        super().connect(addr, 0)

    def close(self) -> None:
        self.ipv4.ping_table.unhash(self)
        super(UdpSock, self).close()

    @kernel("net/ipv4/ping.c", "ping_v4_sendmsg")
    def sendmsg(
        self, data: bytes | bytearray | memoryview, dest: tuple[int, int] | None, flags: int
    ) -> int:
        """Send an echo request.

        Twin: netstack.ipv6.ping.Ping6Sock.sendmsg6.
        Kernel: net/ipv4/ping.c, ping_v4_sendmsg().
        """
        err = self.sock_error()
        if err:
            raise sock_oserror(err)
        length = len(data)
        if length < ICMP_HLEN or length > 0xFFFF - 20:
            raise sock_oserror(EINVAL if length < ICMP_HLEN else EMSGSIZE)
        if data[0] != ICMP_ECHO or data[1] != 0:
            raise sock_oserror(EINVAL)
        if dest is not None:
            daddr = dest[0]
            connected = False
        else:
            if self.state != TCP_ESTABLISHED:
                raise sock_oserror(EDESTADDRREQ)
            daddr = self.inet_daddr
            connected = True
        ipv4 = self.ipv4
        if not self.inet_num:
            ipv4.ping_table.get_port(self, 0)
        rt, fl4 = self._route(daddr, 0, connected)
        if not self.sock_writeable():
            rt.release()
            if flags & MSG_DONTWAIT:
                raise sock_oserror(EAGAIN)
            raise SockWouldBlock(write=True)
        if length + 20 > rt.mtu() and self.pmtudisc in (2, 3):
            rt.release()
            raise sock_oserror(EMSGSIZE)
        skb = _ip_output.ip_make_skb(ipv4, self, rt, fl4.saddr, fl4.daddr, IPPROTO_ICMP, length)
        buf = skb.buf
        th = skb.transport_header
        buf[th : th + length] = data
        buf[th + 2] = buf[th + 3] = 0
        struct.pack_into("!H", buf, th + 4, self.inet_num)
        c = ip_compute_csum(buf, th, th + length)
        struct.pack_into("!H", buf, th + 2, c)
        skb.ip_summed = CHECKSUM_NONE
        self.sock_wmem_charge(skb)
        if flags & MSG_CONFIRM:
            skb.dst_pending_confirm = True
        ipv4.icmp_mib.OutMsgs += 1
        ipv4.icmpmsg.out_types[ICMP_ECHO] += 1
        _ip_output.ip_local_out(ipv4, skb)
        return length

    @kernel("ping_recvmsg")
    def recvmsg(
        self, bufsize: int, flags: int
    ) -> tuple[bytes, tuple[int, int], int, list[tuple[int, int, bytes]]]:
        """An echo reply, ICMP header included.

        Twin: netstack.ipv6.ping.Ping6Sock.recvmsg6.
        Kernel: ping_recvmsg().
        """
        while True:
            err = self.sock_error()
            if err:
                raise sock_oserror(err)
            q = self.receive_queue
            if not q:
                if flags & MSG_DONTWAIT:
                    raise sock_oserror(EAGAIN)
                raise SockWouldBlock(write=False)
            skb = q[0]
            (saddr,) = struct.unpack_from("!I", skb.buf, skb.network_header + 12)
            th = skb.transport_header
            total = skb.tail - th
            mflags = 0
            copy = total
            if total > bufsize:
                copy = bufsize
                mflags |= MSG_TRUNC
            data = bytes(skb.buf[th : th + copy])
            anc = self.cmsgs(skb) if self.recvttl else []
            if not flags & MSG_PEEK:
                q.popleft()
                self.sk_rmem_alloc -= skb.rmem_charge
                consume_skb(skb)
            return data, (saddr, 0), mflags, anc


class PingTable:
    """Ping sockets by identifier (kernel: ``ping_table``).

    Twin: netstack.ipv6.ping.Ping6Table.
    """

    def __init__(self, ipv4: Ipv4) -> None:
        self.ipv4 = ipv4
        self.ports: dict[int, list[PingSock]] = {}
        self.rover = 0

    @kernel("ping_get_port")
    def get_port(self, sk: PingSock, ident: int) -> None:
        """Kernel: ping_get_port()."""
        if ident:
            for other in self.ports.get(ident, ()):
                if not (sk.sk_reuse and other.sk_reuse):
                    raise sock_oserror(EADDRINUSE)
        else:
            for _ in range(1 << 16):
                self.rover = (self.rover + 1) & 0xFFFF
                if not self.rover:
                    continue
                if not self.ports.get(self.rover):
                    ident = self.rover
                    break
            else:
                raise sock_oserror(EADDRINUSE)
        sk.inet_num = ident
        sk.inet_sport = ident
        self.ports.setdefault(ident, []).append(sk)

    def unhash(self, sk: PingSock) -> None:
        lst = self.ports.get(sk.inet_num)
        if lst and sk in lst:
            lst.remove(sk)
            if not lst:
                del self.ports[sk.inet_num]

    @kernel("ping_lookup")
    def lookup(self, ident: int, saddr: int, daddr: int, dif: int) -> PingSock | None:
        """Kernel: ping_lookup()."""
        for sk in self.ports.get(ident, ()):
            if sk.inet_rcv_saddr and sk.inet_rcv_saddr != daddr:
                continue
            if sk.sk_bound_dev_if and sk.sk_bound_dev_if != dif:
                continue
            return sk
        return None


@kernel("ping_rcv")
def ping_rcv(ipv4: Ipv4, skb: SkBuff) -> bool | None:
    """Deliver an echo reply to its socket.

    Twin: netstack.ipv6.ping.ping6_rcv.
    Kernel: ping_rcv().
    """
    buf = skb.buf
    th = skb.transport_header
    ident = (buf[th + 4] << 8) | buf[th + 5]
    saddr, daddr = _II.unpack_from(buf, skb.network_header + 12)
    dev = skb.dev
    sk = ipv4.ping_table.lookup(ident, saddr, daddr, dev.ifindex if dev is not None else 0)
    if sk is None or sk.dead:
        kfree_skb(skb, DropReason.NO_SOCKET)
        return None
    if not sk.sock_queue_rcv_skb(skb):
        kfree_skb(skb, DropReason.SOCKET_RCVBUFF)
    return None


@kernel("ping_err")
def ping_err(ipv4: Ipv4, skb: SkBuff, info: int) -> None:
    """An ICMP error quotes one of our echo requests.

    Twin: netstack.ipv6.ping.ping6_err.
    Kernel: ping_err().
    """
    buf = skb.buf
    inner = skb.data
    ihl = (buf[inner] & 0xF) * 4
    if skb.tail - inner < ihl + ICMP_HLEN or buf[inner + ihl] != ICMP_ECHO:
        return
    saddr, daddr = _II.unpack_from(buf, inner + 12)
    ident = (buf[inner + ihl + 4] << 8) | buf[inner + ihl + 5]
    dev = skb.dev
    sk = ipv4.ping_table.lookup(ident, daddr, saddr, dev.ifindex if dev is not None else 0)
    if sk is None:
        return
    th = skb.transport_header
    icmp_type = buf[th]
    code = buf[th + 1]
    harderr = False
    if icmp_type == ICMP_SOURCE_QUENCH:
        return
    if icmp_type == ICMP_PARAMETERPROB:
        err, harderr = 71, True  # EPROTO
    elif icmp_type == ICMP_DEST_UNREACH:
        if code == ICMP_FRAG_NEEDED:
            ipv4.ipv4_sk_update_pmtu(sk, daddr, info)
            err, harderr = EMSGSIZE, sk.pmtudisc != 0
        elif code <= NR_ICMP_UNREACH:
            err, harderr = ICMP_ERR_CONVERT[code]
        else:
            err = 113
    else:
        err = 113  # EHOSTUNREACH
    if not sk.recverr:
        if not harderr or sk.state != TCP_ESTABLISHED:
            return
    else:
        (offender,) = struct.unpack_from("!I", buf, skb.network_header + 12)
        ee = _EE.pack(err, SO_EE_ORIGIN_ICMP, icmp_type, code, 0, info, 0) + _SIN.pack(
            2, 0, offender.to_bytes(4, "big")
        )
        payload = bytes(buf[inner + ihl : skb.tail])
        sk.queue_error(payload, ee, (daddr, 0), err)
    sk.sk_err = err
    sk.sk_error_report()


# imported last: ip_output imports this module (a function-level import costs ~5 µs per packet)
from netstack.ipv4 import ip_output as _ip_output  # noqa: E402
