"""The ``/proc/sys`` tree of one Net: named, validated tunables.

Theory of operation: the layer that owns a tunable registers it, per Net, when
the host is built (kernel: ``register_net_sysctl``); per-device entries
(``net.ipv4.conf.eth0.forwarding``) are registered when the device appears and
removed when it goes. A layer may register a group of entries lazily
(:meth:`SysctlTable.register_lazy`: a prefix and the function that registers
them): the function runs the first time a name under the prefix is read,
written, listed or tested, so a host that never looks at
``net.ipv6.conf.eth0.*`` never builds its seventy entries (the kernel builds
its ctl_table per device at once; here that was a third of building a host).
Every entry is a getter and an optional setter working on
strings, as ``/proc/sys`` files do. Errors carry the text the ``sysctl`` tool
prints, so the front end shows them unchanged.

Kernel: kernel/sysctl.c, net/sysctl_net.c, net/core/sysctl_net_core.c.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable, Collection
from typing import Any, ParamSpec

from netstack.errors import ConfigError

P = ParamSpec("P")

__all__ = ["IntEntry", "SysctlEntry", "SysctlTable"]


class SysctlEntry:
    """One ``/proc/sys`` file: ``get()`` its text, ``set(text)`` (None: read-only)."""

    __slots__ = ("get", "name", "set")

    def __init__(
        self, name: str, get: Callable[[], str], setter: Callable[[str], None] | None
    ) -> None:
        self.name = name
        self.get = get
        self.set = setter


class IntEntry:
    """An integer file backed by ``obj.attr`` (kernel: proc_dointvec_minmax): one
    small object rather than an entry and two closures (a host has hundreds)."""

    __slots__ = ("attr", "maximum", "minimum", "name", "obj", "on_change")

    def __init__(
        self,
        name: str,
        obj: Any,
        attr: str,
        minimum: int | None,
        maximum: int | None,
        on_change: Callable[[int], None] | None,
    ) -> None:
        self.name = name
        self.obj = obj
        self.attr = attr
        self.minimum = minimum
        self.maximum = maximum
        self.on_change = on_change

    def get(self) -> str:
        return str(getattr(self.obj, self.attr))

    def set(self, text: str) -> None:
        try:
            value = int(text.strip())
        except ValueError:
            raise invalid(self.name) from None
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise invalid(self.name)
        setattr(self.obj, self.attr, value)
        if self.on_change is not None:
            self.on_change(value)


def _canonical(name: str) -> str:
    name = name.strip()
    if "/" in name:
        name = name.strip("/").replace("/", ".")
    return name


def invalid(name: str) -> ConfigError:
    """The error ``sysctl -w`` prints for a value the kernel refuses (EINVAL)."""
    return ConfigError(f'sysctl: setting key "{name}": Invalid argument', errno.EINVAL)


_Deferred = tuple[Callable[..., None], tuple[Any, ...], dict[str, Any] | None]
"""A deferred registration: the function, its arguments and keyword arguments."""


def _in_order(group: _Deferred | list[_Deferred]) -> list[_Deferred] | tuple[_Deferred]:
    """The registrations of a prefix, in the order they were deferred."""
    return group if isinstance(group, list) else (group,)


class SysctlTable:
    """The sysctl entries of one Net."""

    def __init__(self) -> None:
        self._entries: dict[str, SysctlEntry | IntEntry] = {}
        #: prefix ("net.ipv4.conf.eth0.") -> the registrations deferred under it
        self._lazy: dict[str, _Deferred | list[_Deferred]] = {}
        #: while a deferred group runs for one lookup: the one name it may register
        self._only: str | None = None
        #: names registered that way, whose group has yet to run in full
        self._early: set[str] = set()

    def register_lazy(
        self, prefix: str, register: Callable[P, None], *args: P.args, **kwargs: P.kwargs
    ) -> None:
        """Run ``register(*args, **kwargs)`` (which registers entries, all under
        *prefix*, a name ending in ".") only when a name under *prefix* is first used."""
        if self._only is not None:
            return  # a group running for one name: its full run will defer these
        # a tuple, not a closure, and a prefix's only registration is the tuple
        # itself (a list from the second on): a host defers a few dozen of these
        deferred = (register, args, kwargs or None)
        lazy = self._lazy
        group = lazy.get(prefix)
        if group is None:
            lazy[prefix] = deferred
        elif isinstance(group, list):
            group.append(deferred)
        else:
            lazy[prefix] = [group, deferred]

    def _materialise(self, key: str, want: str | None = None) -> None:
        """Run the deferred registrations whose prefix *key* lies under, or that lie
        under the prefix *key* (for listings), the longest prefix first; stop once
        the entry *want* exists.

        A lookup first runs the groups that may hold *want* registering only
        *want* (``_only``), and leaves them deferred: reading
        ``net.ipv6.conf.all.disable_ipv6`` does not build the seventy other
        entries of the directory. Only if that finds nothing do the groups run
        in full (one of them may defer the group that holds it)."""
        if want is not None and self._lazy:
            self._only = want
            try:
                for prefix in sorted((p for p in self._lazy if key.startswith(p)), key=len)[::-1]:
                    for register, args, kwargs in _in_order(self._lazy[prefix]):
                        register(*args, **(kwargs or {}))
                    if want in self._entries:
                        self._early.add(want)
                        return
            finally:
                self._only = None
        while self._lazy:
            matching = [p for p in self._lazy if key.startswith(p) or p.startswith(key)]
            if not matching:
                return
            for register, args, kwargs in _in_order(self._lazy.pop(max(matching, key=len))):
                register(*args, **(kwargs or {}))
            if want is not None and want in self._entries:
                return

    def wanted(self, prefix: str, names: Collection[str]) -> Collection[str]:
        """Of the *names* a registration function would register under *prefix*
        (a name ending in "."), the ones to register now: all of them, or, while
        a lookup runs it for one entry (see :meth:`_materialise`), that entry's
        name alone if it is among them. Lets a function of many entries skip
        building the others' closures."""
        only = self._only
        if only is None:
            return names
        if only.startswith(prefix):
            leaf = only[len(prefix) :]
            if leaf in names:
                return (leaf,)
        return ()

    def register(
        self, name: str, get: Callable[[], str], setter: Callable[[str], None] | None = None
    ) -> None:
        """Add an entry (kernel: register_net_sysctl)."""
        if self._admit(name):
            self._entries[sys.intern(name)] = SysctlEntry(name, get, setter)

    def _admit(self, name: str) -> bool:
        """May *name* be registered now? (No if a deferred group runs for another
        name, or if a lookup registered it early; ValueError if it exists.)"""
        if self._only is not None:
            return name == self._only
        if name in self._entries:
            if name in self._early:
                self._early.discard(name)
                return False
            raise ValueError(f"sysctl {name} registered twice")
        return True

    def register_int(
        self,
        name: str,
        obj: Any,
        attr: str,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
        on_change: Callable[[int], None] | None = None,
    ) -> None:
        """An integer entry backed by ``obj.attr`` (kernel: proc_dointvec_minmax)."""
        if self._admit(name):
            name = sys.intern(name)  # the same names on every host: one string
            self._entries[name] = IntEntry(name, obj, attr, minimum, maximum, on_change)

    def register_str(
        self, name: str, obj: Any, attr: str, check: Callable[[str], bool] | None = None
    ) -> None:
        """A string entry backed by ``obj.attr``, validated by *check*."""

        def get() -> str:
            return str(getattr(obj, attr))

        def set_(text: str) -> None:
            text = text.strip()
            if check is not None and not check(text):
                raise invalid(name)
            setattr(obj, attr, text)

        self.register(name, get, set_)

    def unregister_prefix(self, prefix: str) -> None:
        """Remove every entry under *prefix* (a device going away)."""
        for lazy in [p for p in self._lazy if p.startswith(prefix)]:
            del self._lazy[lazy]
        for name in [n for n in self._entries if n.startswith(prefix)]:
            del self._entries[name]
            self._early.discard(name)

    def _lookup(self, name: str) -> SysctlEntry | IntEntry:
        key = _canonical(name)
        entry = self._entries.get(key)
        if entry is None and self._lazy:
            self._materialise(key + ".", key)
            entry = self._entries.get(key)
        if entry is None:
            path = key.replace(".", "/")
            raise ConfigError(
                f"sysctl: cannot stat /proc/sys/{path}: No such file or directory", errno.ENOENT
            )
        return entry

    def read(self, name: str) -> str:
        """The value as ``/proc/sys`` shows it."""
        return self._lookup(name).get()

    def write(self, name: str, value: str | int) -> None:
        """Set an entry (kernel: the proc handler's write path)."""
        entry = self._lookup(name)
        if entry.set is None:
            key = _canonical(name)
            raise ConfigError(f'sysctl: setting key "{key}": Permission denied', errno.EACCES)
        entry.set(str(value))

    def names(self, prefix: str = "") -> list[str]:
        """Every entry name under *prefix*, sorted as ``sysctl -a`` prints."""
        prefix = _canonical(prefix) if prefix else ""
        self._materialise(prefix)
        return sorted(n for n in self._entries if n == prefix or n.startswith(prefix))

    def __contains__(self, name: str) -> bool:
        key = _canonical(name)
        if key not in self._entries:
            self._materialise(key + ".", key)
        return key in self._entries
