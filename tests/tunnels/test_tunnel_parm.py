"""The tunnel parameter classes read per packet (issue 18, tuntyped): plain slotted
classes, native in the mypyc build, with what the attrs classes they replaced gave
(the keyword constructor and its defaults, ``repr``, field equality, no hashing,
no attributes beyond the fields)."""

from __future__ import annotations

import pytest

from netstack.tunnels.ip_tunnel import IpTunnelParm, TnlPtkInfo
from netstack.tunnels.tunnel4 import XfrmTunnel


def test_ip_tunnel_parm_keeps_the_attrs_constructor_repr_and_equality() -> None:
    p = IpTunnelParm(name="gre1", i_flags=0x2000, i_key=7, ttl=64, daddr=0x0A000002)
    assert repr(p) == (
        "IpTunnelParm(name='gre1', link=0, i_flags=8192, o_flags=0, i_key=7, o_key=0,"
        " version=4, ihl=5, tos=0, frag_off=0, ttl=64, protocol=0, saddr=0,"
        " daddr=167772162)"
    )
    q = p.copy()
    assert q is not p and q == p
    q.i_key = 8
    assert q != p and p.i_key == 7
    assert p != object() and p != 1
    with pytest.raises(TypeError):
        hash(p)
    with pytest.raises(AttributeError):
        p.iph = None  # type: ignore[attr-defined]


def test_tnl_ptk_info_keeps_the_attrs_constructor_repr_and_equality() -> None:
    tpi = TnlPtkInfo(proto=0x0800, no_key=True)
    assert repr(tpi) == (
        "TnlPtkInfo(flags=0, proto=2048, key=0, seq=0, hdr_len=0, csum_err=False, no_key=True)"
    )
    assert tpi == TnlPtkInfo(0, 0x0800, 0, 0, 0, False, True)
    assert tpi != TnlPtkInfo(proto=0x0800)
    with pytest.raises(TypeError):
        hash(tpi)


def test_xfrm_tunnel_compares_by_identity() -> None:
    def handler(skb: object) -> int:
        return 0

    h = XfrmTunnel(handler, priority=1)
    assert h == h and h != XfrmTunnel(handler, priority=1)
    assert hash(h) == hash(h)
    assert repr(h).startswith("XfrmTunnel(handler=<function ")
    assert repr(h).endswith(", err_handler=None, priority=1)")
