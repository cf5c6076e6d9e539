"""Packet formats: constants, ``struct`` layouts, parse/pack, checksums.

Theory of operation: one module per protocol, as smoltcp's ``wire`` and the
kernel's uapi headers. Each header has a precompiled :class:`struct.Struct`
(used directly on the data path: ``unpack_from(buf, off)`` / ``pack_into``),
a ``NamedTuple`` record for readable code and tests (the smoltcp "Repr"), and
``parse``/``pack_into`` helpers. Addresses are ``int`` (IPv4) or ``bytes``
(MAC). This package is pure: no trio, no structlog, no dpkt, no state.
"""
