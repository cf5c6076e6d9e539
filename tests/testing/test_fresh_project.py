"""Issue 17 point 2: the plugin in a project of a new user — no conftest, no pytest.ini.

Each test here writes a small project into a temporary folder and runs pytest
there in a fresh process (the current interpreter; ``pip install
'netstack[pytest]'`` is what a user runs to get the same).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import dpkt
import pytest
from fresh_project import run_pytest

FAILING = textwrap.dedent("""
    import trio
    import pytest
    from netstack import Lab
    from netstack.testing import seeds


    async def test_assertion_inside_a_host_task(lab: Lab) -> None:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        await a.ping("10.0.0.2")

        async def check() -> None:
            answer = 41
            assert answer == 42

        a.start_soon(check)
        await trio.sleep(1)


    @seeds(3)
    async def test_fails_for_one_seed(lab: Lab, netstack_seed: int) -> None:
        lab.add_host("a")
        assert netstack_seed != 1


    @pytest.fixture
    async def host_a(lab: Lab) -> None:
        lab.add_host("a")


    @pytest.mark.netstack_host("a")
    async def test_body_inside_a(lab: Lab, host_a: None) -> None:
        import socket
        assert socket.gethostname() == "a"
""")


@pytest.mark.slow
def test_failures_are_pytest_reports_with_seed_and_pcaps(tmp_path: Path) -> None:
    (tmp_path / "test_fail.py").write_text(FAILING)
    r = run_pytest(tmp_path, "-q", "--netstack-capture-dir", str(tmp_path / "pcaps"))
    out = r.stdout
    assert "2 failed, 3 passed" in out, out
    # pytest's own assertion report, not Trio's ExceptionGroup
    assert "ExceptionGroup" not in out, out
    assert "assert 41 == 42" in out, out
    assert "netstack captures" in out
    # the failing seed and the command that reruns it alone
    assert "failed with lab seed 1; rerun it alone:" in out, out
    assert "pytest 'test_fail.py::test_fails_for_one_seed[seed=1]'" in out, out
    pcaps = sorted(p.name for p in (tmp_path / "pcaps").rglob("*.pcap"))
    assert pcaps == ["a-eth0.pcap", "b-eth0.pcap"], out
    rerun = run_pytest(tmp_path, "-q", "test_fail.py::test_fails_for_one_seed[seed=1]")
    assert "1 failed" in rerun.stdout, rerun.stdout


@pytest.mark.slow
def test_xdist_workers_keep_their_own_pcaps(tmp_path: Path) -> None:
    tests = "\n".join(
        textwrap.dedent(f"""
        async def test_{i}(lab) -> None:
            v4 = {{"net.ipv6.conf.all.disable_ipv6": 1}}
            a, b = lab.add_host("a", sysctls=v4), lab.add_host("b", sysctls=v4)
            lab.add_link("a:eth0", "b:eth0")
            a.ip("addr add 10.0.0.1/24 dev eth0")
            b.ip("addr add 10.0.0.2/24 dev eth0")
            result = await a.ping("10.0.0.2", count={i + 1})
            assert result.received == 0, "fails on purpose"
        """)
        for i in range(4)
    )
    (tmp_path / "test_par.py").write_text(tests)
    pcaps = tmp_path / "pcaps"
    r = run_pytest(tmp_path, "-q", "-n", "2", "--netstack-capture-dir", str(pcaps))
    assert "4 failed" in r.stdout, r.stdout + r.stderr
    workers = sorted(p.name for p in pcaps.iterdir())
    assert workers == ["gw0", "gw1"], workers
    files = sorted(pcaps.rglob("a-eth0.pcap"))
    assert len(files) == 4
    counts = []
    for f in files:
        with f.open("rb") as fh:
            counts.append(sum(1 for _ in dpkt.pcap.Reader(fh)))
    # ARP request + reply, then count x (echo request + reply) on each worker's own lab
    assert sorted(counts) == [4, 6, 8, 10]


ASYNCIO_PROJECT = textwrap.dedent("""
    import asyncio
    import socket

    import pytest
    from netstack import Lab


    async def upper(reader, writer) -> None:
        writer.write((await reader.read(100)).upper())
        await writer.drain()
        writer.close()


    @pytest.fixture
    async def server_on_b(lab: Lab) -> None:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0", kind="nic", delay=0.005)
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        await b.run_asyncio(asyncio.start_server, upper, None, 7)


    @pytest.mark.netstack_asyncio("a")
    async def test_asyncio_body_on_a(lab: Lab, server_on_b: None) -> None:
        assert socket.gethostname() == "a"
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("b", 7)
        writer.write(b"hello")
        assert await reader.read() == b"HELLO"
        writer.close()
        await asyncio.sleep(60)  # virtual
        assert 60 < loop.time() < 60.1


    @pytest.mark.netstack_asyncio("a")
    async def test_asyncio_body_fails(lab: Lab, server_on_b: None) -> None:
        reader, writer = await asyncio.open_connection("10.0.0.2", 7)
        writer.write(b"hello")
        answer = await reader.read()
        writer.close()
        assert answer == b"hello"
