"""ip_tunnel_lookup: which tunnel a received packet belongs to.

The kernel's four passes (remote+local, remote only, local only, wildcard)
take a tunnel bound to the receiving link at once and otherwise keep the
first match as the candidate; netstack stops after the first candidate when
no tunnel of the table is bound to a link (``IpTunnelNet.nlinked``). These
check that a bound tunnel found in a later pass still wins, and that the
count follows ``ip link add/del`` and ``ip tunnel change … dev``.
"""

from __future__ import annotations

import trio
import trio.testing
from helpers import IPV4_ONLY

import netstack


async def _pair(lab: netstack.Lab) -> tuple[netstack.Host, netstack.Host]:
    a = lab.add_host("a", sysctls=IPV4_ONLY)
    b = lab.add_host("b", sysctls=IPV4_ONLY)
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    a.ip("link add g1 type gre remote 192.0.2.2 local 192.0.2.1")
    a.ip("link set g1 up")
    a.ip("addr add 10.9.0.1/30 dev g1")
    return a, b


async def _send_one(a: netstack.Host) -> None:
    sock = a.socket(netstack.socket.AF_INET, netstack.socket.SOCK_DGRAM)
    await sock.sendto(b"x" * 32, ("10.9.0.2", 9))
    await trio.sleep(0.01)


async def test_a_tunnel_bound_to_the_link_wins_over_an_earlier_candidate(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = await _pair(lab)
    # remote and local (pass 1, no link) and remote only on eth0 (pass 2, bound)
    b.ip("link add exact type gre remote 192.0.2.1 local 192.0.2.2")
    b.ip("link add bound type gre remote 192.0.2.1 dev eth0")
    for name in ("exact", "bound"):
        b.ip(f"link set {name} up")
    itn = b.dev("exact").priv.itn
    assert itn.nlinked == 1
    await _send_one(a)
    assert b.dev("bound").stats.rx_packets == 1
    assert b.dev("exact").stats.rx_packets == 0
    # without the bound one, the first candidate is the answer
    b.ip("link del bound")
    assert itn.nlinked == 0
    await _send_one(a)
    assert b.dev("exact").stats.rx_packets == 1


async def test_the_count_follows_a_change_of_link(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    a, b = await _pair(lab)
    b.ip("tunnel add exact mode gre remote 192.0.2.1 local 192.0.2.2")
    b.ip("tunnel add loose mode gre remote 192.0.2.1")
    for name in ("exact", "loose"):
        b.ip(f"link set {name} up")
    itn = b.dev("exact").priv.itn
    assert itn.nlinked == 0
    await _send_one(a)
    assert b.dev("exact").stats.rx_packets == 1
    b.ip("tunnel change loose mode gre remote 192.0.2.1 dev eth0")
    assert itn.nlinked == 1
    await _send_one(a)
    assert b.dev("loose").stats.rx_packets == 1
    assert b.dev("exact").stats.rx_packets == 1


async def test_keys_and_remotes_at_the_top_of_32_bits_hash_to_their_bucket(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """The first pass's bucket is ``hash_32(key ^ remote)`` (an int64 product in the
    build): tunnels keyed near 2**32 with a remote above 2**31 are found in the bucket
    ``ip_tunnel_hash`` gives, and each takes only its own key."""
    from netstack.tunnels.ip_tunnel import ip_tunnel_hash, ip_tunnel_lookup

    a = lab.add_host("a", sysctls=IPV4_ONLY)
    a.ip("addr add 203.0.113.1/24 dev lo")
    keys = (0xFFFFFFFF, 0xFFFFFFFE, 0x80000000, 0x7FFFFFFF, 1)
    for i, key in enumerate(keys):
        a.ip(f"link add k{i} type gre remote 203.0.113.254 local 203.0.113.1 key {key}")
        a.ip(f"link set k{i} up")
    itn = a.dev("k0").priv.itn
    remote, local = 0xCB0071FE, 0xCB007101  # 203.0.113.254, 203.0.113.1
    for i, key in enumerate(keys):
        t = a.dev(f"k{i}").priv
        assert t in itn.tunnels[ip_tunnel_hash(key, remote)]
        found = ip_tunnel_lookup(itn, 0, 0x2000, remote, local, key)  # GRE_KEY
        assert found is t, (key, found)
    assert ip_tunnel_lookup(itn, 0, 0x2000, remote, local, 0xFFFFFFFD) is None
