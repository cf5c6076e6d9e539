"""coreutils: ``cat`` over the files the kernel exposes (``/proc/sys``, ``/proc/net``, ``/sys``).

Kernel/userland: GNU coreutils (https://www.gnu.org/software/coreutils/).
"""
