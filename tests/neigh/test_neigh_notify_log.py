"""neigh_update_notify's debug event: logged through the host's log, only at DEBUG."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

import netstack


async def test_state_changes_are_logged_at_debug(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # the test is asked of the stdlib logger "netstack" itself (pinggc: a frame less
    # than structlog's isEnabledFor, three a ping); the event still goes through the
    # host's own log, with its host and key
    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        with caplog.at_level(logging.INFO, logger="netstack"):
            assert (await a.ping("10.0.0.2")).received == 1
        assert not [r for r in caplog.records if "neigh_state_changed" in r.getMessage()]
        a.ip("neigh flush all")
        b.ip("neigh flush all")
        with caplog.at_level(logging.DEBUG, logger="netstack"):
            assert (await a.ping("10.0.0.2")).received == 1
        lines = [r.getMessage() for r in caplog.records if "neigh_state_changed" in r.getMessage()]
        assert any("host='a'" in line and "key='10.0.0.2'" in line for line in lines)
        assert any("host='b'" in line and "key='10.0.0.1'" in line for line in lines)


async def test_a_logger_the_user_gave_the_host_decides(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # a Net's log replaced by the application's own structlog logger (over the stdlib
    # logger "myapp" at DEBUG, "netstack" left at WARNING): its level decides, not
    # netstack's (the review of pinggc: the fast test asked "netstack" and lost these)
    import structlog

    async with netstack.open_lab() as lab:
        a, b = lab.add_host("a"), lab.add_host("b")
        lab.add_link("a:eth0", "b:eth0")
        a.ip("addr add 10.0.0.1/24 dev eth0")
        b.ip("addr add 10.0.0.2/24 dev eth0")
        a.net.log = structlog.wrap_logger(
            logging.getLogger("myapp"),
            processors=[structlog.stdlib.filter_by_level, structlog.processors.KeyValueRenderer()],
            wrapper_class=structlog.stdlib.BoundLogger,
        ).bind(host="a")
        with (
            caplog.at_level(logging.WARNING, logger="netstack"),
            caplog.at_level(logging.DEBUG, logger="myapp"),
        ):
            assert (await a.ping("10.0.0.2")).received == 1
        lines = [r.getMessage() for r in caplog.records if "neigh_state_changed" in r.getMessage()]
        assert any("host='a'" in line for line in lines), caplog.records
        assert all(r.name == "myapp" for r in caplog.records if "neigh_state" in r.getMessage())
