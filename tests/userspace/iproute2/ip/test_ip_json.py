"""``ip -j``/``-json`` and ``-p``: iproute2's keys, value types and json_writer's bytes.

The pure tests pin netstack's JSON; the root-only test builds the same
topology in network namespaces and compares the objects' keys (and the
types of their values) with what the real ``ip -j`` prints there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from typing import Any

import pytest
import trio.testing

from netstack.host import Host, Lab, mac_for
from netstack.userspace.iproute2.ip.ip_json import jsonw


def mac(host: str, dev: str) -> str:
    return ":".join(f"{x:02x}" for x in mac_for(host, dev))


async def build(lab: Lab) -> Host:
    """a:eth0 — b:eth0 (other namespace), and a veth pair v1/v2 inside a."""
    a = lab.add_host("a", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
    b = lab.add_host("b", sysctls={"net.ipv6.conf.all.disable_ipv6": 1})
    lab.add_link("a:eth0", "b:eth0")
    for cmd in CONFIG_A:
        a.ip(cmd)
    b.ip("addr add 10.0.0.2/24 dev eth0")
    await a.ping("10.0.0.2")
    for cmd in CONFIG_A_AFTER:
        a.ip(cmd)
    return a


CONFIG_A = [
    "link add v1 type veth peer name v2",
    "addr add 10.0.0.1/24 dev eth0",
    "addr add 10.5.0.1/24 brd + dev v1",
    "addr add 10.5.0.2/24 dev v1",
    "addr add 10.6.0.1 peer 10.6.0.2/32 dev v1 label v1:x",
    "link set v1 up",
]
CONFIG_A_AFTER = [
    "neigh add 10.0.0.77 lladdr 00:11:22:33:44:55 dev eth0",
    "route add default via 10.0.0.2 metric 5",
    "route add 10.9.0.0/16 via 10.0.0.2 mtu lock 1400 proto static",
]
COMMANDS = [
    "-j link show",
    "-j -s link show dev eth0",
    "-j -4 addr show",
    "-br -j -4 addr",
    "-br -j link",
    "-j route",
    "-j route show table local",
    "-j route get 10.9.1.1",
    "-j neigh show 10.0.0.77",
]


def test_json_writer_bytes() -> None:
    value = [{"a": 1, "flags": ["UP", "LOWER_UP"], "e": [], "n": None, "t": True, "o": {"x": "y"}}]
    assert jsonw(value, pretty=False) == (
        '[{"a":1,"flags":["UP","LOWER_UP"],"e":[],"n":null,"t":true,"o":{"x":"y"}}]\n'
    )
    assert jsonw(value, pretty=True) == (
        "[ {\n"
        '        "a": 1,\n'
        '        "flags": [ "UP","LOWER_UP" ],\n'
        '        "e": [ ],\n'
        '        "n": null,\n'
        '        "t": true,\n'
        '        "o": {\n'
        '            "x": "y"\n'
        "        }\n"
        "    } ]\n"
    )
    assert jsonw([], pretty=True) == "[ ]\n" and jsonw([], pretty=False) == "[]\n"


async def test_ip_json_pinned(autojump_clock: trio.testing.MockClock, lab: Lab) -> None:
    a = await build(lab)
    assert json.loads(a.ip("-j addr show dev v1")) == [
        {
            "ifindex": 4,
            "link": "v2",
            "ifname": "v1",
            "flags": ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP", "M-DOWN"],
            "mtu": 1500,
            "qdisc": "noqueue",
            "operstate": "LOWERLAYERDOWN",
            "group": "default",
            "txqlen": 1000,
            "link_type": "ether",
            "address": ":".join(f"{x:02x}" for x in a.dev("v1").dev_addr),
            "broadcast": "ff:ff:ff:ff:ff:ff",
            "addr_info": [
                {
                    "family": "inet",
                    "local": "10.5.0.1",
                    "prefixlen": 24,
                    "broadcast": "10.5.0.255",
                    "scope": "global",
                    "label": "v1",
                    "valid_life_time": 4294967295,
                    "preferred_life_time": 4294967295,
                },
                {
                    "family": "inet",
                    "local": "10.6.0.1",
                    "address": "10.6.0.2",
                    "prefixlen": 32,
                    "scope": "global",
                    "label": "v1:x",
                    "valid_life_time": 4294967295,
                    "preferred_life_time": 4294967295,
                },
                {
                    "family": "inet",
                    "local": "10.5.0.2",
                    "prefixlen": 24,
                    "scope": "global",
                    "secondary": True,
                    "label": "v1",
                    "valid_life_time": 4294967295,
                    "preferred_life_time": 4294967295,
                },
            ],
        }
    ]
    assert a.ip("-j route") == (
        '[{"dst":"default","gateway":"10.0.0.2","dev":"eth0","metric":5,"flags":[]},'
        '{"dst":"10.0.0.0/24","dev":"eth0","protocol":"kernel","scope":"link",'
        '"prefsrc":"10.0.0.1","flags":[]},'
        '{"dst":"10.5.0.0/24","dev":"v1","protocol":"kernel","scope":"link",'
        '"prefsrc":"10.5.0.1","flags":["linkdown"]},'
        '{"dst":"10.6.0.2","dev":"v1","protocol":"kernel","scope":"link",'
        '"prefsrc":"10.6.0.1","flags":["linkdown"]},'
        '{"dst":"10.9.0.0/16","gateway":"10.0.0.2","dev":"eth0","protocol":"static",'
        '"flags":[],"metrics":[{"mtu":1400}]}]\n'
    )
    assert a.ip("-j -p route show 10.9.0.0/16") == (
        "[ {\n"
        '        "dst": "10.9.0.0/16",\n'
        '        "gateway": "10.0.0.2",\n'
        '        "dev": "eth0",\n'
        '        "protocol": "static",\n'
        '        "flags": [ ],\n'
        '        "metrics": [ {\n'
        '                "mtu": 1400\n'
        "            } ]\n"
        "    } ]\n"
    )
    assert json.loads(a.ip("-j neigh")) == [
        {"dst": "10.0.0.2", "dev": "eth0", "lladdr": mac("b", "eth0"), "state": ["REACHABLE"]},
        {"dst": "10.0.0.77", "dev": "eth0", "lladdr": "00:11:22:33:44:55", "state": ["PERMANENT"]},
    ]
    assert json.loads(a.ip("-json -br link show dev eth0")) == [
        {
            "link_index": 2,
            "ifname": "eth0",
            "operstate": "UP",
            "address": mac("a", "eth0"),
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
        }
    ]
    assert a.ip("-j route show dev v2") == "[]\n"  # a listing prints its array, even empty
    assert a.ip("-j addr add 10.7.0.1/24 dev eth0") == ""  # changes print nothing


def _shape(value: Any) -> Any:
    """Keys (in order) and value types, recursively: what must agree with iproute2."""
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _real_ip_json() -> list[Any] | None:
    """The same topology in namespaces, and what the real ``ip`` prints for COMMANDS."""
    tag = uuid.uuid4().hex[:6]
    na, nb = f"nsja{tag}", f"nsjb{tag}"

    def run(*argv: str) -> str:
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    try:
        run("ip", "netns", "add", na)
        run("ip", "netns", "add", nb)
        for ns in (na, nb):
            run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
            run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "link", "add", "eth0", "netns", na, "type", "veth", "peer", "eth0", "netns", nb)
        run("ip", "-n", nb, "link", "set", "eth0", "up")
        run("ip", "-n", na, "link", "set", "eth0", "up")
        for cmd in CONFIG_A:
            run("ip", "-n", na, *cmd.split())
        run("ip", "-n", nb, "addr", "add", "10.0.0.2/24", "dev", "eth0")
        run("ip", "netns", "exec", na, "ping", "-c", "1", "-W", "5", "10.0.0.2")
        for cmd in CONFIG_A_AFTER:
            run("ip", "-n", na, *cmd.split())
        return [json.loads(run("ip", "-n", na, *cmd.split())) for cmd in COMMANDS]
    except (subprocess.CalledProcessError, OSError):
        return None
    finally:
        for ns in (na, nb):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("ping") is None,
    reason="needs root, iproute2 and ping to build namespaces",
)
async def test_ip_json_keys_match_iproute2(
    autojump_clock: trio.testing.MockClock, lab: Lab
) -> None:
    real = _real_ip_json()
    if real is None:
        pytest.skip("network namespaces or veth are not available here")
    a = await build(lab)
    for command, theirs in zip(COMMANDS, real, strict=True):
        ours = json.loads(a.ip(command))
        assert _shape(ours) == _shape(theirs), command
