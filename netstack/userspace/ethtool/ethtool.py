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
import os
import shlex
from typing import TYPE_CHECKING, Final

import attrs

from netstack.core.features import NETIF_F_NEVER_CHANGE
from netstack.drivers.rss import (
    FLOW_TYPES,
    RXH_DISCARD,
    RXH_IP_DST,
    RXH_IP_SRC,
    RXH_L2DA,
    RXH_L3_PROTO,
    RXH_L4_B_0_1,
    RXH_L4_B_2_3,
    RXH_VLAN,
)
from netstack.errors import ConfigError
from netstack.sites import kernel

if TYPE_CHECKING:
    from netstack.core.net import Net
    from netstack.core.netdevice import NetDevice
    from netstack.userspace.process import Machine, Process

__all__ = ["NETDEV_FEATURES_STRINGS", "OFF_FLAG_DEF", "ethtool", "main"]

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

# ethtool: ethtool.c, args[] and show_usage(): the options netstack implements, in
# ethtool 6.1's order and words ("ethtool [ FLAGS ] OPTS DEVNAME\tHELP", then xhelp lines)
_HELP_ROWS: Final = (
    ("-c|--show-coalesce", "DEVNAME", "Show coalesce options", ""),
    ("-C|--coalesce", "DEVNAME", "Set coalesce options", "\t\t[rx-usecs N]\n\t\t[tx-usecs N]\n"),
    ("-k|--show-features|--show-offload", "DEVNAME",
     "Get state of protocol offload and other features", ""),
    ("-K|--features|--offload", "DEVNAME", "Set protocol offload and other features",
     "\t\tFEATURE on|off ...\n"),
    ("-n|-u|--show-nfc|--show-ntuple", "DEVNAME",
     "Show Rx network flow classification options or rules",
     "\t\t[ rx-flow-hash tcp4|udp4|ah4|esp4|sctp4|tcp6|udp6|ah6|esp6|sctp6 ]\n"),
    ("-N|-U|--config-nfc|--config-ntuple", "DEVNAME",
     "Configure Rx network flow classification options or rules",
     "\t\trx-flow-hash tcp4|udp4|ah4|esp4|sctp4|tcp6|udp6|ah6|esp6|sctp6 m|v|t|s|d|f|n|r...\n"),
    ("-x|--show-rxfh-indir|--show-rxfh", "DEVNAME",
     "Show Rx flow hash indirection table and/or RSS hash key", ""),
    ("-X|--set-rxfh-indir|--rxfh", "DEVNAME",
     "Set Rx flow hash indirection table and/or RSS hash key",
     "\t\t[ equal N | weight W0 W1 ... | default ]\n\t\t[ hkey %x:%x:%x:%x:%x:.... ]\n"),
    ("-S|--statistics", "DEVNAME", "Show adapter statistics", ""),
    ("-l|--show-channels", "DEVNAME", "Query Channels", ""),
    ("-L|--set-channels", "DEVNAME", "Set Channels",
     "\t\t[ rx N ]\n\t\t[ tx N ]\n\t\t[ other N ]\n\t\t[ combined N ]\n"),
    ("-h|--help", "\t", "Show this help", ""),
    ("--version", "\t", "Show version number", ""),
)  # fmt: skip
ETHTOOL_VERSION: Final = "ethtool version 6.1"
ETHTOOL_HELP: Final = (
    f"{ETHTOOL_VERSION}\nUsage:\n"
    + "".join(
        f"        ethtool [ FLAGS ] {opts} {dev}\t{text}\n{xhelp}"
        for opts, dev, text, xhelp in _HELP_ROWS
    )
    + "\nFLAGS:\n"
    "\t--debug MASK\tturn on debugging messages\n"
    "\t--json\t\tenable JSON output format (not supported by all commands)\n"
    "\t-I|--include-statistics\t\trequest device statistics related to the command "
    "(not supported by all commands)\n"
)


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
    from netstack.core.dev import netdev_update_features

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
    netdev_update_features(dev)  # ethnl_set_features()
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


_NO_DEVICE: Final = (
    "netlink error: no device matches name (offset 24)\nnetlink error: No such device"
)
_RXH_NAMES: Final = (
    (RXH_L2DA, "L2DA"),
    (RXH_VLAN, "VLAN tag"),
    (RXH_L3_PROTO, "L3 proto"),
    (RXH_IP_SRC, "IP SA"),
    (RXH_IP_DST, "IP DA"),
    (RXH_L4_B_0_1, "L4 bytes 0 & 1 [TCP/UDP src port]"),
    (RXH_L4_B_2_3, "L4 bytes 2 & 3 [TCP/UDP dst port]"),
)
_RXH_LETTERS: Final = {
    "m": RXH_L2DA,
    "v": RXH_VLAN,
    "t": RXH_L3_PROTO,
    "s": RXH_IP_SRC,
    "d": RXH_IP_DST,
    "f": RXH_L4_B_0_1,
    "n": RXH_L4_B_2_3,
}


