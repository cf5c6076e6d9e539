"""``ip``: links, addresses, routes, neighbours and tunnels, as iproute2's ip/ directory.

:func:`~.ip.ip` is the whole tool: ``ip(net, "-s link show dev eth0")``; hosts
offer it as ``host.ip("…")``.
"""
