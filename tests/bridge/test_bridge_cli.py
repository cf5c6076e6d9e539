"""``ip link … type bridge``, ``master``/``nomaster``, the ``bridge`` command: output, refusals.

Every refusal is the text iproute2 6.1 prints against Linux 6.18 (checked by
hand in a namespace; tests/bridge/test_real_kernel.py compares what can be
compared automatically), and leaves the configuration as it was.
"""

from __future__ import annotations

import json

import pytest
import trio.testing
from helpers import IPV4_ONLY

import netstack
from netstack.errors import ConfigError


def two_ports(lab: netstack.Lab) -> netstack.Host:
    s = lab.add_host("s", sysctls=IPV4_ONLY)
    for i in (1, 2):
        lab.add_host(f"h{i}", sysctls=IPV4_ONLY)
        lab.add_link(f"s:v{i}", f"h{i}:eth0")
    s.ip("link add br0 type bridge")
    s.ip("link set v1 master br0")
    s.ip("link set v2 master br0")
    s.ip("link set br0 up")
    return s


def state(s: netstack.Host) -> tuple[str, str, str]:
    return (s.ip("-d link show"), s.bridge("fdb show"), s.bridge("vlan show"))


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("link set br0 master br1", "Error: Can not enslave a bridge to a bridge."),
        ("link set br0 master br0", "Error: Can not enslave a bridge to a bridge."),
        ("link set lo master br0", "RTNETLINK answers: Invalid argument"),
        ("link set br1 master v2", "RTNETLINK answers: Operation not supported"),
        ("link set v1 master nope", 'Error: argument "nope" is wrong: Device does not exist'),
        ("link add br2 type bridge hello_time 5000", "RTNETLINK answers: Numerical result out"),
        ("link add br2 type bridge max_age 100", "RTNETLINK answers: Numerical result out"),
        ("link add br2 type bridge forward_delay x", 'Error: argument "x" is wrong: invalid'),
        ("link add br2 type bridge foo", 'bridge: unknown command "foo"?'),
        ("link set br0 type bridge group_fwd_mask 1", "Error: bridge: Can't set group_fwd_mask"),
        ("link set v1 type bridge_slave state 9", "RTNETLINK answers: Invalid argument"),
        ("link set v1 type bridge_slave cost 0", "RTNETLINK answers: Numerical result out"),
    ],
)
async def test_ip_link_refusals(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, command: str, message: str
) -> None:
    s = two_ports(lab)
    s.ip("link add br1 type bridge")
    before = state(s)
    with pytest.raises(ConfigError) as e:
        s.ip(command)
    assert str(e.value).startswith(message), str(e.value)
    assert state(s) == before


async def test_enslaving_twice_and_nomaster_twice_are_no_ops(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s = two_ports(lab)
    before = state(s)
    s.ip("link set v1 master br0")  # do_set_master(): already its master
    assert state(s) == before
    s.ip("link set v1 nomaster")
    s.ip("link set v1 nomaster")
    assert "master" not in s.ip("link show v1")
    assert s.bridge("link").count("master br0") == 1
    # moving a port from one bridge to another
    s.ip("link add br1 type bridge")
    s.ip("link set v2 master br1")
    assert " master br1 " in s.ip("link show v2")


async def test_bridge_takes_the_lowest_port_mac(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s = two_ports(lab)
    v1, v2 = s.dev("v1").dev_addr, s.dev("v2").dev_addr
    assert s.dev("br0").dev_addr == min(v1, v2)
    s.ip("link set v1 nomaster")
    s.ip("link set v2 nomaster")
    # the kernel's br_stp_recalculate_bridge_id() with no port: all zeros
    assert "link/ether 00:00:00:00:00:00 " in s.ip("link show br0")
    s.ip("link set br0 address 02:00:00:00:00:42")
    s.ip("link set v1 master br0")
    assert "link/ether 02:00:00:00:00:42 " in s.ip("link show br0")  # the user's stays


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("fdb add 02:00:00:00:00:01 dev v1 master vlan 4095", "Error: invalid vlan id."),
        ("fdb add zz dev v1 master", "Invalid mac address zz"),
        ("fdb add 02:00:00:00:00:05 dev nope master", 'Cannot find device "nope"'),
        ("fdb add 02:00:00:00:00:05", "Device and address are required arguments."),
        ("fdb del 02:00:00:00:00:09 dev v1 master", "RTNETLINK answers: No such file or"),
        ("fdb add 02:00:00:00:00:01 dev v1 master vlan 7", "RTNETLINK answers: Invalid argument"),
        ("fdb foo", 'Command "foo" is unknown, try "bridge fdb help".'),
        ("foo", 'Object "foo" is unknown, try "bridge help".'),
        ("vlan add dev v1 vid 0", "Error: bridge: Vlan id is invalid."),
        ("vlan add dev v1 vid 4095", "Error: bridge: Vlan id is invalid."),
        ("vlan add dev v1 vid 5000", 'Invalid VLAN ID "5000"'),
        ("vlan add dev nope vid 5", 'Cannot find bridge device "nope"'),
        ("vlan add vid 5", "Device and VLAN ID are required arguments."),
        ("vlan add dev br0 vid 5", "RTNETLINK answers: Operation not supported"),
        ("vlan del dev v1 vid 9", "RTNETLINK answers: No such file or directory"),
        ("link set dev v1 state 9", "RTNETLINK answers: Invalid argument"),
        ("link set cost 4", "Device is a required argument."),
    ],
)
async def test_bridge_command_refusals(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock, command: str, message: str
) -> None:
    s = two_ports(lab)
    s.bridge("fdb add 02:00:00:00:00:01 dev v1 master static")
    before = state(s)
    with pytest.raises(ConfigError) as e:
        s.bridge(command)
    assert str(e.value).startswith(message), str(e.value)
    assert state(s) == before


