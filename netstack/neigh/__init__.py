"""The neighbour subsystem: a generic table, the NUD state machine, hh_cache.

``nud`` is the pure, table-driven state machine (no I/O, time passed in);
``neighbour`` is the glue that owns entries, timers, queues and output
functions, shared by ARP (IPv4) and, later, neighbour discovery (IPv6).
"""
