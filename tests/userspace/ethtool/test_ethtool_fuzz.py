"""Random ``ethtool`` command lines: each one works or raises ConfigError with
a message, and the device keeps working."""

from __future__ import annotations

import shlex

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netstack.errors import ConfigError
from netstack.host import open_lab

WORDS = [
    "-k", "-K", "-l", "-L", "-x", "-X", "-n", "-N", "-u", "-U", "-S", "-g", "--show-features",
    "eth0", "eth1", "lo", "rx", "tx", "combined", "other", "0", "1", "2", "4", "64", "65",
    "equal", "weight", "default", "hkey", "start", "rx-flow-hash", "tcp4", "udp4", "tcp6",
    "udp6", "ip4", "sctp4", "sd", "sdfn", "sdf", "r", "mvt", "gro", "gso", "tso", "on", "off",
    "rxhash", "tx-checksumming", "00:11", "-1", "",
]  # fmt: skip


@settings(  # deterministic by the suite's profile (tests/conftest.py)
    max_examples=100,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.lists(
        st.one_of(st.sampled_from(WORDS), st.text(min_size=0, max_size=5)),
        min_size=0,
        max_size=8,
    )
)
@pytest.mark.slow
def test_fuzz_ethtool_never_crashes(words: list[str]) -> None:
    async def main() -> None:
        async with open_lab() as lab:
            lab.add_host("a")
            h = lab.add_host("h", cpus=4)
            lab.add_link("a:eth0", "h:eth0", kind="nic")
            try:
                out = h.ethtool(" ".join(shlex.quote(w) for w in words))
            except ConfigError as e:
                out = str(e)
                assert out, "a refusal always says something"
            assert isinstance(out, str)
            # the device still answers, and its RSS state is consistent
            assert h.ethtool("-l eth0").startswith("Channel parameters for eth0:")
            priv = h.dev("eth0").priv
            assert len(priv.napis) == len(priv.rx_rings) == priv.rss.n_rings
            assert max(priv.rss.indir) < priv.rss.n_rings

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
