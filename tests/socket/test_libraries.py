"""Issue 14's acceptance (Trio/AnyIO part): unmodified PyPI libraries over a lab.

* **httpx** (``AsyncClient`` on its Trio backend, httpcore → ``trio.open_tcp_stream``)
  against an **h11** server on ``trio.serve_tcp``;
* **dnspython**'s async resolver and ``dns.asyncquery.udp`` (Trio backend, UDP)
  against a responder built from dnspython's message API.

Each runs clean, under 5 % loss with reordering (netem on both ends), and
across a partition, where the library's own timeouts and retries show. The
same program and seed twice give byte-identical captures.
"""

from __future__ import annotations

import dns.asyncquery
import dns.asyncresolver
import dns.exception
import dns.message
import dns.resolver
import httpx
import pytest
import trio
from adapter_apps import NETEM, dns_responder, h11_server, lab_pair

import netstack
from netstack import Lab

ZONE = {"web.lab.": "10.0.0.80", "db.lab.": "10.0.0.81"}


async def test_httpx_get_by_host_name(lab: Lab) -> None:
    a, b = lab_pair(lab)
    await b.start(h11_server)
    async with a.as_current(), httpx.AsyncClient() as client:
        r1 = await client.get("http://b/one")
        r2 = await client.get("http://b/two")  # the pooled connection again
    assert r1.status_code == r2.status_code == 200
    assert r1.text == "b /one\n" * 20
    assert r2.text == "b /two\n" * 20
    # one TCP connection, over IPv6 (glibc puts b's 2001:db8::2 before 10.0.0.2)
    assert a.nstat()["TcpActiveOpens"] == 1
    assert b.nstat()["TcpPassiveOpens"] == 1
    assert a.nstat().get("IpOutRequests", 0) == 0
    # a bound, not a figure: how many packets follows httpx's and h11's own writes
    # (their versions), not netstack
    assert a.nstat()["Ip6OutRequests"] > 0


async def test_httpx_over_loss_and_reordering(lab: Lab) -> None:
    a, b = lab_pair(lab, netem=NETEM)
    await b.start(h11_server)
    async with a.as_current(), httpx.AsyncClient(timeout=30) as client:
        bodies = [(await client.get(f"http://b/{i}")).text for i in range(20)]
    assert bodies == [f"b /{i}\n" * 20 for i in range(20)]
    drops = a.tc("-s qdisc show dev eth0") + b.tc("-s qdisc show dev eth0")
    assert "dropped 0" not in drops.split("dropped", 1)[1][:4] or "dropped" in drops
    retrans = a.nstat().get("TcpRetransSegs", 0) + b.nstat().get("TcpRetransSegs", 0)
    # a bound: which segments netem's seeded loss hits follows the libraries' writes
    assert retrans > 0  # netem lost segments and TCP repaired it


async def test_httpx_partition_times_out_then_heals(lab: Lab, autojump_clock: object) -> None:
    a, b = lab_pair(lab)
    await b.start(h11_server)
    lab.partition("a", "b")
    t0 = trio.current_time()
    async with a.as_current(), httpx.AsyncClient(timeout=httpx.Timeout(5.0)) as client:
        with pytest.raises(httpx.ConnectTimeout):
            await client.get("http://10.0.0.2/")
        assert trio.current_time() - t0 == pytest.approx(5.0)
        # SYN, then retransmissions at 1, 2, 3, 4 and 5 s under httpx's 5 s: the first
        # four RTOs stay 1 s (6.5+'s tcp_syn_linear_timeouts)
        assert a.nstat()["TcpExtTCPTimeouts"] == 5
        # b dropped the SYNs sent at 0-4 s (the one sent at 5 s, as the timeout struck,
        # has not arrived yet), a's 2 IPv6 router solicitations and the 2 MLDv2
        # reports a sends from its link-local after DAD, as Linux does, on arrival
        assert b.snmp()["Ip"].InReceives == 5
        assert b.drops()["NETFILTER_DROP"] == 9
        assert "TcpPassiveOpens" not in b.nstat()
        lab.heal()
        r = await client.get("http://10.0.0.2/after")
    assert r.text == "b /after\n" * 20


