"""tcpdump: options, filter expressions (a libpcap subset) and the packet printer.

Kernel/userland: tcpdump and libpcap (https://www.tcpdump.org).
"""
