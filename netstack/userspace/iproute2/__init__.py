"""iproute2: ``ip`` (:mod:`.ip`), ``tc`` (:mod:`.tc`), ``ss`` and ``nstat``.

Like the real tools, these only talk to the kernel (a :class:`~netstack.core.net.Net`
and its families), never to a lab; the host layer offers them as
``host.ip("…")``, ``host.tc("…")`` and ``host.ss("…")``. Errors are
:class:`~netstack.errors.ConfigError` carrying the tool's own message.

Kernel/userland: iproute2 (https://git.kernel.org/pub/scm/network/iproute2/iproute2.git).
"""
