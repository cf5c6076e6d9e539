"""The netstack pytest plugin (registered through the ``pytest11`` entry point).

Theory of operation: installing netstack makes these available to every
pytest run (with pytest-trio in ``trio_mode``):

* ``lab`` — an empty :class:`~netstack.Lab` on Trio's autojump clock, with
  skb poisoning on. The test function must take ``autojump_clock`` too:
  pytest-trio hands ``trio.run`` the clock only when the test itself asks
  for it (the fixture says so clearly if it was forgotten);
* ``two_hosts``, ``routed_hosts``, ``gre_sites`` — the canonical topologies
  of :mod:`netstack.testing.topologies` built on ``lab`` (``gre_sites`` skips
  when this netstack cannot make GRE devices);
* ``topology`` — whatever the topology function named by
  ``@pytest.mark.topology(fn=build)`` returns (a lab file works too:
  ``@pytest.mark.topology(fn=lab_file("x.toml"))``; pytest would take a
  lone positional function for the decorated test, hence ``fn=``, or
  ``pytest.mark.topology.with_args(build)``);
* **capture on failure** — every device of every host in ``lab`` is captured
  in memory; when a test fails, the captures are written as pcap files
  (``HOST-DEV.pcap``) to a directory that the failure report names (section
  "netstack captures"), ready for ``netstack decode`` or Wireshark. Turn it
  off with ``--netstack-no-capture`` or ``@pytest.mark.netstack_nocapture``;
  choose the directory with ``--netstack-capture-dir``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Generator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from netstack.core.dev import NETDEV_REGISTER
from netstack.host import Host, Lab, open_lab
from netstack.host.capture import Capture
from netstack.testing import topologies
from netstack.testing.packetdrill import pytest_collect_file  # collects *.pkt files
from netstack.testing.topologies import GreSites, RoutedHosts, TopologyUnavailable, TwoHosts

__all__ = [
    "capture_all",
    "gre_sites",
    "lab",
    "pytest_collect_file",
    "routed_hosts",
    "topology",
    "topology_fixture",
    "two_hosts",
]

_CAPTURES_KEY = pytest.StashKey[list[Capture]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netstack")
    group.addoption(
        "--netstack-no-capture",
        action="store_true",
        help="do not capture the lab fixture's devices (no pcaps on failure)",
    )
    group.addoption(
        "--netstack-capture-dir",
        metavar="DIR",
        help="where failing tests' pcaps go (default: a directory under pytest's basetemp)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "topology(fn=build): the topology function the `topology` fixture builds"
    )
    config.addinivalue_line("markers", "netstack_nocapture: do not capture this test's lab devices")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    captures = item.stash.get(_CAPTURES_KEY, None)
    if report.when == "call" and report.failed and captures:
        # pytest-trio runs fixture teardown inside the test's trio.run, before this
        # report exists, so the pcaps are written here rather than in the fixture.
        opt = item.config.getoption("--netstack-capture-dir")
        base = (
            Path(opt) if opt else item.config._tmp_path_factory.getbasetemp() / "netstack-pcaps"  # type: ignore[attr-defined]
        )
        paths = _write_pcaps(item, captures, base)
        report.sections.append(
            ("netstack captures", f"{len(paths)} pcap files in {paths[0].parent}:\n"
             + "\n".join(f"  {p.name}" for p in paths))
        )  # fmt: skip
    return report


def capture_all(host: Host, captures: list[Capture]) -> None:
    """Capture (in memory) every device of *host*, now and as devices appear."""

    def start(dev: Any) -> None:
        if dev.name == "lo":
            return
        cap = Capture(host.net, dev, None, keep=True)
        host.captures.append(cap)
        captures.append(cap)

    for dev in host.devices:
        start(dev)

    def notifier(event: int, dev: Any) -> None:
        if event == NETDEV_REGISTER:
            start(dev)

    host.net.register_netdevice_notifier(notifier)


def _write_pcaps(item: pytest.Item, captures: list[Capture], base: Path) -> list[Path]:
    import dpkt

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in item.nodeid)[-120:]
    target = base / safe
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    seen: set[str] = set()
    for cap in captures:
        host = cap.net.name
        name = f"{host}-{cap.dev.name}"
        while name in seen:
            name += "_"
        seen.add(name)
        path = target / f"{name}.pcap"
        with path.open("wb") as f:
            writer = dpkt.pcap.Writer(f, snaplen=cap.snaplen)
            for ts, data, _out in cap.frames:
                writer.writepkt(data, ts=ts)
        paths.append(path)
    return paths


@pytest.fixture
async def lab(
    request: pytest.FixtureRequest, autojump_clock: trio.testing.MockClock
) -> AsyncIterator[Lab]:
    """An empty lab on the autojump clock, skb poisoning on, captured for failure reports."""
    if trio.lowlevel.current_clock() is not autojump_clock:
        raise RuntimeError(
            "tests using the lab fixture must also take autojump_clock "
            "(pytest-trio gives trio.run the clock only when the test function asks for it)"
        )
    nocapture = request.config.getoption("--netstack-no-capture") or (
        request.node.get_closest_marker("netstack_nocapture") is not None
    )
    captures: list[Capture] = []
    async with open_lab(debug_skb=True) as the_lab:
        if not nocapture:
            add_host = the_lab.add_host

            def add_host_captured(name: str, **kw: Any) -> Host:
                host = add_host(name, **kw)
                capture_all(host, captures)
                return host

            the_lab.add_host = add_host_captured  # type: ignore[method-assign]
            request.node.stash[_CAPTURES_KEY] = captures
        yield the_lab


@pytest.fixture
async def two_hosts(lab: Lab) -> TwoHosts:
    """``a`` (10.0.0.1/24) and ``b`` (10.0.0.2/24) on a veth pair."""
    return topologies.two_hosts(lab)


@pytest.fixture
async def routed_hosts(lab: Lab) -> RoutedHosts:
    """``h1`` — ``router`` — ``h2`` (see :func:`netstack.testing.topologies.routed_hosts`)."""
    return topologies.routed_hosts(lab)


@pytest.fixture
async def gre_sites(lab: Lab) -> GreSites:
    """Two sites joined by a GRE tunnel; skipped where GRE devices cannot be made."""
    try:
        return topologies.gre_sites(lab)
    except TopologyUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture
async def topology(request: pytest.FixtureRequest, lab: Lab) -> Any:
    """What the ``@pytest.mark.topology(fn=build)`` function returns for this test's lab."""
    marker = request.node.get_closest_marker("topology")
    fn = None
    if marker is not None:
        fn = marker.args[0] if marker.args else marker.kwargs.get("fn")
    if fn is None:
        raise pytest.UsageError("the topology fixture needs @pytest.mark.topology(fn=build)")
    return await _build(fn, lab)


async def _build(fn: Callable[[Lab], Any], lab: Lab) -> Any:
    try:
        result = fn(lab)
        if inspect.isawaitable(result):
            result = await result
    except TopologyUnavailable as e:
        pytest.skip(str(e))
    return result


def topology_fixture(fn: Callable[[Lab], Any], name: str | None = None) -> Any:
    """Make a fixture (named *name*, default the function's name) that builds *fn* on ``lab``.

    Use in a test module or conftest::

        my_net = topology_fixture(build_my_net)
    """

    async def fixture(lab: Lab) -> Any:
        return await _build(fn, lab)

    fixture.__name__ = name or str(getattr(fn, "__name__", "topology"))
    fixture.__doc__ = f"The topology built by {getattr(fn, '__qualname__', fn)!r}."
    return pytest.fixture(name=fixture.__name__)(fixture)
