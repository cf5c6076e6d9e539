"""iputils: ``ping``.

Kernel/userland: iputils (https://github.com/iputils/iputils).
"""
