"""Exit statuses of refused ``ip`` and ``tc`` commands at the prompt, as iproute2's.

The kernel's refusals (``RTNETLINK answers: …``, an extack ``Error: …``)
exit 2 (``do_cmd`` returns ``-(-2)``); ip's own checks exit 1
(``Cannot find device``, ``get_prefix``'s ``exit(1)``, an invalid lladdr);
``invarg``/``duparg2``/``incomplete_command``/``usage()`` exit 255
(``exit(-1)``). tc exits 0 after its usage text, 1 when a parser gives up
and 255 on its own ``return -1`` paths. The table was made with iproute2's
``ip``/``tc`` on Linux 6.18; run as root, the same lines run in a network
namespace and their statuses are compared.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import trio.testing
from helpers import Term

IP = [
    ("link set nosuch up", 1, 'Cannot find device "nosuch"'),
    ("route add 10.0.0.0/8 via 1.2.3.4", 2, "Error: Nexthop has invalid gateway."),
    ("addr add bogus dev lo", 1, 'Error: any valid prefix is expected rather than "bogus".'),
    ("route add bogus", 1, 'Error: any valid prefix is expected rather than "bogus".'),
    ("link add x type nosuchkind", 2, "Error: Unknown device type."),
    ("route del 10.77.0.0/16", 2, "RTNETLINK answers: No such process"),
    ("neigh add 10.0.0.5 lladdr zz dev lo", 1, '"zz" is invalid lladdr.'),
    ("link set lo mtu abc", 255, 'Error: argument "abc" is wrong: Invalid "mtu" value'),
    ("foo", 1, 'Object "foo" is unknown, try "ip help".'),
    ("link del nosuch", 1, 'Cannot find device "nosuch"'),
    ("route add 10.5.0.0/16 dev lo metric x", 255,
     'Error: argument "x" is wrong: "metric" value is invalid'),
    ("-6 route add 2001:db8::/64 via fe80::1", 2, "Error: Egress device not specified."),
    ("link set lo nosuchopt", 255,
     'Error: either "dev" is duplicate, or "nosuchopt" is a garbage.'),
    ("addr flush dev nosuch", 1, 'Device "nosuch" does not exist.'),
    ("route show table nosuch", 255,
     'Error: argument "nosuch" is wrong: table id value is invalid'),
    ("route add 10.1.0.0/16 via", 255, 'Command line is not complete. Try option "help"'),
    ("link set", 255, 'Not enough information: "dev" argument is required.'),
    ("addr add 10.1.1.1/24", 1, 'Not enough information: "dev" argument is required.'),
    ("link add", 1, 'Not enough information: "type" argument is required'),
    ("help", 255, "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }"),
    ("-zz", 255, 'Option "-zz" is unknown, try "ip -help".'),
    ("link set lo arp maybe", 1, 'Error: argument of "arp" must be "on" or "off", not "maybe"'),
    ("tunnel add t0 mode gre remote zz", 1, 'Error: an IP address is expected rather than "zz".'),
]  # fmt: skip
TC = [
    ("qdisc add dev lo root nosuch", 2, "Error: Specified qdisc kind is unknown."),
    ("qdisc add dev nosuch root pfifo", 1, 'Cannot find device "nosuch"'),
    ("qdisc del dev lo root", 2, "Error: Cannot delete qdisc with handle of zero."),
    ("qdisc add dev lo root tbf rate 1mbit", 1, 'tbf: the "burst" parameter is mandatory.'),
    ("qdisc add dev lo root netem delay abc", 1, 'Illegal "latency"'),
    ("qdisc add dev lo root pfifo limit x", 1, 'pfifo: Illegal value for "limit": "x"'),
    ("foo", 255, 'Object "foo" is unknown, try "tc help".'),
    ("-zz", 255, 'Option "-zz" is unknown, try "tc -help".'),
    ("qdisc show dev nosuch", 1, 'Cannot find device "nosuch"'),
    ("qdisc add dev lo root handle 1: root prio", 255, 'Error: "root" is duplicate parent ID'),
    ("qdisc add dev lo root pfifo limit", 255, 'Command line is not complete. Try option "help"'),
    ("help", 0, "Usage:\ttc [ OPTIONS ] OBJECT { COMMAND | help }"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "status", "first"), IP)
async def test_ip_exit_status(
    term: Term, autojump_clock: trio.testing.MockClock, line: str, status: int, first: str
) -> None:
    got, out = await term.run(f"h1 ip {line}")
    assert (got, out.split("\n")[0]) == (status, first)


@pytest.mark.parametrize(("line", "status", "first"), TC)
async def test_tc_exit_status(
    term: Term, autojump_clock: trio.testing.MockClock, line: str, status: int, first: str
) -> None:
    got, out = await term.run(f"h1 tc {line}")
    assert (got, out.split("\n")[0]) == (status, first)


def test_linux_exits_the_same() -> None:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip")):
        pytest.skip("needs root, ip(8) and tc(8) for a network namespace")
    if not shutil.which("tc"):
        pytest.skip("needs tc(8)")
    ns = "nsexit-test"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
        pytest.skip("cannot create a network namespace")
    got: list[tuple[str, int]] = []
    try:
        for line, _, _ in IP:
            rc = subprocess.run(["ip", "-n", ns, *line.split()], capture_output=True).returncode
            got.append((f"ip {line}", rc))
        for line, _, _ in TC:
            argv = ["ip", "netns", "exec", ns, "tc", *line.split()]
            got.append((f"tc {line}", subprocess.run(argv, capture_output=True).returncode))
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    want = [(f"ip {line}", s) for line, s, _ in IP] + [(f"tc {line}", s) for line, s, _ in TC]
    assert got == want