def _netlink_error(msg: str, err: int) -> ConfigError:
    """A kernel extack message and errno, as ethtool's netlink code prints them."""
    text = f"netlink error: {msg}\n" if msg else ""
    return ConfigError(f"{text}netlink error: {os.strerror(err)}", err)


def _channel(v: int | None) -> str:
    return "n/a" if not v else str(v)


def dump_channels(dev: NetDevice) -> str:
    """``ethtool -l DEV``. ethtool: netlink/channels.c, channels_reply_cb()."""
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_channels:
        raise _netlink_error("", errno.EOPNOTSUPP)
    ch = ops.get_channels(dev)
    rows = (
        ("RX:\t\t", ch.max_rx, ch.rx_count),
        ("TX:\t\t", ch.max_tx, ch.tx_count),
        ("Other:\t\t", ch.max_other, ch.other_count),
        ("Combined:\t", ch.max_combined, ch.combined_count),
    )
    out = [f"Channel parameters for {dev.name}:\n", "Pre-set maximums:\n"]
    out += [f"{label}{_channel(mx)}\n" for label, mx, _ in rows]
    out.append("Current hardware settings:\n")
    # the kernel puts a count only next to a non-zero maximum
    out += [f"{label}{_channel(cur if mx else 0)}\n" for label, mx, cur in rows]
    return "".join(out)


@kernel("net/ethtool/channels.c", "ethnl_set_channels")
def set_channels(dev: NetDevice, words: list[str]) -> str:
    """``ethtool -L DEV [rx N] [tx N] [other N] [combined N]``.

    Kernel: net/ethtool/channels.c, ethnl_set_channels() (its checks and
    extack messages) → the driver's set_channels.
    """
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_channels:
        raise _netlink_error("", errno.EOPNOTSUPP)
    if not words or len(words) % 2:
        raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    cur = ops.get_channels(dev)
    req = {"rx": cur.rx_count, "tx": cur.tx_count, "other": cur.other_count}
    req["combined"] = cur.combined_count
    for key, value in zip(words[0::2], words[1::2], strict=True):
        if key not in req or not value.isdigit():
            raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
        req[key] = int(value)
    new = attrs.evolve(
        cur,
        rx_count=req["rx"],
        tx_count=req["tx"],
        other_count=req["other"],
        combined_count=req["combined"],
    )
    if new == cur:
        return ""
    if (
        new.rx_count > cur.max_rx
        or new.tx_count > cur.max_tx
        or new.other_count > cur.max_other
        or new.combined_count > cur.max_combined
    ):
        raise _netlink_error("requested channel count exceeds maximum", errno.EINVAL)
    if not new.combined_count and (not new.rx_count or not new.tx_count):
        raise _netlink_error(
            "requested channel counts would result in no RX or TX channel being configured",
            errno.EINVAL,
        )
    try:
        ops.set_channels(dev, new)
    except ConfigError as e:
        raise _netlink_error(str(e), e.errno or errno.EINVAL) from None
    return ""


def dump_rxfh(dev: NetDevice) -> str:
    """``ethtool -x DEV``. ethtool: netlink/rss.c, rss_reply_cb(); common.c, print_indir_table()."""
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_rxfh:
        raise _netlink_error("", errno.EOPNOTSUPP)
    indir, key = ops.get_rxfh(dev)
    n_rings = ops.get_channels(dev).rx_count if ops.supports_channels else 1
    out = [f"RX flow hash indirection table for {dev.name} with {n_rings} RX ring(s):\n"]
    for i, q in enumerate(indir):
        if i % 8 == 0:
            out.append(f"{i:5d}: ")
        out.append(f" {q:5d}")
        if i % 8 == 7 or i == len(indir) - 1:
            out.append("\n")
    out.append("RSS hash key:\n")
    out.append(":".join(f"{b:02x}" for b in key) + "\n")
    out.append("RSS hash function:\n    toeplitz: on\n    xor: off\n    crc32: off\n")
    out.append("RSS input transformation:\n    symmetric-xor: off\n")
    return "".join(out)