""")


@pytest.mark.slow
def test_asyncio_marker_in_a_new_project(tmp_path: Path) -> None:
    (tmp_path / "test_aio.py").write_text(ASYNCIO_PROJECT)
    r = run_pytest(tmp_path, "-q", "--netstack-capture-dir", str(tmp_path / "pcaps"))
    out = r.stdout
    assert "1 failed, 1 passed" in out, out + r.stderr
    assert "ExceptionGroup" not in out, out
    assert "assert b'HELLO' == b'hello'" in out, out
    pcaps = sorted(p.name for p in (tmp_path / "pcaps").rglob("*.pcap"))
    assert pcaps == ["a-eth0.pcap", "b-eth0.pcap"], out


FAILING_PING = textwrap.dedent("""
    async def test_fails(lab) -> None:
        v4 = {"net.ipv6.conf.all.disable_ipv6": 1}
        a, b = lab.add_host("a", sysctls=v4), lab.add_host("b", sysctls=v4)
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        await a.ping("10.0.0.2", count=COUNT)
        assert False, "fails on purpose"
""")

SPREAD = textwrap.dedent("""
    import os
    from pathlib import Path

    import pytest


    @pytest.mark.parametrize("n", range(6))
    async def test_spread(lab, n: int) -> None:
        lab.add_host("a")
        worker = os.environ["PYTEST_XDIST_WORKER"]
        Path("workers", f"{n}-{worker}").write_text(str(os.getpid()))
