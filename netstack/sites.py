"""Cost sites: which Python function mirrors which kernel function, and what it spends.

Theory of operation. Two things, both explicit in code and independent of
docstrings:

* **The marker.** ``@kernel("net/core/dev.c", "__dev_queue_xmit")`` above a
  function or class names the kernel source files and functions it mirrors
  (paths contain a ``/`` or end in ``.c``/``.h``; everything else is a
  function). It is metadata only: it records the names in :data:`MARKERS`
  and returns the object unchanged, so calling a marked function costs
  exactly what calling it unmarked did. The docstring's ``Kernel:`` line says
  the same for a reader (``scripts/kernel_markers.py --check``, part of the
  test suite, keeps the two in agreement and ``--fix`` adds the markers new
  ``Kernel:`` lines lack); ``docs/kernel-map.md`` is generated from the
  markers.
* **The charge.** A function whose kernel counterpart costs CPU time in timed
  mode says so where the work happens::

      if TIMED:
          spend("__dev_queue_xmit")

  and a copy or checksum passes its byte count: ``spend("csum_partial",
  end - start)``. The names are keys of the one cost table
  (:mod:`netstack.cpu.costs`); a function that mirrors two kernel functions
  spends both. A function that spends nothing costs nothing in timed mode.

``TIMED`` is a module global of each module that charges, bound by ``from
netstack.sites import TIMED``: ``False`` in functional mode, so the data path
pays one global load and a branch per charge site (about 60 CPython
instructions, against ~380 for calling even an empty function).
:func:`activate` — called by the timed model while it measures — rebinds it
to ``True`` in every loaded ``netstack`` module that imported it with
:func:`spend` (and here,
so a module imported later binds ``True`` too) and routes :func:`spend` to
the model; :func:`deactivate` undoes both. Nothing traces calls: there is no
``sys.settrace``/``sys.setprofile`` hook, so debuggers and coverage keep
theirs, and compiled code would be charged the same way.

This module sits below every layer (it imports nothing of netstack), so the
wire helpers can charge too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = ["MARKERS", "TIMED", "activate", "deactivate", "is_path", "kernel", "spend"]

T = TypeVar("T")

TIMED: bool = False
"""True while a timed model measures (rebound in every charging module)."""

MARKERS: Final[dict[str, tuple[str, ...]]] = {}
"""``module.qualname`` → the kernel files and functions its marker names."""

Spender = Callable[[str, int], None]


def is_path(ref: str) -> bool:
    """Whether a marker argument names a kernel source file (not a function)."""
    return "/" in ref or ref.endswith((".c", ".h"))


def kernel(*refs: str) -> Callable[[T], T]:
    """Mark a function or class as mirroring kernel *refs* (files and functions).

    Metadata only: the decorated object is returned unchanged.
    """

    def mark(obj: T) -> T:
        MARKERS[f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"] = refs
        return obj

    return mark


def _idle(site: str, nbytes: int = 0) -> None:
    """No model measures: nothing to charge (reached only outside timed runs)."""


_spender: list[Spender] = []


def spend(site: str, nbytes: int = 0) -> None:
    """Charge one call of kernel function *site* (and *nbytes* of its per-byte
    work) to the CPU running the current data-path section.

    Call it only under ``if TIMED:``; *site* is a key of the cost table (a test
    checks that the default table lists every site the data path spends).
    """
    (_spender[-1] if _spender else _idle)(site, nbytes)


def _rebind(value: bool) -> None:
    global TIMED
    TIMED = value
    this = sys.modules[__name__]
    for name, module in list(sys.modules.items()):
        if module is None or module is this or not name.startswith("netstack."):
            continue
        namespace = vars(module)
        if namespace.get("spend") is spend and "TIMED" in namespace:
            namespace["TIMED"] = value


def activate(spender: Spender) -> None:
    """Start charging: *spender* receives every :func:`spend` until :func:`deactivate`."""
    _spender.append(spender)
    if len(_spender) == 1:
        _rebind(True)


def deactivate(spender: Spender) -> None:
    """Stop routing charges to *spender* (the last one switches ``TIMED`` off)."""
    if spender in _spender:
        _spender.remove(spender)
    if not _spender:
        _rebind(False)
