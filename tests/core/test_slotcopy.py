"""``slot_names`` and ``instance_allocator``: what a written-out constructor needs."""

from __future__ import annotations

from netstack.core.slotcopy import instance_allocator, slot_names


class _Base:
    __slots__ = ("a", "b")
    a: int
    b: object


class _Child(_Base):
    __slots__ = ("c", "f")
    c: object
    f: object

    def __init__(self) -> None:
        raise AssertionError("the allocator does not run __init__")


def test_slot_names_cover_the_bases_in_order() -> None:
    assert slot_names(_Child) == ["a", "b", "c", "f"]


def test_the_allocator_makes_an_instance_without_init() -> None:
    alloc = instance_allocator(_Child)
    assert alloc is object.__new__
    one = alloc(_Child)
    assert type(one) is _Child and not hasattr(one, "a")


def test_a_class_object_new_refuses_gets_no_allocator() -> None:
    """A native class of the mypyc build refuses ``object.__new__``: None, and its
    callers construct it the ordinary way."""

    class _Refuses(int):  # object.__new__ of an int subclass raises TypeError too
        __slots__ = ()

    assert instance_allocator(_Refuses) is None
