"""``ethtool -K``: the features a driver turned off by itself stay off.

veth starts with GRO off and not wanted (``veth_disable_gro`` clears both
``features`` and ``wanted_features``), so ``ethtool -k`` prints a plain
``off`` and a later ``ethtool -K DEV tso off gso off`` — which recomputes
every feature from ``wanted_features`` (``__netdev_update_features``) —
leaves GRO off, as Linux 6.x does. Only ``gro on`` turns it on.
"""

from __future__ import annotations

from netstack.core.features import NETIF_F_GRO, NETIF_F_GSO, NETIF_F_TSO
from netstack.host import Lab


def _line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(name))


async def test_tso_gso_off_leaves_veth_gro_off(lab: Lab) -> None:
    a = lab.add_host("a")
    lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="veth")
    dev = a.dev("eth0")
    out = a.ethtool("-k eth0")
    assert _line(out, "generic-receive-offload") == "generic-receive-offload: off"
    assert not dev.wanted_features & NETIF_F_GRO
    assert a.ethtool("-K eth0 tso off gso off") == ""
    assert not dev.features & (NETIF_F_TSO | NETIF_F_GSO)
    assert not dev.features & NETIF_F_GRO
    out = a.ethtool("-k eth0")
    assert _line(out, "generic-receive-offload") == "generic-receive-offload: off"
    assert _line(out, "generic-segmentation-offload") == "generic-segmentation-offload: off"
    # asked for, GRO comes on, and stays on through another change
    assert a.ethtool("-K eth0 gro on") == ""
    assert a.ethtool("-K eth0 gso on") == ""
    assert dev.features & NETIF_F_GRO
    assert _line(a.ethtool("-k eth0"), "generic-receive-offload") == "generic-receive-offload: on"


async def test_tso_gso_off_leaves_nic_gro_as_it_was(lab: Lab) -> None:
    a = lab.add_host("a")
    lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    dev = a.dev("eth0")
    assert a.ethtool("-K eth0 gro off") == ""
    assert a.ethtool("-K eth0 tso off gso off") == ""
    assert not dev.features & NETIF_F_GRO
