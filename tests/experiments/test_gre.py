"""Seeds 1 and 3 in timed mode: HARD_TX_LOCK on GRE, and the ioctl path that kept it."""

from __future__ import annotations

import pytest

from netstack.experiments import gre_ioctl, gre_lltx


def test_gre_lltx_speed_up_lands_near_the_published_one() -> None:
    result = gre_lltx(calls=60)
    real = result.headline_figure("real before/after")
    assert real.published == pytest.approx(6.05, abs=0.01)
    assert 4.0 <= real.emulated <= 8.0  # the band
    before, after = result.run("before"), result.run("after")
    assert before.figure("gre1 has NETIF_F_LLTX").emulated == 0
    assert after.figure("gre1 has NETIF_F_LLTX").emulated == 1
    # the mechanism: before, the CPUs queue on the tunnel's _xmit_lock and spin
    lock = before.report.lock("gre1:_xmit_lock[0]")
    assert lock.contentions > 0.9 * lock.acquisitions
    assert before.report.share("_raw_spin_lock") > 75
    assert after.report.share("_raw_spin_lock") == 0
    with pytest.raises(KeyError):
        after.report.lock("gre1:_xmit_lock[0]")  # never taken with LLTX
    # sys time follows: every spinning CPU is busy
    assert 4.0 <= result.headline_figure("sys before/after").emulated <= 8.0


@pytest.mark.slow
def test_gre_ioctl_path_keeps_the_lock_until_the_fix() -> None:
    result = gre_ioctl(calls=40)
    before = result.headline_figure("gre before/ipip")
    after = result.headline_figure("gre after/ipip")
    assert before.published == pytest.approx(0.25, abs=0.01)
    assert 0.18 <= before.emulated <= 0.4
    assert 0.9 <= after.emulated <= 1.1
    # what sysfs printed in 2.6.3x: 0x6000 without LLTX, 0x7000 with it; the
    # devices also have the GSO and checksum bits of ip_gre.c's GRE_FEATURES (3.8)
    # and ipip.c's IPIP_FEATURES (3.10)
    sysfs = {r.label: int(r.figure("/sys/class/net/test0/features").emulated) for r in result.runs}
    assert sysfs == {
        "ipip": 0x7000 | 0x1B0869,
        "gre before": 0x6000 | 0x1B0869,
        "gre after": 0x7000 | 0x1B0869,
    }
    assert "0x1b6869" in result.render()
    assert result.run("gre before").report.lock("test0:_xmit_lock[0]").contentions > 0