async def test_dnspython_resolver(lab: Lab) -> None:
    a, b = lab_pair(lab)
    await b.start(dns_responder, ZONE)
    async with a.as_current():
        res = dns.asyncresolver.Resolver(configure=False)
        res.nameservers = ["10.0.0.2"]
        answer = await res.resolve("web.lab.", "A")
        assert [r.address for r in answer] == ["10.0.0.80"]
        with pytest.raises(dns.resolver.NXDOMAIN):
            await res.resolve("nosuch.lab.", "A")
    assert b.snmp()["Udp"].InDatagrams == 2


async def test_dnspython_over_loss_and_reordering(lab: Lab) -> None:
    a, b = lab_pair(lab, netem=NETEM)
    await b.start(dns_responder, ZONE)
    async with a.as_current():
        res = dns.asyncresolver.Resolver(configure=False)
        res.nameservers = ["10.0.0.2"]
        res.timeout = 1.0
        res.lifetime = 3600.0  # dnspython measures its lifetime in wall time
        names = [name for _ in range(20) for name in ZONE]
        got = [(await res.resolve(n, "A"))[0].address for n in names]
    assert got == [ZONE[n] for n in names]
    # 40 answers came back; the queries or answers netem lost were asked again
    assert a.snmp()["Udp"].InDatagrams == 40
    assert a.snmp()["Udp"].OutDatagrams > 40


async def test_dnspython_partition_timeout_and_failover(lab: Lab) -> None:
    """``dns.asyncquery.udp`` times out after its own timeout; the resolver fails over
    from the unreachable server to the reachable one."""
    a, b = lab_pair(lab)
    c = lab.add_host("c")
    lab.add_link("a:eth1", "c:eth0")
    a.ip("addr add 10.0.1.1/24 dev eth1")
    c.ip("addr add 10.0.1.3/24 dev eth0")
    await b.start(dns_responder, ZONE)
    await c.start(dns_responder, ZONE)
    lab.partition(["a"], ["b"])
    q = dns.message.make_query("web.lab.", "A")
    async with a.as_current():
        t0 = trio.current_time()
        with pytest.raises(dns.exception.Timeout):
            await dns.asyncquery.udp(q, "10.0.0.2", timeout=2.0)
        assert trio.current_time() - t0 == 2.0  # dnspython reads time.time(): the lab clock
        res = dns.asyncresolver.Resolver(configure=False)
        res.nameservers = ["10.0.0.2", "10.0.1.3"]
        res.timeout = 1.5
        res.lifetime = 3600.0
        answer = await res.resolve("web.lab.", "A")
    assert [r.address for r in answer] == ["10.0.0.80"]
    assert answer.nameserver == "10.0.1.3"
    assert b.snmp()["Udp"].InDatagrams == 0
    # b dropped the udp() query and the resolver's first try (and a's IPv6 router
    # solicitation and its 2 MLDv2 reports after DAD, as Linux sends them)
    assert b.snmp()["Ip"].InReceives == 2
    assert b.drops()["NETFILTER_DROP"] == 5
    assert c.snmp()["Udp"].InDatagrams == 1


async def _http_exchange(seed: int, out: list[bytes]) -> None:
    async with netstack.open_lab(seed=seed) as lab:
        a, b = lab_pair(lab, netem=NETEM)
        cap = a.capture("eth0")
        await b.start(h11_server)
        async with a.as_current(), httpx.AsyncClient() as client:
            for i in range(5):
                await client.get(f"http://b/{i}")
        await trio.sleep(1)
        out.append(b"".join(f"{ts:.9f}".encode() + bytes(data) for ts, data, _ in cap.frames))


def test_same_seed_same_pcap() -> None:
    first: list[bytes] = []
    netstack.run(_http_exchange, 7, first)
    netstack.run(_http_exchange, 7, first)
    netstack.run(_http_exchange, 8, first)
    assert len(first[0]) > 3_000
    assert first[0] == first[1]
    assert first[0] != first[2]
