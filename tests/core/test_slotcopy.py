"""``instance_maker``: a slotted object built with one store a field, no ``__init__``."""

from __future__ import annotations

import pytest

from netstack.core.slotcopy import instance_allocator, instance_maker, slot_names


class _Base:
    __slots__ = ("a", "b")
    a: int
    b: object


class _Child(_Base):
    __slots__ = ("c", "f")
    c: object
    f: object

    def __init__(self) -> None:
        raise AssertionError("instance_maker does not run __init__")


def _double(x: int) -> int:
    return 2 * x


def test_slot_names_cover_the_bases_in_order() -> None:
    assert slot_names(_Child) == ["a", "b", "c", "f"]


def test_the_maker_sets_parameters_and_constants() -> None:
    make = instance_maker(_Child, ("b", "c"), {"a": -1, "f": _double})
    assert make is not None
    one, two = make(None, "x"), make(3, (4,))
    assert type(one) is _Child and one is not two
    assert (one.a, one.b, one.c, one.f) == (-1, None, "x", _double)
    assert (two.a, two.b, two.c, two.f) == (-1, 3, (4,), _double)


@pytest.mark.parametrize(
    ("params", "constants"),
    [
        (("a", "b"), {"c": 0}),  # f never set: reading it would raise AttributeError
        (("a", "b", "c"), {"c": 0, "f": 0}),  # c twice
        (("a", "b", "c", "f"), {"g": 0}),  # not a slot
    ],
)
def test_every_slot_once(params: tuple[str, ...], constants: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="slots"):
        instance_maker(_Child, params, constants)


def test_a_class_object_new_refuses_gets_no_maker() -> None:
    """A native class of the mypyc build (``object.__new__`` refuses it, and its
    ``__slots__`` may be incomplete) gets None, before the slots are checked."""

    class _Refuses(int):  # object.__new__(int subclass) raises TypeError too
        __slots__ = ()

    assert instance_maker(_Refuses, (), {"not_a_slot": 0}) is None
    assert instance_allocator(_Refuses) is None
    assert instance_allocator(_Child) is object.__new__
