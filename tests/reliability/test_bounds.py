"""Issue 13, item 6: every size a user can type is bounded, with a clear error.

A two-line lab file asking for a billion CPUs used to hang ``netstack check``
(per-CPU state is allocated up front) until memory ran out. CPUs are bounded
by ``NR_CPUS`` (8192, ``CONFIG_NR_CPUS`` of a MAXSMP kernel); NIC queue
counts, fq_codel flows, ping sizes and ``txqueuelen`` already had the
kernel's or iproute2's limits, checked here too.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from netstack.cli.labs import check_lab_file
from netstack.cpu.cpu import NR_CPUS
from netstack.errors import ConfigError
from netstack.host import Lab


def test_a_two_line_lab_file_with_a_billion_cpus_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text("[hosts.a]\ncpus = 1000000000\n")
    out, err = io.StringIO(), io.StringIO()
    assert check_lab_file(str(path), out=out, err=err) == 2
    assert err.getvalue() == f"{path}:2:1: cpus: must be 1..8192 (NR_CPUS)\n"


async def test_add_host_is_bounded_by_nr_cpus(lab: Lab, autojump_clock: object) -> None:
    with pytest.raises(ValueError, match=r"at most NR_CPUS \(8192\) CPUs, not 1000000000"):
        lab.add_host("a", cpus=1_000_000_000)
    with pytest.raises(ValueError, match="at least one CPU"):
        lab.add_host("b", cpus=0)
    h = lab.add_host("c", cpus=NR_CPUS)  # the largest is allowed, and quick
    assert len(h.net.cpus) == NR_CPUS == 8192


async def test_other_sizes_keep_their_limits(lab: Lab, autojump_clock: object) -> None:
    a = lab.add_host("a")
    lab.add_host("b")
    with pytest.raises(ValueError, match=r"queues must be 1\.\.64"):
        lab.add_link("a:eth0", "b:eth0", kind="nic", queues=100_000)
    a.ip("link add d0 type dummy")
    with pytest.raises(ConfigError, match='Invalid "txqueuelen" value'):
        a.ip("link set d0 txqueuelen 4294967296")  # iproute2 6.1 says the same
    with pytest.raises(ConfigError):
        a.tc("qdisc add dev d0 root fq_codel flows 1000000000")  # fq_codel: at most 65536
