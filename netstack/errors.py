"""Exceptions netstack raises, and the rule for when it raises them.

Theory of operation: bad *packets* are never raised, they are counted and
dropped (``kfree_skb(skb, reason)``). Exceptions are for misuse of the API:

* :class:`ConfigError` — a configuration request the kernel or iproute2 would
  refuse. ``str(err)`` is the exact text iproute2/tc/sysctl prints, so a front
  end can show it unchanged (``RTNETLINK answers: File exists``).
* :class:`TopologyError` — a lab wiring mistake (unknown host, a device
  plugged twice).
* :class:`SkbPanic` — an internal invariant broke (kernel: ``BUG()``/
  ``skb_under_panic``). Never caught by netstack itself.
* Sockets raise plain ``OSError(errno, strerror)`` as the real socket API does.
"""

from __future__ import annotations

import errno as _errno
import os

from netstack.sites import kernel

__all__ = ["ConfigError", "NetstackError", "SkbPanic", "TopologyError", "oserror"]


class NetstackError(Exception):
    """Base class of every exception netstack defines."""


class ConfigError(NetstackError, ValueError):
    """A configuration request was refused; the message is the tool's own text.

    Attributes:
        errno: the errno the kernel returned, when one applies (else ``None``).
    """

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class TopologyError(NetstackError, ValueError):
    """A lab was wired wrongly: unknown host, unknown device, a port used twice."""


@kernel("net/core/skbuff.c", "skb_panic")
class SkbPanic(NetstackError, RuntimeError):
    """An skb invariant broke: a bug in netstack, never a bad packet.

    Kernel: net/core/skbuff.c, skb_panic().
    """


def oserror(code: int) -> OSError:
    """Return ``OSError(code, strerror(code))`` as the socket API raises it."""
    return OSError(code, os.strerror(code))


# Re-exported for callers that want ``errors.errno.EINVAL`` without a second import.
errno = _errno
