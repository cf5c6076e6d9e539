"""traceroute: Debian's "modern traceroute for Linux" (Dmitry Butskoy), the one ``apt install
traceroute`` brings.

Userland: https://traceroute.sourceforge.net/ (traceroute 2.1).
"""
