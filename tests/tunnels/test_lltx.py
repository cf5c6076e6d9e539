"""NETIF_F_LLTX on tunnels, by device, creation path and seed patch — and what it changes.

The table is the kernel's history (seeds 1 and 3, kernel-reference §1.4, §5.4):
IPIP and SIT set LLTX in setup, whatever the path; GRE sets it in
``ipgre_newlink`` since "ip_gre: lockless xmit" (2010) and in
``ipgre_tunnel_locate`` (``ip tunnel add``) only since "fix ip_gre lockless
xmits" (2012); never with output sequencing (``oseq``).
"""

from __future__ import annotations

from typing import Final

import pytest
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.core.features import NETIF_F_LLTX

ON: Final = netstack.Patches()
OFF: Final = netstack.Patches.before("gre_lltx", "gre_lltx_ioctl")
FIX_ONLY_REVERTED: Final = netstack.Patches.before("gre_lltx_ioctl")
# SG | HW_CSUM | HIGHDMA | FRAGLIST | GSO | TSO (16), and the legacy positions of
# TSO_ECN (19), TSO6 (20) and UDP segmentation (17): IPIP_FEATURES + GSO. A 2012
# kernel's IPIP device had none of them: seed 3 read 0x7000 (the LLTX bit is
# what the seed is about, and it is the same).
IPIP_FEATURES_WORD: Final = 0x1B0869
# ip_gre.c's GRE_FEATURES (SG | FRAGLIST | HIGHDMA | HW_CSUM, 3.8+) and GSO: the same
# word; with output sequencing no software GSO types ("TCP offload with GRE SEQ is
# not supported"), so 0x869. The 2012 kernels of seed 3 had none of them either.
GRE_FEATURES_WORD: Final = 0x1B0869
GRE_OSEQ_FEATURES_WORD: Final = 0x869
FEATURES_WORD: Final = {
    "gre": GRE_FEATURES_WORD,
    "gre oseq": GRE_OSEQ_FEATURES_WORD,
    "ipip": IPIP_FEATURES_WORD,
    "sit": IPIP_FEATURES_WORD,
}

LINK: Final = {
    "gre": "link add t1 type gre remote 192.0.2.2 local 192.0.2.1",
    "gre oseq": "link add t1 type gre remote 192.0.2.2 local 192.0.2.1 oseq",
    "ipip": "link add t1 type ipip remote 192.0.2.2 local 192.0.2.1",
    "sit": "link add t1 type sit remote 192.0.2.2 local 192.0.2.1",
}
TUNNEL: Final = {
    "gre": "tunnel add t1 mode gre remote 192.0.2.2 local 192.0.2.1",
    "gre oseq": "tunnel add t1 mode gre remote 192.0.2.2 local 192.0.2.1 oseq",
    "ipip": "tunnel add t1 mode ipip remote 192.0.2.2 local 192.0.2.1",
    "sit": "tunnel add t1 mode sit remote 192.0.2.2 local 192.0.2.1",
}

# (device, path, patches) -> LLTX, from the kernel's history
TABLE: Final = [
    ("gre", "link", ON, True),
    ("gre", "link", OFF, False),
    ("gre", "tunnel", ON, True),
    ("gre", "tunnel", FIX_ONLY_REVERTED, False),  # the 2.6.37–3.2 kernels of seed 3's report
    ("gre", "tunnel", OFF, False),
    ("gre oseq", "link", ON, False),
    ("gre oseq", "link", OFF, False),
    ("gre oseq", "tunnel", ON, False),
    ("gre oseq", "tunnel", OFF, False),
    ("ipip", "link", ON, True),
    ("ipip", "link", OFF, True),
    ("ipip", "tunnel", ON, True),
    ("ipip", "tunnel", OFF, True),
    ("sit", "link", ON, True),
    ("sit", "link", OFF, True),
    ("sit", "tunnel", ON, True),
    ("sit", "tunnel", OFF, True),
]


def _param(dev: str, path: str, patches: netstack.Patches, lltx: bool) -> object:
    name = "on" if patches == ON else "off" if patches == OFF else "fix-reverted"
    return pytest.param(dev, path, patches, lltx, id=f"{dev}-{path}-{name}")


@pytest.mark.parametrize(("dev", "path", "patches", "lltx"), [_param(*row) for row in TABLE])
async def test_lltx_table(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    dev: str,
    path: str,
    patches: netstack.Patches,
    lltx: bool,
) -> None:
    h = lab.add_host("h", patches=patches, sysctls=IPV4_ONLY)
    h.ip((LINK if path == "link" else TUNNEL)[dev])
    t1 = h.dev("t1")
    assert bool(t1.features & NETIF_F_LLTX) is lltx
    assert t1.lltx is lltx
    expected = "tx-lockless: on [fixed]" if lltx else "tx-lockless: off [fixed]"
    assert expected in h.ethtool("-k t1").splitlines()
    # the 2.6.3x sysfs word: NETNS_LOCAL | GRO, plus LLTX; and the devices' own
    # features of later kernels: ipip.c's IPIP_FEATURES / sit.c's SIT_FEATURES
    # (3.10), ip_gre.c's GRE_FEATURES (3.8)
    word = (0x7000 if lltx else 0x6000) | FEATURES_WORD[dev]
    assert h.sysfs("class/net/t1/features") == f"{word:#x}\n"


