"""iputils: ``ping`` (and ``ping6``) and ``arping``.

Userland: iputils (https://github.com/iputils/iputils).
"""