async def test_fdb_add_self_is_the_devices_own_list(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    """Without ``master``, iproute2 assumes ``self``: the port's own address list."""
    s = two_ports(lab)
    s.bridge("fdb add 02:00:00:00:00:04 dev v1")
    s.bridge("fdb add 02:00:00:00:00:03 dev v1 master dynamic")
    s.bridge("fdb add 02:00:00:00:00:02 dev v1 master")
    s.bridge("fdb add 02:00:00:00:00:01 dev v1 master static")
    lines = s.bridge("fdb show dev v1").splitlines()
    assert lines[:6] == [
        "02:00:00:00:00:01 vlan 1 master br0 static",
        "02:00:00:00:00:01 master br0 static",
        "02:00:00:00:00:02 vlan 1 master br0 permanent",
        "02:00:00:00:00:02 master br0 permanent",
        "02:00:00:00:00:03 vlan 1 master br0 ",
        "02:00:00:00:00:03 master br0 ",
    ]
    # the device's own lists, unicast then multicast (ndo_dflt_fdb_dump): the
    # all-hosts group's MAC is there since the port came up (ip_mc_up)
    assert lines[-2:] == ["02:00:00:00:00:04 self permanent", "01:00:5e:00:00:01 self permanent"]
    with pytest.raises(ConfigError, match="File exists"):
        s.bridge("fdb add 02:00:00:00:00:04 dev v1")
    s.bridge("fdb replace 02:00:00:00:00:01 dev v1 master")
    assert "02:00:00:00:00:01 master br0 permanent" in s.bridge("fdb show dev v1")
    s.bridge("fdb del 02:00:00:00:00:01 dev v1 master")
    assert "02:00:00:00:00:01" not in s.bridge("fdb show")
    entries = json.loads(s.bridge("-j fdb show dev v1"))
    assert {"mac": "02:00:00:00:00:03", "vlan": 1, "flags": [], "master": "br0"} in entries
    assert entries[-2] == {"mac": "02:00:00:00:00:04", "flags": ["self"], "state": "permanent"}


async def test_bridge_link_and_port_options(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s = two_ports(lab)
    s.bridge("link set dev v1 cost 5 priority 40 learning off hairpin on")
    out = s.bridge("-d link show dev v1").splitlines()
    assert out[0].endswith(" master br0 state forwarding priority 40 cost 5 ")
    assert out[1].startswith("    hairpin on guard off root_block off fastleave off learning off ")
    # without STP a port set blocking is designated and forwards again at once
    # (br_set_port_state() → br_port_state_selection(); Linux 6.18 does the same)
    s.ip("link set v2 type bridge_slave cost 7 state blocking")
    assert "state forwarding priority 32 cost 7 " in s.bridge("link show dev v2")
    s.bridge("link set dev v2 state disabled")
    assert "bridge_slave state disabled priority 32 cost 7 " in s.ip("-d link show v2")
    assert s.bridge("-j link show").startswith('[{"ifindex":2,"link":"if2","ifname":"v1",')
    assert s.bridge("-c vlan show") == (
        "port              vlan-id  \n"
        "v1                1 PVID Egress Untagged\n"
        "v2                1 PVID Egress Untagged\n"
        "br0               1 PVID Egress Untagged\n"
    )


async def test_sysctl_free_bridge_options_show_in_ip_details(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s = two_ports(lab)
    s.ip(
        "link set br0 type bridge ageing_time 1000 forward_delay 400 hello_time 100 "
        "max_age 600 priority 4096 vlan_filtering 1 vlan_protocol 802.1ad"
    )
    d = s.ip("-d link show br0").splitlines()[2]
    assert d.startswith(
        "    bridge forward_delay 400 hello_time 100 max_age 600 ageing_time 1000 "
        "stp_state 0 priority 4096 vlan_filtering 1 vlan_protocol 802.1ad bridge_id 1000."
    )


async def test_sysfs_bridge_and_brport(
    lab: netstack.Lab, autojump_clock: trio.testing.MockClock
) -> None:
    s = two_ports(lab)
    mac = s.dev("br0").dev_addr.hex()
    assert s.sysfs("class/net/br0/bridge/bridge_id") == f"8000.{mac}\n"
    assert s.sysfs("class/net/br0/bridge/ageing_time") == "30000\n"
    assert s.sysfs("class/net/br0/bridge/group_addr") == "01:80:c2:00:00:00\n"
    assert s.sysfs("class/net/v1/brport/port_id") == "0x8001\n"
    assert s.sysfs("class/net/v2/brport/port_no") == "0x2\n"
    assert s.sysfs("class/net/v1/brport/state") == "3\n"
    with pytest.raises(ConfigError, match="No such file or directory"):
        s.sysfs("class/net/v1/bridge/bridge_id")