""")


def _pings(files: list[Path]) -> list[int]:
    counts = []
    for f in files:
        with f.open("rb") as fh:
            counts.append(sum(1 for _ in dpkt.pcap.Reader(fh)))
    return sorted(counts)


@pytest.mark.slow
def test_xdist_workers_keep_their_own_labs_and_pcaps_by_default(tmp_path: Path) -> None:
    """``pytest -n 2 -p xdist`` without ``--netstack-capture-dir``: both workers run
    lab tests, each in its own process, and each writes its pcaps under its own
    basetemp (pytest-xdist's ``BASETEMP/popen-gwN``)."""
    (tmp_path / "test_one.py").write_text(FAILING_PING.replace("COUNT", "1"))
    (tmp_path / "test_two.py").write_text(FAILING_PING.replace("COUNT", "2"))
    (tmp_path / "test_spread.py").write_text(SPREAD)
    (tmp_path / "workers").mkdir()
    basetemp = tmp_path / "basetemp"
    r = run_pytest(tmp_path, "-q", "-n", "2", "-p", "xdist", "--basetemp", str(basetemp))
    assert "2 failed, 6 passed" in r.stdout, r.stdout + r.stderr
    ran = {p.name.split("-")[1]: p.read_text() for p in (tmp_path / "workers").iterdir()}
    assert sorted(ran) == ["gw0", "gw1"], ran  # both workers ran lab tests…
    assert len(set(ran.values())) == 2  # …in two processes
    files = sorted(basetemp.rglob("a-eth0.pcap"))
    assert len({f.parent for f in files}) == len(files) == 2, files
    assert {f.relative_to(basetemp).parts[0] for f in files} <= {"popen-gw0", "popen-gw1"}
    assert _pings(files) == [4, 6]  # ARP request + reply, then 1 and 2 pings
    for f in files:  # the report names each test's own folder
        assert str(f.parent) in r.stdout.replace("\n", ""), r.stdout


@pytest.mark.slow
def test_tests_whose_safe_names_are_the_same_keep_their_own_pcaps(tmp_path: Path) -> None:
    """``test_a/test_b.py::test_fails`` and ``test_a_test_b.py::test_fails`` are the
    same folder name once ``/`` and ``:`` are made safe; the node id's digest
    keeps them apart (before, the second test's pcaps replaced the first's)."""
    (tmp_path / "test_a").mkdir()
    (tmp_path / "test_a" / "test_b.py").write_text(FAILING_PING.replace("COUNT", "1"))
    (tmp_path / "test_a_test_b.py").write_text(FAILING_PING.replace("COUNT", "2"))
    pcaps = tmp_path / "pcaps"
    r = run_pytest(tmp_path, "-q", "--netstack-capture-dir", str(pcaps))
    assert "2 failed" in r.stdout, r.stdout + r.stderr
    files = sorted(pcaps.rglob("a-eth0.pcap"))
    assert len({f.parent for f in files}) == len(files) == 2, files
    assert _pings(files) == [4, 6]


LAB_OPTIONS = textwrap.dedent("""
    import pytest
    from netstack import Lab
    from netstack.testing import TwoHosts


    async def pair_received_in_the_call(a, b) -> bool:
        server = b.socket()
        await server.bind(("0.0.0.0", 5000))
        await a.ping("10.0.0.2", count=1)  # ARP resolved
        a.socket().sendto_nowait(b"x", ("10.0.0.2", 5000))
        return len(server.sock.receive_queue) == 1


    async def test_default(two_hosts: TwoHosts, lab: Lab) -> None:
        assert lab.polls_at_bh_enable
        assert await pair_received_in_the_call(*two_hosts)


    @pytest.mark.netstack_lab(polls_at_bh_enable=False)
    async def test_polls_off(two_hosts: TwoHosts, lab: Lab) -> None:
        assert not lab.polls_at_bh_enable
        assert not two_hosts.a.net.polls_at_bh_enable
        assert not await pair_received_in_the_call(*two_hosts)  # b's NAPI task polls


    @pytest.mark.netstack_lab(polls_at_bh_enable=False, chain_polls=True)
    class TestClass:
        async def test_marked_class(self, lab: Lab) -> None:
            assert not lab.polls_at_bh_enable and lab.chain_polls
            assert not lab.add_host("h").net.polls_at_bh_enable


    @pytest.mark.netstack_lab(seed=3)
    async def test_seed_is_refused(lab: Lab) -> None:
        pass
""")


@pytest.mark.slow
def test_netstack_lab_marker_passes_open_lab_arguments(tmp_path: Path) -> None:
    """``@pytest.mark.netstack_lab(**kwargs)``: the ``lab`` fixture's open_lab()
    arguments, on a test or a class; the seed stays netstack_seed's."""
    (tmp_path / "test_opts.py").write_text(LAB_OPTIONS)
    r = run_pytest(tmp_path, "-q")
    out = r.stdout
    assert "1 failed, 3 passed" in out, out + r.stderr
    assert "_ test_seed_is_refused _" in out, out
    assert "UsageError: @pytest.mark.netstack_lab: seed is the lab fixture's own" in out, out
