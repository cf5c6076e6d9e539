"""The Linux bridge (net/bridge): a software switch between Ethernet devices.

Theory of operation: nothing is loaded when a host boots; the host registers
the ``bridge`` module (and ``stp``, ``llc`` it depends on) as loadable
(:func:`register_bridge_modules`). The first ``ip link add … type bridge``
asks for ``rtnl-link-bridge``: the module's per-Net init registers the
``bridge`` link kind, the netdevice notifier that watches ports, and
``br_stp_rcv`` as the STP protocol behind LLC SAP 0x42.

Modules: :mod:`.br_device` (the device and its ops), :mod:`.br_if` (ports),
:mod:`.br_input` (``br_handle_frame``), :mod:`.br_forward` (forward and
flood), :mod:`.br_fdb` (the forwarding database), :mod:`.br_stp` /
:mod:`.br_stp_if` / :mod:`.br_stp_bpdu` (802.1D), :mod:`.br_vlan` (VLAN
filtering), :mod:`.br_netlink` (options and ``ip -d`` attributes),
:mod:`.stp` (LLC and the STP SAP).

See docs/tutorials/bridges-vlans.md. Kernel: net/bridge/br.c (br_init).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.bridge.br_if import br_device_event
from netstack.bridge.br_netlink import (
    br_changelink,
    br_dev_delete,
    br_dev_newlink,
    br_fill_info,
)
from netstack.bridge.br_stp_if import br_stp_rcv
from netstack.bridge.br_sysfs import br_sysfs_init
from netstack.bridge.stp import llc_init, stp_init, stp_proto_register
from netstack.core.rtnetlink import KernelModule, RtnlLinkOps, register_module, rtnl_link_register

if TYPE_CHECKING:
    from netstack.core.net import Net

__all__ = ["BRIDGE_MODULES", "br_init_net", "register_bridge_modules"]


def br_init_net(net: Net) -> None:
    """The bridge module's per-Net init. Kernel: net/bridge/br.c, br_init()."""
    stp_proto_register(net, br_stp_rcv)
    br_sysfs_init(net)
    net.register_netdevice_notifier(br_device_event)
    rtnl_link_register(
        net,
        RtnlLinkOps(
            "bridge",
            newlink=br_dev_newlink,
            changelink=br_changelink,
            dellink=br_dev_delete,
            get_info=br_fill_info,
        ),
    )


BRIDGE_MODULES = (
    KernelModule("llc", (), llc_init),
    KernelModule("stp", (), stp_init, depends=("llc",)),
    KernelModule("bridge", ("rtnl-link-bridge",), br_init_net, depends=("stp",)),
)


def register_bridge_modules(net: Net) -> None:
    """Make the bridge loadable on *net* (``depmod``); nothing is loaded."""
    for module in BRIDGE_MODULES:
        register_module(net, module)
