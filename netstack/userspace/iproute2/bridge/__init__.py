"""``bridge``: bridge ports, the forwarding database and bridge VLANs (iproute2 bridge/).

:func:`~.bridge.bridge` is the whole tool: ``bridge(net, "fdb show br br0")``;
hosts offer it as ``host.bridge("…")``, the shell as ``bridge``.
"""
