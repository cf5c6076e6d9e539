"""procps: ``sysctl`` over ``/proc/sys``.

Kernel/userland: procps-ng (https://gitlab.com/procps-ng/procps).
"""
