"""tunnel4: the handler chains for IP protocols 4 (IPIP) and 41 (IPv6 in IPv4).

Theory of operation: several drivers may want IPv4-in-IPv4 or IPv6-in-IPv4
packets (``ipip``, ``sit``, IPsec's tunnel mode), so ``inet_protos[4]`` and
``inet_protos[41]`` belong to this small module, which keeps a priority-ordered
list of handlers for each and offers each packet to them in turn. A handler
returns 0 when it took the packet and non-zero ("not mine") otherwise; when
nobody takes it the sender gets an ICMP port unreachable and the packet is
dropped.

Kernel: net/ipv4/tunnel4.c (tunnel4_rcv, tunnel64_rcv, xfrm4_tunnel_register).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from netstack.core.net_generic import NetKey
from netstack.core.skbuff import DropReason, SkBuff, kfree_skb
from netstack.core.sock import AF_INET, AF_INET6
from netstack.ipv4 import ipv4_of
from netstack.ipv4.netns import InetProtocol
from netstack.sites import TIMED, kernel, spend
from netstack.wire.icmp import ICMP_DEST_UNREACH, ICMP_PORT_UNREACH
from netstack.wire.ipv4 import IPPROTO_IPIP, IPPROTO_IPV6

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["XfrmTunnel", "tunnel4_init", "xfrm4_tunnel_deregister", "xfrm4_tunnel_register"]


class XfrmTunnel:
    """A receive handler in a chain (kernel: ``struct xfrm_tunnel``).

    ``handler(skb)`` returns 0 if it consumed the skb, non-zero to pass. A
    plain slotted class (it was an attrs class with identity equality, as
    here): native in the build, where ``tunnel4_rcv`` reads ``handler`` per
    packet.
    """

    __slots__ = ("err_handler", "handler", "priority")

    def __init__(
        self,
        handler: Callable[[SkBuff], int],
        err_handler: Callable[[SkBuff, int], int] | None = None,
        priority: int = 0,
    ) -> None:
        self.handler = handler
        self.err_handler = err_handler
        self.priority = priority

    def __repr__(self) -> str:
        return (
            f"XfrmTunnel(handler={self.handler!r}, err_handler={self.err_handler!r},"
            f" priority={self.priority!r})"
        )


class Tunnel4:
    """The two chains of one Net."""

    def __init__(self) -> None:
        self.tunnel4_handlers: list[XfrmTunnel] = []
        self.tunnel64_handlers: list[XfrmTunnel] = []

    def chain(self, family: int) -> list[XfrmTunnel]:
        return self.tunnel4_handlers if family == AF_INET else self.tunnel64_handlers


def tunnel4_of(net: Net) -> Tunnel4:
    t4 = TUNNEL4_NET.find(net)
    assert t4 is not None, "tunnel4 is not loaded"
    return t4


TUNNEL4_NET: Final[NetKey[Tunnel4]] = NetKey("tunnel4")


@kernel("xfrm4_tunnel_register")
def xfrm4_tunnel_register(net: Net, handler: XfrmTunnel, family: int) -> None:
    """Insert *handler* by priority (lower first). Kernel: xfrm4_tunnel_register()."""
    chain = tunnel4_of(net).chain(family)
    for h in chain:
        if h.priority == handler.priority:
            raise ValueError(f"tunnel4 priority {handler.priority} taken")
    i = 0
    while i < len(chain) and chain[i].priority < handler.priority:
        i += 1
    chain.insert(i, handler)


@kernel("xfrm4_tunnel_deregister")
def xfrm4_tunnel_deregister(net: Net, handler: XfrmTunnel, family: int) -> None:
    """Kernel: xfrm4_tunnel_deregister()."""
    chain = tunnel4_of(net).chain(family)
    if handler in chain:
        chain.remove(handler)


@kernel("net/ipv4/tunnel4.c", "tunnel4_rcv", "tunnel64_rcv")
def _tunnel_rcv(net: Net, chain: list[XfrmTunnel], min_len: int, skb: SkBuff) -> int:
    """Offer a protocol 4 (or 41) packet to each handler of the chain, by priority.

    *chain* is the family's handler list, bound at registration (the kernel's
    ``tunnel4_handlers`` / ``tunnel64_handlers`` are globals).

    Kernel: net/ipv4/tunnel4.c, tunnel4_rcv() / tunnel64_rcv().
    """
    if TIMED:
        spend("tunnel4_rcv")
    if skb.tail - skb.data < min_len:
        kfree_skb(skb, DropReason.PKT_TOO_SMALL)
        return 0
    for h in chain:
        if not h.handler(skb):
            return 0
    ipv4_of(net).icmp_send(skb, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, 0)
    kfree_skb(skb, DropReason.IP_TUNNEL_NO_MATCH)
    return 0


@kernel("tunnel4_err", "tunnel64_err")
def _tunnel_err(net: Net, family: int, skb: SkBuff, info: int) -> Any:
    """Kernel: tunnel4_err() / tunnel64_err()."""
    for h in tunnel4_of(net).chain(family):
        if h.err_handler is not None and not h.err_handler(skb, info):
            break
    return None


@kernel("tunnel4_init")
def tunnel4_init(net: Net) -> None:
    """The ``tunnel4`` module's init: own IP protocols 4 and 41. Kernel: tunnel4_init()."""
    t4 = TUNNEL4_NET.set(net, Tunnel4())
    ipv4 = ipv4_of(net)
    for proto, family, min_len in ((IPPROTO_IPIP, AF_INET, 20), (IPPROTO_IPV6, AF_INET6, 40)):
        if proto in ipv4.inet_protos:
            raise ValueError(f"IP protocol {proto} already registered")
        ipv4.inet_protos[proto] = InetProtocol(
            partial(_tunnel_rcv, net, t4.chain(family), min_len), partial(_tunnel_err, net, family)
        )
