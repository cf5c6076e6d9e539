"""``ethtool -k`` / ``-K``: a device's offload features, as ethtool prints them.

Theory of operation: the kernel reports four feature bitmaps — ``hw``
(``dev->hw_features``: what ethtool may toggle), ``wanted``
(``dev->wanted_features``), ``active`` (``dev->features``) and ``nochange``
(``NETIF_F_NEVER_CHANGE``: LLTX, netns-local, vlan-challenged) — and the names
of the bits (``netdev_features_strings``). ethtool prints the legacy
groups first (``tx-checksumming``, ``scatter-gather``…; a group of one
feature is printed under the group's name), then every other named feature
in bit order: ``name: on|off`` plus `` [fixed]`` when it cannot change, or
`` [requested on|off]`` when active and wanted differ.

``-K DEV NAME on|off …`` changes ``wanted_features`` within ``hw_features``
and re-runs ``netdev_update_features``; a request that changes nothing prints
"Could not change any device features" (the ioctl-era ethtool's answer), one
that changes only part prints the "Actual changes:".

ethtool: netlink/features.c (dump_features), common.c (off_flag_def),
ethtool.c (do_sfeatures). Kernel: net/ethtool/common.c
(netdev_features_strings), net/core/dev.c (netdev_update_features).
"""

from __future__ import annotations

import errno
import shlex
from typing import TYPE_CHECKING, Final

from netstack.core.features import NETIF_F_NEVER_CHANGE
from netstack.errors import ConfigError

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice

__all__ = ["NETDEV_FEATURES_STRINGS", "OFF_FLAG_DEF", "ethtool"]

# net/ethtool/common.c, netdev_features_strings[] (6.1), by bit; "" = unnamed bit
NETDEV_FEATURES_STRINGS: Final = (
    "tx-scatter-gather",
    "tx-checksum-ipv4",
    "",
    "tx-checksum-ip-generic",
    "tx-checksum-ipv6",
    "highdma",
    "tx-scatter-gather-fraglist",
    "tx-vlan-hw-insert",
    "rx-vlan-hw-parse",
    "rx-vlan-filter",
    "vlan-challenged",
    "tx-generic-segmentation",
    "tx-lockless",
    "netns-local",
    "rx-gro",
    "rx-lro",
    "tx-tcp-segmentation",
    "tx-gso-robust",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp6-segmentation",
    "tx-fcoe-segmentation",
    "tx-gre-segmentation",
    "tx-gre-csum-segmentation",
    "tx-ipxip4-segmentation",
    "tx-ipxip6-segmentation",
    "tx-udp_tnl-segmentation",
    "tx-udp_tnl-csum-segmentation",
    "tx-gso-partial",
    "tx-tunnel-remcsum-segmentation",
    "tx-sctp-segmentation",
    "tx-esp-segmentation",
    "",  # NETIF_F_GSO_UDP (UFO): no name since its removal
    "tx-udp-segmentation",
    "tx-gso-list",
    "tx-checksum-fcoe-crc",
    "tx-checksum-sctp",
    "fcoe-mtu",
    "rx-ntuple-filter",
    "rx-hashing",
    "rx-checksum",
    "tx-nocache-copy",
    "loopback",
    "rx-fcs",
    "rx-all",
    "tx-vlan-stag-hw-insert",
    "rx-vlan-stag-hw-parse",
    "rx-vlan-stag-filter",
    "l2-fwd-offload",
    "hw-tc-offload",
    "esp-hw-offload",
    "esp-tx-csum-hw-offload",
    "rx-udp_tunnel-port-offload",
    "tls-hw-tx-offload",
    "tls-hw-rx-offload",
    "rx-gro-hw",
    "tls-hw-record",
    "rx-gro-list",
    "macsec-hw-offload",
    "rx-udp-gro-forwarding",
    "hsr-tag-ins-offload",
    "hsr-tag-rm-offload",
    "hsr-fwd-offload",
    "hsr-dup-offload",
)

