"""UDP tunnels: the kernel sockets, source ports, checksums and transmit VXLAN shares.

Theory of operation: a UDP-encapsulating driver (VXLAN here; Geneve, FOU and
bareudp in the kernel) does not register an IP protocol. It opens an ordinary
UDP socket in the kernel (:func:`udp_sock_create`: bound to the wildcard and
its port, so ``ss -uan`` shows ``0.0.0.0:4789`` as on Linux) and marks it an
encapsulation socket (:func:`setup_udp_tunnel_sock`): ``encap_type``,
``encap_rcv``, ``sk_user_data`` and the GRO callbacks. ``udp_rcv`` finds the
socket by port as for any datagram; ``udp_queue_rcv_one_skb`` sees
``encap_type``, verifies the UDP checksum and calls ``encap_rcv`` with
``skb.data`` at the UDP header, instead of queueing the datagram.

Transmit (:func:`udp_tunnel_xmit_skb`): the driver has pushed its own header;
this pushes the UDP header (the source port from the inner flow hash,
:func:`udp_flow_src_port`, so one flow keeps one port and flows spread over
ECMP paths and RSS queues), sets the checksum (:func:`udp_set_csum`: none with
``noudpcsum``; the pseudo-header only, left to the device, when the inner
packet is complete; computed at once by local checksum offload when the inner
checksum is itself still partial) and sends the IPv4 packet with
``iptunnel_xmit``.

Kernel: net/ipv4/udp_tunnel_core.c (udp_sock_create4, setup_udp_tunnel_sock,
udp_tunnel_xmit_skb, udp_tunnel_sock_release, udp_tunnel_dst_lookup),
include/net/udp.h (udp_flow_src_port), net/ipv4/udp.c (udp_set_csum),
include/linux/skbuff.h (lco_csum).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from netstack.core.dst import DstCache
from netstack.core.net_generic import NetKey
from netstack.core.netdevice import NetDevice
from netstack.core.skbuff import CHECKSUM_PARTIAL, SkBuff
from netstack.ipv4 import ipv4_of
from netstack.ipv4.offload import udp_encap_disable, udp_encap_enable
from netstack.ipv4.route import Flowi4, Rtable
from netstack.ipv4.udp import UdpSock
from netstack.sched.fq_codel import skb_get_hash
from netstack.sites import TIMED, kernel, spend
from netstack.tunnels.ip_tunnel import iptunnel_xmit
from netstack.wire.checksum import CSUM_MANGLED_0, csum_partial, csum_tcpudp_magic
from netstack.wire.ipv4 import IPPROTO_UDP
from netstack.wire.udp import UDP_HDR, UDP_HLEN

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = [
    "UdpTunnelSockCfg",
    "flow_hashrnd",
    "lco_csum",
    "setup_udp_tunnel_sock",
    "udp_flow_src_port",
    "udp_set_csum",
    "udp_sock_create",
    "udp_tunnel_dst_lookup",
    "udp_tunnel_sock_release",
    "udp_tunnel_xmit_skb",
]

_M32 = 0xFFFFFFFF


@attrs.define
class UdpTunnelSockCfg:
    """What a driver asks of its socket (kernel: ``struct udp_tunnel_sock_cfg``)."""

    sk_user_data: Any
    encap_type: int
    encap_rcv: Callable[[UdpSock, SkBuff], int]
    gro_receive: Any = None
    gro_complete: Any = None


@kernel("net/ipv4/udp_tunnel_core.c", "udp_sock_create4")
def udp_sock_create(net: Net, port: int, bind_ifindex: int = 0) -> UdpSock:
    """A kernel UDP socket bound to ``0.0.0.0:port``; ``OSError`` as bind fails.

    Kernel: net/ipv4/udp_tunnel_core.c, udp_sock_create4().
    """
    sk = UdpSock(ipv4_of(net))
    sk.sk_bound_dev_if = bind_ifindex
    sk.bind(0, port)
    return sk


# the sockets whose ENCAP_ENABLED bit is set (udp_sk(sk)->udp_flags), per Net
_ENCAP_ENABLED: NetKey[set[UdpSock]] = NetKey("udp_encap_enabled_socks")


@kernel("setup_udp_tunnel_sock")
def setup_udp_tunnel_sock(sk: UdpSock, cfg: UdpTunnelSockCfg) -> None:
    """Make *sk* an encapsulation socket (and switch on UDP GRO's socket lookup).

    Kernel: setup_udp_tunnel_sock() (udp_tunnel_encap_enable).
    """
    sk.sk_user_data = cfg.sk_user_data
    sk.encap_type = cfg.encap_type
    sk.encap_rcv = cfg.encap_rcv
    sk.gro_receive = cfg.gro_receive
    sk.gro_complete = cfg.gro_complete
    if sk not in _ENCAP_ENABLED.get_or_create(sk.ipv4.net, set):  # udp_test_and_set_bit()
        _ENCAP_ENABLED.get(sk.ipv4.net).add(sk)
        udp_encap_enable(sk.ipv4.net)


@kernel("udp_tunnel_sock_release")
def udp_tunnel_sock_release(sk: UdpSock) -> None:
    """Kernel: udp_tunnel_sock_release() (udp_destroy_sock: udp_encap_disable)."""
    sk.sk_user_data = None
    sk.encap_rcv = None
    sk.encap_type = 0
    enabled = _ENCAP_ENABLED.find(sk.ipv4.net)
    if enabled is not None and sk in enabled:
        enabled.discard(sk)
        udp_encap_disable(sk.ipv4.net)
    sk.close()


def flow_hashrnd(net: Net) -> int:
    """The flow dissector's per-boot key (``hashrnd``), from the Net's seed."""
    return _FLOW_HASHRND.get_or_create(
        net, lambda: int.from_bytes(net.get_random_once("flow_dissector_hashrnd", 4), "little")
    )


_FLOW_HASHRND: NetKey[int] = NetKey("flow_hashrnd")


@kernel("include/net/udp.h", "udp_flow_src_port")
def udp_flow_src_port(net: Net, skb: SkBuff, low: int, high: int) -> int:
    """The outer source port: the inner flow hash scaled into ``[low, high)``.

    ``low >= high`` (``srcport 0 0``, the default) means the local port range
    (``net.ipv4.ip_local_port_range``). The hash is ``skb.hash`` if a socket
    set it (TCP's ``sk_txhash``), else the flow dissector's hash of the inner
    addresses, ports and protocol, which both directions of a flow share.

    Kernel: include/net/udp.h, udp_flow_src_port().
    """
    if low >= high:
        low, high = ipv4_of(net).ip_local_port_range
    h = skb_get_hash(skb, flow_hashrnd(net))
    h = (h ^ (h << 16)) & _M32  # "obfuscate hash a bit": only the upper 16 bits count
    return ((h * (high - low)) >> 32) + low


@kernel("include/linux/skbuff.h", "lco_csum")
def lco_csum(skb: SkBuff) -> int:
    """Local checksum offload: the sum of the outer L4 header up to the inner
    checksum's start, plus what the inner checksum will make of the rest.

    Kernel: include/linux/skbuff.h, lco_csum().
    """
    buf = skb.buf
    start = skb.csum_start
    off = start + skb.csum_offset
    partial = ~((buf[off] << 8) | buf[off + 1]) & 0xFFFF  # ~csum_unfold(inner check)
    return csum_partial(buf, skb.transport_header, start, partial)


@kernel("net/ipv4/udp.c", "udp_set_csum")
def udp_set_csum(nocheck: bool, skb: SkBuff, saddr: int, daddr: int, length: int) -> None:
    """Fill the outer UDP checksum. Kernel: net/ipv4/udp.c, udp_set_csum()."""
    buf = skb.buf
    th = skb.transport_header
    if nocheck:
        buf[th + 6] = buf[th + 7] = 0
    elif skb.gso_size or skb.ip_summed != CHECKSUM_PARTIAL:
        # the device (or skb_checksum_help below it) finishes it; a GSO skb's
        # segments get theirs in the tunnel's gso_segment
        if not skb.gso_size:
            skb.ip_summed = CHECKSUM_PARTIAL
            skb.csum_start = th
            skb.csum_offset = 6
        c = ~csum_tcpudp_magic(saddr, daddr, length, IPPROTO_UDP, 0) & 0xFFFF
        buf[th + 6] = c >> 8
        buf[th + 7] = c & 0xFF
    else:
        buf[th + 6] = buf[th + 7] = 0
        c = csum_tcpudp_magic(saddr, daddr, length, IPPROTO_UDP, lco_csum(skb))
        c = c or CSUM_MANGLED_0
        buf[th + 6] = c >> 8
        buf[th + 7] = c & 0xFF


@kernel("net/ipv4/udp_tunnel_core.c", "udp_tunnel_dst_lookup")
def udp_tunnel_dst_lookup(
    dev: NetDevice,
    net: Net,
    oif: int,
    saddr: int,
    daddr: int,
    sport: int,
    dport: int,
    tos: int,
    dst_cache: DstCache[Rtable] | None = None,
) -> tuple[Rtable, int] | int:
    """Route the outer packet: the route and the source address it chose, or a
    negative errno: ``-ENETUNREACH`` without a route, ``-ELOOP`` when the route
    leads back into *dev*. A valid *dst_cache* answers without a lookup (and
    keeps the new route otherwise).

    Kernel: net/ipv4/udp_tunnel_core.c, udp_tunnel_dst_lookup().
    """
    if dst_cache is not None:
        cached = dst_cache.get_ip4()
        if cached is not None:
            return cached, dst_cache.saddr
    fl4 = Flowi4(daddr, saddr, oif=oif, tos=tos & 0x1E, proto=IPPROTO_UDP, sport=sport, dport=dport)
    rt = ipv4_of(net).ip_route_output_key(fl4)
    if isinstance(rt, int):
        return -101  # ENETUNREACH
    if rt.dev is dev:
        rt.release()
        return -40  # ELOOP: "circular route"
    if dst_cache is not None:
        dst_cache.set_ip4(rt, fl4.saddr)
    return rt, fl4.saddr


@kernel("net/ipv4/udp_tunnel_core.c", "udp_tunnel_xmit_skb")
def udp_tunnel_xmit_skb(
    rt: Rtable,
    skb: SkBuff,
    src: int,
    dst: int,
    tos: int,
    ttl: int,
    df: int,
    src_port: int,
    dst_port: int,
    nocheck: bool,
    dev: NetDevice,
) -> None:
    """Push the UDP header, set its checksum, send it in IPv4.

    Kernel: net/ipv4/udp_tunnel_core.c, udp_tunnel_xmit_skb().
    """
    if TIMED:
        spend("udp_tunnel_xmit_skb")
    th = skb.push(UDP_HLEN)
    skb.transport_header = th
    length = skb.tail - th
    # (htons(skb->len): a GSO skb's length is fixed per segment by its gso_segment)
    UDP_HDR.pack_into(skb.buf, th, src_port, dst_port, length & 0xFFFF, 0)
    udp_set_csum(nocheck, skb, src, dst, length)
    iptunnel_xmit(ipv4_of(dev.net), rt, skb, src, dst, IPPROTO_UDP, tos, ttl, df, dev)
