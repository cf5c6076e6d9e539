"""``ip link``: the exact text of show/-s/-d/-br/-o, and add/set/del through the kernel."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import trio.testing

from netstack.errors import ConfigError
from netstack.host import Host, Lab, mac_for
from netstack.userspace.iproute2.ip.ip_link import print_link_flags


@contextlib.contextmanager
def fails(message: str) -> Iterator[None]:
    """Expect a ConfigError whose text is exactly *message*."""
    with pytest.raises(ConfigError) as exc:
        yield
    assert str(exc.value) == message


def mac(host: str, dev: str) -> str:
    return ":".join(f"{x:02x}" for x in mac_for(host, dev))


LO = (
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT "
    "group default qlen 1000\n"
    "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
)

ZERO_STATS = (
    "    RX:  bytes packets errors dropped  missed   mcast           \n"
    "             0       0      0       0       0       0 \n"
    "    TX:  bytes packets errors dropped carrier collsns           \n"
    "             0       0      0       0       0       0 \n"
)


async def test_show_lo_and_lab_veth(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    assert a.ip("link show lo") == LO
    assert a.ip("link") == LO + (
        "2: eth0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP "
        "mode DEFAULT group default qlen 1000\n"
        f"    link/ether {mac('a', 'eth0')} brd ff:ff:ff:ff:ff:ff link-netnsid 0\n"
    )
    # abbreviations, dev keyword, list/lst
    assert a.ip("l") == a.ip("link show") == a.ip("link list") == a.ip("link lst")
    assert a.ip("li sh dev lo") == a.ip("link show lo") == LO


async def test_stats_blocks(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    assert a.ip("-s link show lo") == LO + ZERO_STATS
    assert a.ip("-statistics link show lo") == a.ip("-s link show lo")
    assert a.ip("-s -s link show lo") == LO + (
        "    RX:  bytes packets errors dropped  missed   mcast           \n"
        "             0       0      0       0       0       0 \n"
        "    RX errors:  length    crc   frame    fifo overrun\n"
        "                     0      0       0       0       0 \n"
        "    TX:  bytes packets errors dropped carrier collsns           \n"
        "             0       0      0       0       0       0 \n"
        "    TX errors: aborted   fifo  window heartbt transns\n"
        "                     0      0       0       0       0 \n"
    )


async def test_stats_columns_widen_with_counters(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, b = pair
    a.ip("addr add 10.0.0.1/24 dev eth0")
    b.ip("addr add 10.0.0.2/24 dev eth0")
    assert await a.ping("10.0.0.2", count=3, interval=0.1)
    s = a.dev("eth0").statistics()
    assert s.tx_packets == 4  # 3 echo requests and the ARP request (IPv6 is off)
    out = a.ip("-s link show eth0").splitlines()
    assert out[2] == "    RX:  bytes packets errors dropped  missed   mcast           "
    assert out[3] == f"    {s.rx_bytes:>10} {s.rx_packets:>7} {0:>6} {0:>7} {0:>7} {0:>7} "
    assert out[5] == f"    {s.tx_bytes:>10} {s.tx_packets:>7} {0:>6} {0:>7} {0:>7} {0:>7} "


async def test_human_readable_stats(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    dev = a.dev("lo")
    dev.priv[0] = 1234567
    dev.priv[1] = 98765432
    lines = a.ip("-s -h link show lo").splitlines()
    # -h keeps the header widths and prints 3 significant digits, right aligned
    assert lines[3] == "         98.8M   1.23M      0       0       0       0 "
    lines = a.ip("-s -h -iec link show lo").splitlines()
    assert lines[3] == "        94.2Mi  1.18Mi      0       0       0       0 "


async def test_details(autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]) -> None:
    a, _ = pair
    assert a.ip("-d link show eth0") == (
        "2: eth0@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP "
        "mode DEFAULT group default qlen 1000\n"
        f"    link/ether {mac('a', 'eth0')} brd ff:ff:ff:ff:ff:ff link-netnsid 0 "
        "promiscuity 0 allmulti 0 minmtu 68 maxmtu 65535 \n"
        "    veth numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535 "
        "tso_max_size 524280 tso_max_segs 65535 gro_max_size 65536 "
        "gso_ipv4_max_size 65536 gro_ipv4_max_size 65536 \n"
    )
    a.ip("link add d0 type dummy")
    out = a.ip("-d link show d0").splitlines()
    assert out[1].endswith(" promiscuity 0 allmulti 0 minmtu 0 maxmtu 0 ")
    assert out[2].startswith("    dummy numtxqueues 1 ")
    assert "\n    veth" not in a.ip("-d link show lo")


async def test_brief_and_oneline(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    assert a.ip("-br link") == (
        "lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP> \n"
        f"eth0@if2         UP             {mac('a', 'eth0')} <BROADCAST,MULTICAST,UP,LOWER_UP> \n"
    )
    assert a.ip("-o link show lo") == LO.replace("\n    link", "\\    link")
    assert a.ip("-o -s link show lo").count("\n") == 1


async def test_dummy_lifecycle(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = lab.add_host("h")
    assert h.ip("link add d0 type dummy") == ""
    dev = h.dev("d0")
    addr = ":".join(f"{x:02x}" for x in dev.dev_addr)
    assert dev.kind == "dummy"
    assert not dev.is_up()
    assert h.ip("link show d0") == (
        "2: d0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN mode DEFAULT group default "
        "qlen 1000\n"
        f"    link/ether {addr} brd ff:ff:ff:ff:ff:ff\n"
    )
    h.ip("link set d0 up")
    assert h.ip("link show d0").startswith(
        "2: d0: <BROADCAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc noqueue state UNKNOWN "
    )
    h.ip("link set dev d0 down")
    assert h.ip("link show d0").startswith(
        "2: d0: <BROADCAST,NOARP> mtu 1500 qdisc noqueue state DOWN "
    )
    h.ip("link del d0")
    assert h.net.dev_get_by_name("d0") is None
    h.ip("link add type dummy")  # the kernel names it
    assert h.net.dev_get_by_name("dummy0") is not None


async def test_veth_pair_in_one_host(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = lab.add_host("h")
    h.ip("link add v0 type veth peer name v1")
    v0, v1 = h.dev("v0"), h.dev("v1")
    assert v1.ifindex == 2
    assert v0.ifindex == 3
    h.ip("link set v0 up")
    out = h.ip("link")
    assert "2: v1@v0: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN mode DEFAULT" in out
    assert (
        "3: v0@v1: <NO-CARRIER,BROADCAST,MULTICAST,UP,M-DOWN> mtu 1500 qdisc noqueue "
        "state LOWERLAYERDOWN mode DEFAULT group default qlen 1000\n"
    ) in out
    h.ip("link set v1 up")
    assert "3: v0@v1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP" in (
        h.ip("link show v0")
    )
    h.ip("link delete v1")
    assert h.net.dev_get_by_name("v0") is None
    assert h.net.dev_get_by_name("v1") is None


async def test_veth_peer_forms_and_attributes(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = lab.add_host("h")
    h.ip("link add name a0 mtu 9000 txqueuelen 500 type veth peer b0 mtu 1400")
    assert h.dev("a0").mtu == 9000
    assert h.dev("b0").mtu == 1400
    assert h.dev("a0").tx_queue_len == 500
    assert h.dev("b0").tx_queue_len == 1000
    h.ip("link add c0 up type veth peer name c1 up")
    assert h.dev("c0").is_up()
    assert h.dev("c1").is_up()
    assert "state UP" in h.ip("link show c0")
    h.ip("link add e0 type veth")  # no peer: the kernel names it
    assert h.net.dev_get_by_name("veth0") is not None


@pytest.mark.slow
async def test_set_several_at_once(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("link add d0 type dummy")
    a.ip(
        "link set dev d0 mtu 9000 address 02:00:00:00:00:42 txqlen 77 alias my-dummy "
        "arp on multicast on promisc on allmulticast on name dd up"
    )
    dev = a.dev("dd")
    assert dev.mtu == 9000
    assert dev.dev_addr == bytes.fromhex("020000000042")
    assert dev.tx_queue_len == 77
    assert dev.ifalias == "my-dummy"
    assert dev.is_up()
    assert a.ip("link show dd") == (
        "3: dd: <BROADCAST,MULTICAST,ALLMULTI,PROMISC,UP,LOWER_UP> mtu 9000 qdisc noqueue "
        "state UNKNOWN mode DEFAULT group default qlen 77\n"
        "    link/ether 02:00:00:00:00:42 brd ff:ff:ff:ff:ff:ff\n"
        "    alias my-dummy\n"
    )
    assert " promiscuity 1 allmulti 1 " in a.ip("-d link show dd")
    a.ip("link set dd arp off multicast off promisc off allmulticast off qlen 0")
    assert a.ip("link show dd").startswith(
        "3: dd: <BROADCAST,NOARP,UP,LOWER_UP> mtu 9000 qdisc noqueue state UNKNOWN mode "
        "DEFAULT group default \n"  # no qlen: the line keeps group's trailing space
    )
    a.ip("link set dd group 7")
    assert " group 7 " in a.ip("link show dd")
    assert a.ip("link show group 7").startswith("3: dd:")
    assert a.ip("link show group 8") == ""


async def test_show_filters(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    a.ip("link add d0 type dummy")
    assert a.ip("link show type dummy").startswith("3: d0: ")
    assert a.ip("link show type veth").startswith("2: eth0@if2: ")
    assert a.ip("link show type bridge") == ""
    assert [line.split(":")[1] for line in a.ip("link show up").splitlines()[::2]] == [
        " lo",
        " eth0@if2",
    ]
    assert a.ip("link show down").startswith("3: d0: ")
    assert a.ip("link show if1") == LO  # iproute2 accepts "ifN" for an ifindex


async def test_rename_needs_device_down(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host]
) -> None:
    a, _ = pair
    with fails("RTNETLINK answers: Device or resource busy"):
        a.ip("link set eth0 name wan0")
    a.ip("link set eth0 down")
    a.ip("link set eth0 name wan0 up")  # the name changes before the device comes up
    assert a.dev("wan0").is_up()


async def test_carrier_on_dummy(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    h = lab.add_host("h")
    h.ip("link add d0 up type dummy")
    h.ip("link set d0 carrier off")
    assert h.ip("link show d0").startswith(
        "2: d0: <NO-CARRIER,BROADCAST,NOARP,UP> mtu 1500 qdisc noqueue state DOWN "
    )
    h.ip("link set d0 carrier on")
    assert "state UP" in h.ip("link show d0")
    with fails("RTNETLINK answers: Operation not supported"):
        h.ip("link set lo carrier off")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("link show eth9", 'Device "eth9" does not exist.'),
        ("link show dev eth9", 'Device "eth9" does not exist.'),
        ("link set eth9 up", 'Cannot find device "eth9"'),
        ("link del eth9", 'Cannot find device "eth9"'),
        ("link set up", 'Not enough information: "dev" argument is required.'),
        ("link foo", 'Command "foo" is unknown, try "ip link help".'),
        ("link add x0 type foo", "Error: Unknown device type."),
        ("link add x0", 'Not enough information: "type" argument is required'),
        ("link add lo type dummy", "RTNETLINK answers: File exists"),
        ("link add eth0 type veth peer name p0", "RTNETLINK answers: File exists"),
        ("link add p0 type veth peer name eth0", "RTNETLINK answers: File exists"),
        (
            "link add d9 type dummy extra",
            'Garbage instead of arguments "extra ...". Try "ip link help".',
        ),
        ("link add x0 type foo bar", 'Garbage instead of arguments "bar ...". Try "ip link help".'),
        (
            "link add v9 type veth peer name w9 type dummy",
            'Error: duplicate "type": "dummy" is the second value.',
        ),
        ("link add aaaaaaaaaaaaaaaaaaaa type dummy", "Error: Attribute failed policy validation."),
        (
            "link add name aaaaaaaaaaaaaaaaaaaa type dummy",
            'Error: argument "aaaaaaaaaaaaaaaaaaaa" is wrong: "name" not a valid ifname',
        ),
        (
            "link add name a/b type dummy",
            'Error: argument "a/b" is wrong: "name" not a valid ifname',
        ),
        (
            "link add x name y type dummy",
            'both "name" and "dev" cannot be used when creating devices.',
        ),
        ("link add link eth9 name v5 type dummy", 'Cannot find device "eth9"'),
        ("link del lo", "RTNETLINK answers: Operation not supported"),
        ("link set eth0 mtu 20", "Error: mtu less than device minimum."),
        ("link set eth0 mtu 70000", "Error: mtu greater than device maximum."),
        ("link set eth0 mtu -1", "Error: mtu less than device minimum."),
        ("link set eth0 mtu abc", 'Error: argument "abc" is wrong: Invalid "mtu" value'),
        ("link set eth0 mtu 1400 mtu 1300", 'Error: duplicate "mtu": "1300" is the second value.'),
        ("link set eth0 txqueuelen x", 'Error: argument "x" is wrong: Invalid "txqueuelen" value'),
        ("link set eth0 arp maybe", 'Error: argument of "arp" must be "on" or "off", not "maybe"'),
        ("link set eth0 promisc 1", 'Error: argument of "promisc" must be "on" or "off", not "1"'),
        (
            "link set eth0 address 02:00:00:00:00:00:01",
            "Invalid address length 7 - must be 6 bytes",
        ),
        ("link set eth0 address 02:zz:00:00:00:01", '"zz" is invalid lladdr.'),
        (
            "link set eth0 address 01:00:00:00:00:01",
            "RTNETLINK answers: Cannot assign requested address",
        ),
        ("link set eth0 group foo", 'Error: argument "foo" is wrong: Invalid "group" value'),
        ("link set eth0 eth1", 'Error: either "dev" is duplicate, or "eth1" is a garbage.'),
        ("link set eth0 mtu", 'Command line is not complete. Try option "help"'),
        ("link set lo name eth0", "RTNETLINK answers: Device or resource busy"),
        (
            "link set eth0 alias " + "x" * 256,
            'Error: argument "' + "x" * 256 + '" is wrong: alias too long',
        ),
    ],
)
async def test_errors(
    autojump_clock: trio.testing.MockClock, pair: tuple[Host, Host], command: str, message: str
) -> None:
    a, _ = pair
    with pytest.raises(ConfigError) as exc:
        a.ip(command)
    assert str(exc.value) == message


async def test_failed_add_leaves_nothing_behind(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    h = lab.add_host("h")
    with pytest.raises(ConfigError, match="mtu greater than device maximum"):
        h.ip("link add v0 mtu 99999 type veth peer name v1")
    assert sorted(h.net.devices) == ["lo"]


def test_print_link_flags() -> None:
    assert print_link_flags(0x1003, False) == "<NO-CARRIER,BROADCAST,MULTICAST,UP> "
    assert print_link_flags(0x1043 | 0x10000, True) == "<BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> "
    assert print_link_flags(0x80000, False) == "<80000> "
    assert print_link_flags(0x2 | 0x80000, False) == "<BROADCAST,80000> "


async def test_emulated_nic(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    a = lab.add_host("a")
    lab.add_host("b")
    lab.add_link("a:eth0", "b:eth0", kind="nic")
    assert a.ip("link show eth0") == (
        "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc pfifo_fast state UP "
        "mode DEFAULT group default qlen 1000\n"
        f"    link/ether {mac('a', 'eth0')} brd ff:ff:ff:ff:ff:ff\n"
    )
    assert "\n    nic" not in a.ip("-d link show eth0")  # hardware: no link kind
    with fails("RTNETLINK answers: Device or resource busy"):
        a.ip("link set eth0 address 02:00:00:00:00:99")
    a.ip("link set eth0 down")
    a.ip("link set eth0 address 02:00:00:00:00:99")
    assert a.ip("link show eth0").endswith(
        f"    link/ether 02:00:00:00:00:99 brd ff:ff:ff:ff:ff:ff permaddr {mac('a', 'eth0')}\n"
    )
    assert " qdisc pfifo_fast state DOWN " in a.ip("link show eth0")
    with fails("RTNETLINK answers: Operation not supported"):
        a.ip("link del eth0")