# ethtool common.c, off_flag_def[]: (short name, long name, kernel-name pattern)
OFF_FLAG_DEF: Final = (
    ("rx", "rx-checksumming", "rx-checksum"),
    ("tx", "tx-checksumming", "tx-checksum-*"),
    ("sg", "scatter-gather", "tx-scatter-gather*"),
    ("tso", "tcp-segmentation-offload", "tx-tcp*-segmentation"),
    ("ufo", "udp-fragmentation-offload", "tx-udp-fragmentation"),
    ("gso", "generic-segmentation-offload", "tx-generic-segmentation"),
    ("gro", "generic-receive-offload", "rx-gro"),
    ("lro", "large-receive-offload", "rx-lro"),
    ("rxvlan", "rx-vlan-offload", "rx-vlan-hw-parse"),
    ("txvlan", "tx-vlan-offload", "tx-vlan-hw-insert"),
    ("ntuple", "ntuple-filters", "rx-ntuple-filter"),
    ("rxhash", "receive-hashing", "rx-hashing"),
)

ETHTOOL_USAGE: Final = "ethtool: bad command line argument(s)\nFor more information run ethtool -h"


def flag_pattern_match(name: str, pattern: str) -> bool:
    """ethtool: netlink/features.c, flag_pattern_match() (one asterisk at most)."""
    star = pattern.find("*")
    if star >= 0:
        head, tail = pattern[:star], pattern[star + 1 :]
        return len(name) + 1 >= len(pattern) and name.startswith(head) and name.endswith(tail)
    return name == pattern


def _state(dev: NetDevice) -> tuple[int, int, int, int]:
    return dev.hw_features, dev.wanted_features, dev.features, NETIF_F_NEVER_CHANGE


def _feature_line(dev: NetDevice, bit: int, name: str, prefix: str) -> str:
    """ethtool: netlink/features.c, dump_feature()."""
    hw, wanted, active, nochange = _state(dev)
    mask = 1 << bit
    suffix = ""
    if not hw & mask or nochange & mask:
        suffix = " [fixed]"
    elif (active & mask) != (wanted & mask):
        suffix = " [requested on]" if wanted & mask else " [requested off]"
    return f"{prefix}{name}: {'on' if active & mask else 'off'}{suffix}\n"


def dump_features(dev: NetDevice) -> str:
    """``ethtool -k DEV``. ethtool: netlink/features.c, features_reply_cb() + dump_features()."""
    names = NETDEV_FEATURES_STRINGS
    flag_of: list[int] = []
    for name in names:
        idx = -1
        if name:
            for j, (_, _, pattern) in enumerate(OFF_FLAG_DEF):
                if flag_pattern_match(name, pattern):
                    idx = j
                    break
        flag_of.append(idx)
    active = dev.features
    out = [f"Features for {dev.name}:\n"]
    for i, (short, long_name, _) in enumerate(OFF_FLAG_DEF):
        if short == "ufo":  # no kernel with the netlink interface supports UFO
            continue
        bits = [b for b, f in enumerate(flag_of) if f == i]
        if len(bits) != 1:
            value = any(active & (1 << b) for b in bits)
            out.append(f"{long_name}: {'on' if value else 'off'}\n")
        for b in bits:
            if len(bits) == 1:
                out.append(_feature_line(dev, b, long_name, ""))
            else:
                out.append(_feature_line(dev, b, names[b], "\t"))
    for b, name in enumerate(names):
        if name and flag_of[b] < 0:
            out.append(_feature_line(dev, b, name, ""))
    return "".join(out)


