"""ethtool: device features, coalescing, channels, RSS and statistics.

Kernel/userland: ethtool (https://git.kernel.org/pub/scm/network/ethtool/ethtool.git).
"""
