"""netcat: ``nc``, OpenBSD's netcat as Debian packages it (netcat-openbsd).

Userland: https://salsa.debian.org/debian/netcat-openbsd (netcat.c).
"""