def _set_features(dev: NetDevice, words: list[str]) -> str:
    """``ethtool -K DEV NAME on|off …``. ethtool: ethtool.c, do_sfeatures()."""
    from netstack.core.dev import netdev_fix_features

    names = NETDEV_FEATURES_STRINGS
    req_mask = 0
    req_value = 0
    if not words or len(words) % 2:
        raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    for key, value in zip(words[0::2], words[1::2], strict=True):
        if value not in ("on", "off"):
            raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
        bits: list[int] = []
        for short, long_name, pattern in OFF_FLAG_DEF:
            if key in (short, long_name):
                bits = [b for b, n in enumerate(names) if n and flag_pattern_match(n, pattern)]
                break
        else:
            if key in names:
                bits = [names.index(key)]
            else:
                raise ConfigError(
                    "ethtool: bad command line argument(s)\nFor more information run ethtool -h",
                    errno.EINVAL,
                )
        for b in bits:
            req_mask |= 1 << b
            if value == "on":
                req_value |= 1 << b
    if req_mask & NETIF_F_NEVER_CHANGE:
        raise ConfigError("Cannot set device feature settings: Invalid argument", errno.EINVAL)
    old_active = dev.features
    hw = dev.hw_features
    wanted = (dev.wanted_features & ~(req_mask & hw)) | (req_value & req_mask & hw)
    dev.wanted_features = wanted
    # __netdev_update_features(): features that may change follow wanted, then the fix-ups
    dev.features = netdev_fix_features(dev, (dev.features & ~hw) | (wanted & hw))
    new_active = dev.features
    mismatch = [
        b
        for b in range(len(names))
        if req_mask >> b & 1 and (req_value >> b & 1) != (new_active >> b & 1)
    ]
    changed = [b for b in range(len(names)) if (old_active ^ new_active) >> b & 1]
    if not mismatch:
        return ""
    if not changed:
        raise ConfigError("Could not change any device features", errno.EINVAL)
    return "Actual changes:\n" + _dump_changes(dev, old_active)


def _dump_changes(dev: NetDevice, old_active: int) -> str:
    """What changed, grouped as ``-k`` groups it. ethtool: ethtool.c, dump_features(ref)."""
    names = NETDEV_FEATURES_STRINGS
    new = dev.features
    diff = old_active ^ new
    out: list[str] = []
    placed: set[int] = set()
    for short, long_name, pattern in OFF_FLAG_DEF:
        bits = [b for b, n in enumerate(names) if n and flag_pattern_match(n, pattern)]
        placed.update(bits)
        if not bits or short == "ufo":
            continue
        mask = sum(1 << b for b in bits)
        indent = ""
        if bool(old_active & mask) != bool(new & mask):
            out.append(f"{long_name}: {'on' if new & mask else 'off'}\n")
            indent = "\t"
        if len(bits) == 1:
            continue
        out.extend(_feature_line(dev, b, names[b], indent) for b in bits if diff >> b & 1)
    for b, name in enumerate(names):
        if name and b not in placed and diff >> b & 1:
            out.append(_feature_line(dev, b, name, ""))
    return "".join(out)


def ethtool(net: Net, command: str) -> str:
    """Run ``ethtool -k DEV`` or ``ethtool -K DEV …`` on *net*; return what it prints.

    Raises:
        ConfigError: with ethtool's message (an unknown device: "Cannot get
            device feature settings: No such device" style text).
    """
    argv = shlex.split(command)
    if len(argv) < 2:
        raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    opt, devname, rest = argv[0], argv[1], argv[2:]
    dev = net.dev_get_by_name(devname)
    if opt in ("-k", "--show-features", "--show-offload"):
        if rest:
            raise ConfigError(f"ethtool: unexpected parameter '{rest[0]}'", errno.EINVAL)
        if dev is None:
            raise ConfigError(
                "netlink error: no device matches name (offset 24)\nnetlink error: No such device",
                errno.ENODEV,
            )
        return dump_features(dev)
    if opt in ("-K", "--features", "--offload"):
        if dev is None:
            raise ConfigError(
                "netlink error: no device matches name (offset 24)\nnetlink error: No such device",
                errno.ENODEV,
            )
        return _set_features(dev, rest)
    raise ConfigError(f'netstack: "ethtool {opt}" is not supported', errno.EOPNOTSUPP)