def set_rxfh(dev: NetDevice, words: list[str]) -> str:
    """``ethtool -X DEV equal N | weight W… | default | hkey XX:…``.

    ethtool: netlink/rss.c, nl_srss() (fill_indir: ``equal`` and ``weight``
    spread the table as ethtool does).
    """
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_rxfh:
        raise _netlink_error("", errno.EOPNOTSUPP)
    if not words:
        raise ConfigError("ethtool (-X): parameters missing", errno.EINVAL)
    indir_now, key_now = ops.get_rxfh(dev)
    size = len(indir_now)
    indir: list[int] | None = None
    key: bytes | None = None
    i = 0
    while i < len(words):
        w = words[i]
        if w == "default":
            indir = []
            i += 1
        elif w == "equal" and i + 1 < len(words) and words[i + 1].isdigit():
            n = int(words[i + 1])
            if n < 1:
                raise ConfigError("Invalid 'equal' value", errno.EINVAL)
            indir = [j % n for j in range(size)]
            i += 2
        elif w == "weight":
            j = i + 1
            weights: list[int] = []
            while j < len(words) and words[j].isdigit():
                weights.append(int(words[j]))
                j += 1
            if not weights:
                raise ConfigError("'weight' requires at least one value", errno.EINVAL)
            total = sum(weights)
            if not total:
                raise ConfigError("At least one weight must be non-zero", errno.EINVAL)
            if total > size:
                raise ConfigError(
                    "Total weight exceeds the size of the indirection table", errno.EINVAL
                )
            # ethtool.c, fill_indir_table()
            indir = []
            partial = 0
            ring = -1
            for j in range(size):
                while j >= size * partial // total:
                    ring += 1
                    partial += weights[ring]
                indir.append(ring)
            i += 1 + len(weights)
        elif w == "hkey" and i + 1 < len(words):
            try:
                key = bytes(int(x, 16) for x in words[i + 1].split(":"))
            except ValueError:
                raise ConfigError("Invalid RSS hash key format", errno.EINVAL) from None
            if len(key) != len(key_now):
                raise ConfigError(
                    f"Key is not of the expected size ({len(key_now)} bytes)", errno.EINVAL
                )
            i += 2
        else:
            raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    try:
        ops.set_rxfh(dev, indir, key)
    except ConfigError as e:
        raise _netlink_error(str(e), e.errno or errno.EINVAL) from None
    return ""


def dump_rxfh_fields(dev: NetDevice, flow: str) -> str:
    """``ethtool -n DEV rx-flow-hash FLOW``. ethtool: ethtool.c, dump_rxfhash()."""
    ops = dev.ethtool_ops
    if flow not in FLOW_TYPES:
        raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    if ops is None or not ops.supports_rxfh:
        raise ConfigError(
            "Cannot get RX network flow hashing options: Operation not supported",
            errno.EOPNOTSUPP,
        )
    fields = ops.get_rxfh_fields(dev, flow)
    out = [f"{FLOW_TYPES[flow]} flows use these fields for computing Hash flow key:\n"]
    if not fields:
        out.append("None\n")
    out += [f"{name}\n" for bit, name in _RXH_NAMES if fields & bit]
    return "".join(out)


def set_rxfh_fields(dev: NetDevice, words: list[str]) -> str:
    """``ethtool -N DEV rx-flow-hash FLOW sdfn``. ethtool: ethtool.c, do_srxclass()."""
    ops = dev.ethtool_ops
    if len(words) != 3 or words[0] != "rx-flow-hash" or words[1] not in FLOW_TYPES:
        raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    fields = 0
    for ch in words[2]:
        if ch == "r":  # RXH_DISCARD
            fields = RXH_DISCARD
            continue
        if ch not in _RXH_LETTERS:
            raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
        fields |= _RXH_LETTERS[ch]
    if ops is None or not ops.supports_rxfh:
        raise ConfigError(
            "Cannot change RX network flow hashing options: Operation not supported",
            errno.EOPNOTSUPP,
        )
    try:
        ops.set_rxfh_fields(dev, words[1], fields)
    except ConfigError as e:
        err = e.errno or errno.EINVAL
        raise ConfigError(
            f"Cannot change RX network flow hashing options: {os.strerror(err)}", err
        ) from None
    return ""


_COALESCE_LAYOUT: Final = (
    ("stats-block-usecs", "\t"),
    ("sample-interval", "\t"),
    ("pkt-rate-low", "\t\t"),
    ("pkt-rate-high", "\t\t"),
    None,
    ("rx-usecs", "\t"),
    ("rx-frames", "\t"),
    ("rx-usecs-irq", "\t"),
    ("rx-frames-irq", "\t"),
    None,
    ("tx-usecs", "\t"),
    ("tx-frames", "\t"),
    ("tx-usecs-irq", "\t"),
    ("tx-frames-irq", "\t"),
    None,
    ("rx-usecs-low", "\t"),
    ("rx-frame-low", "\t"),
    ("tx-usecs-low", "\t"),
    ("tx-frame-low", "\t"),
    None,
    ("rx-usecs-high", "\t"),
    ("rx-frame-high", "\t"),
    ("tx-usecs-high", "\t"),
    ("tx-frame-high", "\t"),
    None,
)


