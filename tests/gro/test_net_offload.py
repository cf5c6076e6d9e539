"""NetOffload: a plain slotted class with the attrs class's constructor, repr and identity."""

from __future__ import annotations

import pytest

from netstack.gro.core import NetOffload


def _seg(skb: object, features: int) -> None:
    return None


def test_constructor_positional_and_keyword_defaults_and_repr() -> None:
    a = NetOffload(_seg)
    assert a.gso_segment is _seg
    assert a.gro_receive is None and a.gro_complete is None and a.flags == 0
    b = NetOffload(flags=4)
    assert b.gso_segment is None and b.flags == 4
    assert repr(b) == ("NetOffload(gso_segment=None, gro_receive=None, gro_complete=None, flags=4)")


def test_identity_equality_hashable_and_no_extra_attributes() -> None:
    a, b = NetOffload(flags=1), NetOffload(flags=1)
    assert a == a and a != b  # eq=False: identity
    assert len({a, b}) == 2
    with pytest.raises(AttributeError):
        a.other = 1  # type: ignore[attr-defined]