async def test_the_seed_3_report(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    """`cat /sys/class/net/test0/features`: 0x6000 with mode gre, 0x7000 with mode ipip
    (and here the GSO and checksum bits GRE devices have had since 3.8, IPIP devices
    since 3.10)."""
    before = lab.add_host("before", patches=FIX_ONLY_REVERTED, sysctls=IPV4_ONLY)
    after = lab.add_host("after", sysctls=IPV4_ONLY)
    for h in (before, after):
        h.ip("tunnel add test0 mode gre remote 10.5.1.1 dev lo")
        h.ip("tunnel add test1 mode ipip remote 10.5.1.1 dev lo")
    assert before.sysfs("class/net/test0/features") == f"{0x6000 | GRE_FEATURES_WORD:#x}\n"
    assert before.sysfs("class/net/test1/features") == f"{0x7000 | IPIP_FEATURES_WORD:#x}\n"
    assert after.sysfs("class/net/test0/features") == f"{0x7000 | GRE_FEATURES_WORD:#x}\n"
    # the fallback devices: gre0 never had LLTX in this code (§1.4), tunl0 always
    assert after.sysfs("class/net/gre0/features") == f"{0x6000 | GRE_FEATURES_WORD:#x}\n"
    assert after.sysfs("class/net/tunl0/features") == f"{0x7000 | IPIP_FEATURES_WORD:#x}\n"


async def test_ethtool_k_of_a_tunnel(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    h.ip("link add gre1 type gre remote 192.0.2.2")
    out = h.ethtool("-k gre1").splitlines()
    assert out[0] == "Features for gre1:"
    # GRE_FEATURES (3.8+): a checksum left to do passes through, scatter-gather,
    # and without output sequencing the software GSO types
    assert out[1:5] == [
        "rx-checksumming: off [fixed]",
        "tx-checksumming: on",
        "\ttx-checksum-ipv4: off [fixed]",
        "\ttx-checksum-ip-generic: on",
    ]
    assert "scatter-gather: on" in out
    assert "tcp-segmentation-offload: on" in out
    assert "generic-segmentation-offload: on" in out
    assert "highdma: on" in out
    assert "generic-receive-offload: on" in out
    assert "netns-local: on [fixed]" in out
    assert "tx-nocache-copy: off" in out
    assert out.index("tx-lockless: on [fixed]") == out.index("vlan-challenged: off [fixed]") + 1


async def test_ethtool_K(lab: netstack.Lab, autojump_clock: trio.testing.MockClock) -> None:
    h = lab.add_host("h", sysctls=IPV4_ONLY)
    h.ip("link add gre1 type gre remote 192.0.2.2")
    h.ip("link add gre2 type gre remote 192.0.2.3 oseq")
    assert h.ethtool("-K gre1 gro off") == ""
    assert "generic-receive-offload: off" in h.ethtool("-k gre1").splitlines()
    # output sequencing: no TSO in hw_features ("TCP offload with GRE SEQ is not supported")
    assert "tcp-segmentation-offload: off" in h.ethtool("-k gre2").splitlines()
    with pytest.raises(netstack.ConfigError, match="Could not change any device features"):
        h.ethtool("-K gre2 tso on")
    assert h.ethtool("-K gre1 tx off") == ""
    assert "tx-checksumming: off" in h.ethtool("-k gre1").splitlines()
    with pytest.raises(netstack.ConfigError, match="Cannot set device feature settings"):
        h.ethtool("-K gre1 tx-lockless off")
    with pytest.raises(netstack.ConfigError, match="No such device"):
        h.ethtool("-k nope0")


async def _gre_pair(lab: netstack.Lab, patches: netstack.Patches, how: str) -> netstack.Host:
    a, b = (
        lab.add_host("a", patches=patches, sysctls=IPV4_ONLY),
        lab.add_host("b", sysctls=IPV4_ONLY),
    )
    lab.add_link("a:eth0", "b:eth0")
    a.ip("addr add 192.0.2.1/24 dev eth0")
    b.ip("addr add 192.0.2.2/24 dev eth0")
    if how == "link":
        a.ip("link add gre1 type gre remote 192.0.2.2 local 192.0.2.1")
    else:
        a.ip("tunnel add gre1 mode gre remote 192.0.2.2 local 192.0.2.1")
    b.ip("link add gre1 type gre remote 192.0.2.1 local 192.0.2.2")
    for h, addr in ((a, "10.9.0.1/30"), (b, "10.9.0.2/30")):
        h.ip("link set gre1 up")
        h.ip(f"addr add {addr} dev gre1")
    return a


@pytest.mark.parametrize(
    ("patches", "how", "locked"),
    [
        (ON, "link", False),
        (ON, "tunnel", False),
        (FIX_ONLY_REVERTED, "tunnel", True),
        (OFF, "link", True),
    ],
    ids=["newlink-lltx", "ioctl-fixed", "ioctl-before-fix", "newlink-before-seed1"],
)
async def test_hard_tx_lock_on_the_tunnel_queue(
    lab: netstack.Lab,
    autojump_clock: trio.testing.MockClock,
    patches: netstack.Patches,
    how: str,
    locked: bool,
) -> None:
    """Without LLTX every packet through the tunnel takes its tx queue's _xmit_lock."""
    a = await _gre_pair(lab, patches, how)
    result = await a.ping("10.9.0.2", count=3, interval=0.01)
    assert result.received == 3
    lock = a.dev("gre1").tx_queues[0]._xmit_lock
    if locked:
        assert lock.acquisitions == 3
    else:
        assert lock.acquisitions == 0
    assert lock.owner == -1 and a.dev("gre1").tx_queues[0].xmit_lock_owner == -1
