"""``ip tunnel`` and ``ip link … type gre|gretap|ipip|sit``: output and error text."""

from __future__ import annotations

import pytest
import trio.testing

import netstack
from netstack.core.rtnetlink import rtnl_of
from netstack.errors import ConfigError


@pytest.fixture
async def h(lab: netstack.Lab) -> netstack.Host:
    return lab.add_host("h")


async def test_modules_load_on_first_use(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    assert "gre0" not in h.ip("link")
    assert rtnl_of(h.net).loaded == []
    h.ip("link add gre1 type gre remote 192.0.2.2")
    assert rtnl_of(h.net).loaded == ["gre", "ip_gre"]
    assert rtnl_of(h.net).requests == ["rtnl-link-gre"]
    names = [line.split(":")[1].strip() for line in h.ip("-o link").splitlines()]
    assert names == ["lo", "gre0@NONE", "gretap0@NONE", "gre1@NONE"]
    h.ip("tunnel add tun5 mode ipip remote 192.0.2.3")
    assert rtnl_of(h.net).requests[-1] == "netdev-tunl0"
    assert rtnl_of(h.net).loaded == ["gre", "ip_gre", "tunnel4", "ipip"]
    assert "tunl0@NONE: <NOARP> mtu 1480 qdisc noop state DOWN" in h.ip("link show tunl0")


async def test_ip_link_show_of_gre(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    h.ip("link add gre1 type gre remote 192.0.2.2 local 192.0.2.1 ttl 64 key 1.2.3.4 csum")
    h.ip("link set gre1 up")
    assert h.ip("link show gre1") == (
        "4: gre1@NONE: <POINTOPOINT,NOARP,UP,LOWER_UP> mtu 1468 qdisc noqueue state UNKNOWN "
        "mode DEFAULT group default qlen 1000\n"
        "    link/gre 192.0.2.1 peer 192.0.2.2\n"
    )
    details = h.ip("-d link show gre1").splitlines()
    assert details[1].endswith("minmtu 68 maxmtu 65503 ")
    assert details[2].startswith(
        "    gre remote 192.0.2.2 local 192.0.2.1 ttl 64 ikey 1.2.3.4 okey 1.2.3.4 icsum ocsum "
    )


async def test_ip_tunnel_show_formats(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    h.ip("tunnel add gre1 mode gre remote 10.0.0.2 local 10.0.0.1 key 1")
    h.ip("tunnel add gre2 mode gre remote 10.0.0.3 ikey 5 okey 6 seq tos inherit")
    h.ip("tunnel add gre3 mode gre remote 10.0.0.4 nopmtudisc tos 0x10 dev lo")
    assert h.ip("tunnel show gre1") == (
        "gre1: gre/ip remote 10.0.0.2 local 10.0.0.1 ttl inherit key 1\n"
    )
    assert h.ip("tunnel show") == (
        "gre0: gre/ip remote any local any ttl inherit nopmtudisc\n"
        "gre1: gre/ip remote 10.0.0.2 local 10.0.0.1 ttl inherit key 1\n"
        "gre2: gre/ip remote 10.0.0.3 local any ttl inherit tos inherit ikey 5 okey 6\n"
        "  Drop packets out of sequence.\n"
        "  Sequence packets on output.\n"
        "gre3: gre/ip remote 10.0.0.4 local any dev lo ttl inherit tos 0x10 nopmtudisc\n"
    )
    assert h.ip("-o tunnel show gre2").count("\n") == 1
    assert h.ip("tunnel show remote 10.0.0.3").startswith("gre2: ")
    assert h.ip("tunnel") == h.ip("tunnel show")


async def test_ip_tunnel_change_and_delete(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    h.ip("tunnel add gre1 mode gre remote 10.0.0.2 local 10.0.0.1 key 1")
    h.ip("tunnel change gre1 remote 10.0.0.9 ttl 9")
    assert h.ip("tunnel show gre1") == ("gre1: gre/ip remote 10.0.0.9 local 10.0.0.1 ttl 9 key 1\n")
    assert "link/gre 10.0.0.1 peer 10.0.0.9" in h.ip("link show gre1")
    h.ip("tunnel del gre1")
    assert "gre1" not in h.ip("link")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("tunnel add gre1 mode bogus", 'Unknown tunnel mode "bogus"'),
        ("tunnel add gre1 mode gre mode ipip", "You managed to ask for more than one tunnel mode."),
        ("tunnel add t1 remote 10.0.0.2", "cannot determine tunnel mode (ip, gre, vti or sit)"),
        (
            "tunnel add gre1 mode gre remote 10.0.0.2 ttl 64 nopmtudisc",
            "ttl != 0 and nopmtudisc are incompatible",
        ),
        ("tunnel add t1 mode ipip key 5", "Keys are not allowed with ipip and sit tunnels"),
        (
            "tunnel add t1 mode gre remote 10.0.0.300",
            'Error: an IP address is expected rather than "10.0.0.300".',
        ),
        (
            "tunnel add t1 mode gre key xyz",
            'invalid value for "key": "xyz"; it should be an unsigned integer',
        ),
        ("tunnel add t1 mode gre ttl 300", 'Error: argument "300" is wrong: invalid TTL'),
        ("tunnel add t1 mode gre dev eth9", 'Cannot find device "eth9"'),
        ("tunnel add t1 mode gre remote 224.0.0.5", "A broadcast tunnel requires a source address"),
        (
            "tunnel add t1 mode gre bla bla",
            'Error: either "name" is duplicate, or "bla" is a garbage.',
        ),
        ("tunnel add t1 mode gre remote", 'Command line is not complete. Try option "help"'),
        ("tunnel frob", 'Command "frob" is unknown, try "ip tunnel help"'),
        ("tunnel add t1 mode isatap", 'add tunnel "sit0" failed: Operation not supported'),
        ("tunnel del gre5", 'delete tunnel "gre5" failed: No such device'),
        ("tunnel change gre5 mode gre", 'get tunnel "gre5" failed: No such device'),
        ("tunnel show gre5", 'get tunnel "gre5" failed: No such device'),
        ("tunnel show gretap0", 'get tunnel "gretap0" failed: Operation not supported'),
        ("tunnel del lo", 'delete tunnel "lo" failed: Operation not supported'),
    ],
)
async def test_ip_tunnel_errors(
    autojump_clock: trio.testing.MockClock, h: netstack.Host, command: str, message: str
) -> None:
    with pytest.raises(ConfigError) as exc:
        h.ip(command)
    assert str(exc.value).splitlines()[0] == message


async def test_conflicting_tunnels_are_refused(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    h.ip("tunnel add gre1 mode gre remote 10.0.0.2 local 10.0.0.1 key 1")
    with pytest.raises(ConfigError, match=r'^add tunnel "gre0" failed: File exists$'):
        h.ip("tunnel add gre2 mode gre remote 10.0.0.2 local 10.0.0.1 key 1")
    with pytest.raises(ConfigError, match=r"^RTNETLINK answers: File exists$"):
        h.ip("link add gre3 type gre remote 10.0.0.2 local 10.0.0.1 key 1")
    # another key, or another local end, is another tunnel
    h.ip("tunnel add gre2 mode gre remote 10.0.0.2 local 10.0.0.1 key 2")
    h.ip("link add gre3 type gre remote 10.0.0.2 local 10.0.0.5 key 1")
    with pytest.raises(ConfigError, match=r'^add tunnel "gre0" failed: File exists$'):
        h.ip("tunnel add gre1 mode gre remote 10.0.0.7")  # the name is taken
    h.ip("tunnel add ipip1 mode ipip remote 10.0.0.2 local 10.0.0.1")
    with pytest.raises(ConfigError, match=r'^add tunnel "tunl0" failed: File exists$'):
        h.ip("tunnel add ipip2 mode ipip remote 10.0.0.2 local 10.0.0.1")
    with pytest.raises(ConfigError, match=r'^add tunnel "gre1" failed: File exists$'):
        h.ip("tunnel change gre1 remote 10.0.0.2 local 10.0.0.1 key 2")


async def test_fallback_devices_cannot_be_deleted(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    h.ip("tunnel show gre0")  # loads ip_gre
    refused = r'^delete tunnel "gre0" failed: Operation not permitted$'
    with pytest.raises(ConfigError, match=refused):
        h.ip("tunnel del gre0")
    h.ip("link del gre0")  # rtnl_dellink: ip_tunnel_dellink ignores the fallback device
    assert "gre0" in h.ip("link")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            "link add g type gre remote 10.0.0.2 bogus",
            "Usage: ... { gre | gretap | erspan } [ remote ADDR ]",
        ),
        ("link add g type ipip bogus", "Usage: ... ipip  \t[ remote ADDR ]"),
        (
            "link add g type ipip remote 10.0.0.2 ttl 3 nopmtudisc",
            "ttl != 0 and nopmtudisc are incompatible",
        ),
        ("link add g type gretap", "RTNETLINK answers: Invalid argument"),
        ("link add g type vxlan", "vxlan: missing virtual network identifier"),
        ("link add g type sit isatap", 'netstack: "ip link ... isatap" is not supported'),
        (
            "link add g type ipip mode ip6ip",
            'Error: argument "ip6ip" is wrong: Cannot guess tunnel mode.',
        ),
        ("link add g type gre dev nope", 'Cannot find device "nope"'),
    ],
)
async def test_ip_link_tunnel_errors(
    autojump_clock: trio.testing.MockClock, h: netstack.Host, command: str, message: str
) -> None:
    with pytest.raises(ConfigError) as exc:
        h.ip(command)
    assert str(exc.value).splitlines()[0] == message


async def test_ip_link_set_type_gre_keeps_what_is_not_said(
    autojump_clock: trio.testing.MockClock, h: netstack.Host
) -> None:
    h.ip("link add gre1 type gre remote 10.0.0.2 local 10.0.0.1 key 9")
    assert h.dev("gre1").mtu == 1472
    h.ip("link set gre1 type gre remote 10.0.0.3 oseq")
    assert h.ip("tunnel show gre1") == (
        "gre1: gre/ip remote 10.0.0.3 local 10.0.0.1 ttl inherit key 9\n"
        "  Sequence packets on output.\n"
    )
    assert h.dev("gre1").mtu == 1468  # the header grew by the sequence number


async def test_tunnel_mtu_bounds(autojump_clock: trio.testing.MockClock, h: netstack.Host) -> None:
    h.ip("link add gre1 type gre remote 10.0.0.2")
    h.ip("link set gre1 mtu 9000")
    with pytest.raises(ConfigError, match=r"^Error: mtu greater than device maximum\.$"):
        h.ip("link set gre1 mtu 65512")
    h.ip("link set gre1 mtu 65511")
    with pytest.raises(ConfigError, match=r"^Error: mtu less than device minimum\.$"):
        h.ip("link set gre1 mtu 67")
    h.ip("link add gre2 mtu 70000 type gre remote 10.0.0.3")  # clamped, as ip_tunnel_newlink
    assert h.dev("gre2").mtu == 65511


async def test_sysfs_attributes(autojump_clock: trio.testing.MockClock, h: netstack.Host) -> None:
    h.ip("link add gre1 type gre remote 10.0.0.2 local 10.0.0.1")
    assert h.sysfs("class/net/gre1/mtu") == "1476\n"
    assert h.sysfs("/sys/class/net/gre1/type") == "778\n"
    assert h.sysfs("class/net/gre1/address") == "0a:00:00:01\n"
    assert h.sysfs("class/net/gre1/flags") == "0x90\n"
    assert h.sysfs("class/net/gre1/tx_queue_len") == "1000\n"
    assert h.sysfs("class/net/gre1/operstate") == "down\n"
    assert h.sysfs("class/net/gre1/ifindex") == "4\n"
    with pytest.raises(
        ConfigError, match=r"^cat: /sys/class/net/gre9/mtu: No such file or directory$"
    ):
        h.sysfs("class/net/gre9/mtu")
    with pytest.raises(ConfigError, match="Invalid argument"):
        h.sysfs("class/net/gre1/carrier")
