"""Testing protocol behaviour with netstack: the pytest plugin and its helpers.

* the plugin (:mod:`.plugin`, registered automatically): fixtures ``lab``,
  ``two_hosts``, ``routed_hosts``, ``gre_sites``, ``topology``, the
  ``netstack_host`` marker, :func:`seeds`, and pcaps of failing tests;
* :mod:`.topologies`: the canonical topology functions, :func:`lab_file`;
* :mod:`.builders`: the topologies with knobs tests build again and again —
  :func:`pair`, :func:`routed` — and :func:`add_addr`, :func:`add_route`,
  :func:`nstat`, :func:`open_test_lab`;
* :mod:`.checkers`: packet checkers — ``check_frame``, ``expect_frame``,
  ``Frames`` and the layer matchers;
* :mod:`.conformance`: :func:`check_net_device`, the suite a driver runs;
* :mod:`.tcpctx`: :class:`TcpContext`, a host and a hand-driven TCP peer
  (segments as bytes, relative numbers, ``expect_segment`` with a diff).
"""

from netstack.testing.builders import (
    IPV4_ONLY,
    LinkOptions,
    add_addr,
    add_route,
    nstat,
    open_test_lab,
    pair,
    routed,
)
from netstack.testing.checkers import (
    ARP,
    GRE,
    ICMP,
    UDP,
    Ether,
    Frames,
    ICMPv6,
    IPv4,
    IPv6,
    check_frame,
    decode,
    expect_frame,
)
from netstack.testing.conformance import (
    check_net_device,
    nic_pair,
    tunnel_pair,
    veth_pair,
    vlan_pair,
)
from netstack.testing.plugin import netstack_run, seeds, topology_fixture
from netstack.testing.tcpctx import Segment, TcpContext
from netstack.testing.topologies import (
    GreSites,
    RoutedHosts,
    TopologyUnavailable,
    TwoHosts,
    gre_sites,
    lab_file,
    routed_hosts,
    two_hosts,
)

__all__ = [
    "ARP",
    "GRE",
    "ICMP",
    "IPV4_ONLY",
    "UDP",
    "Ether",
    "Frames",
    "GreSites",
    "ICMPv6",
    "IPv4",
    "IPv6",
    "LinkOptions",
    "RoutedHosts",
    "Segment",
    "TcpContext",
    "TopologyUnavailable",
    "TwoHosts",
    "add_addr",
    "add_route",
    "check_frame",
    "check_net_device",
    "decode",
    "expect_frame",
    "gre_sites",
    "lab_file",
    "netstack_run",
    "nic_pair",
    "nstat",
    "open_test_lab",
    "pair",
    "routed",
    "routed_hosts",
    "seeds",
    "topology_fixture",
    "tunnel_pair",
    "two_hosts",
    "veth_pair",
    "vlan_pair",
]