def dump_coalesce(dev: NetDevice) -> str:
    """``ethtool -c DEV``. ethtool: netlink/coalesce.c, coalesce_reply_cb()."""
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_coalesce:
        raise _netlink_error("", errno.EOPNOTSUPP)
    have = ops.get_coalesce(dev)
    out = [f"Coalesce parameters for {dev.name}:\n", "Adaptive RX: n/a  TX: n/a\n"]
    for item in _COALESCE_LAYOUT:
        if item is None:
            out.append("\n")
            continue
        name, tabs = item
        value = have.get(name)
        out.append(f"{name}:{tabs}{'n/a' if value is None else value}\n")
    out.append("CQE mode RX: n/a  TX: n/a\n")
    return "".join(out)


@kernel("net/ethtool/coalesce.c")
def set_coalesce(dev: NetDevice, words: list[str]) -> str:
    """``ethtool -C DEV rx-usecs N [tx-usecs N]``. Kernel: net/ethtool/coalesce.c."""
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_coalesce:
        raise _netlink_error("", errno.EOPNOTSUPP)
    if not words or len(words) % 2:
        raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
    known = {name for item in _COALESCE_LAYOUT if item is not None for name in item[:1]}
    values: dict[str, int] = {}
    for key, value in zip(words[0::2], words[1::2], strict=True):
        if key not in known or not value.isdigit():
            raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
        values[key] = int(value)
    have = ops.get_coalesce(dev)
    if any(k not in have for k in values):  # ethnl_set_coalesce(): unsupported parameter
        raise _netlink_error("", errno.EOPNOTSUPP)
    try:
        ops.set_coalesce(dev, values)
    except ConfigError as e:
        raise _netlink_error(str(e), e.errno or errno.EINVAL) from None
    return ""


def dump_stats(dev: NetDevice) -> str:
    """``ethtool -S DEV``. ethtool: ethtool.c, do_gnicstats() / dump_nic_stats()."""
    ops = dev.ethtool_ops
    if ops is None or not ops.supports_stats:
        raise ConfigError("no stats available", errno.EOPNOTSUPP)
    rows = ops.get_ethtool_stats(dev)
    return "NIC statistics:\n" + "".join(f"     {name}: {value}\n" for name, value in rows)


def ethtool(net: Net, command: str) -> str:
    """Run ``ethtool OPTION DEV …`` on *net*; return what it prints.

    Options: ``-k/-K`` (features), ``-l/-L`` (channels), ``-x/-X`` (RSS
    indirection table and key), ``-n/-N DEV rx-flow-hash FLOW [sdfn]``
    (hashed fields), ``-S`` (driver statistics), ``-c/-C`` (interrupt coalescing),
    ``-h``/``--help`` (the usage, as ``show_usage()`` prints it) and ``--version``.

    Raises:
        ConfigError: with ethtool's message (an unknown device: "Cannot get
            device feature settings: No such device" style text).
    """
    argv = shlex.split(command)
    if argv[:1] in (["-h"], ["--help"]):  # ethtool.c: show_usage(), exit status 0
        return ETHTOOL_HELP
    if argv[:1] == ["--version"]:
        return ETHTOOL_VERSION + "\n"
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
    if dev is None:
        raise ConfigError(_NO_DEVICE, errno.ENODEV)
    if opt in ("-l", "--show-channels"):
        return dump_channels(dev)
    if opt in ("-L", "--set-channels"):
        return set_channels(dev, rest)
    if opt in ("-x", "--show-rxfh-indir", "--show-rxfh"):
        return dump_rxfh(dev)
    if opt in ("-X", "--set-rxfh-indir", "--rxfh"):
        return set_rxfh(dev, rest)
    if opt in ("-n", "-u", "--show-nfc", "--show-ntuple"):
        if len(rest) != 2 or rest[0] != "rx-flow-hash":
            raise ConfigError(ETHTOOL_USAGE, errno.EINVAL)
        return dump_rxfh_fields(dev, rest[1])
    if opt in ("-N", "-U", "--config-nfc", "--config-ntuple"):
        return set_rxfh_fields(dev, rest)
    if opt in ("-S", "--statistics"):
        return dump_stats(dev)
    if opt in ("-c", "--show-coalesce"):
        return dump_coalesce(dev)
    if opt in ("-C", "--coalesce"):
        return set_coalesce(dev, rest)
    raise ConfigError(f'netstack: "ethtool {opt}" is not supported', errno.EOPNOTSUPP)


async def main(proc: Process, host: Machine, argv: list[str]) -> int:
    """The ``ethtool`` command: run *argv* on *host*'s kernel and print what ethtool prints."""
    text = ethtool(host.net, shlex.join(argv))
    if text:
        proc.out(text.rstrip("\n"))
    return 0
