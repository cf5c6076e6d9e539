"""User-space tools over the emulated kernel: ``ip``, ``sysctl``, ``ping``.

Like the real tools, these only talk to the kernel (a :class:`~netstack.core.net.Net`
and its families), never to a lab; the host layer offers them as
``host.ip("…")``, ``host.sysctl("…")`` and ``await host.ping(…)``. Errors are
:class:`~netstack.errors.ConfigError` carrying the tool's own message.
"""
