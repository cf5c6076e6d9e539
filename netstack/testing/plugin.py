"""The netstack pytest plugin (registered through the ``pytest11`` entry point).

Theory of operation: installing ``netstack[pytest]`` (netstack with pytest and
pytest-trio) makes these available to every pytest run, with nothing to
configure — no ``trio_mode``, no ``conftest.py``:

* ``lab`` — an empty :class:`~netstack.Lab` with skb poisoning on, seeded by
  ``netstack_seed``. An ``async def`` test that uses it (directly or through
  another fixture) is run by pytest-trio on Trio's autojump ``MockClock``
  (virtual time) — the plugin marks it ``trio`` with its own runner, so a
  project needs no ``trio_mode``, and the test needs no ``autojump_clock``
  argument (one it takes is used);
* ``two_hosts``, ``routed_hosts``, ``gre_sites`` — the canonical topologies
  of :mod:`netstack.testing.topologies` built on ``lab`` (``gre_sites`` skips
  when this netstack cannot make GRE devices);
* ``topology`` — whatever the topology function named by
  ``@pytest.mark.topology(fn=build)`` returns (a lab file works too:
  ``@pytest.mark.topology(fn=lab_file("x.toml"))``);
* ``@pytest.mark.netstack_host("a")`` — the test body runs inside host ``a``
  of its lab (``trio.socket``, ``socket.socket`` and the libraries on them
  reach a's stack), as ``async with lab["a"].as_current():`` would;
* ``@pytest.mark.netstack_asyncio("a")`` — the test body is an *asyncio*
  coroutine and runs as an asyncio task on host ``a`` (the lab's asyncio loop,
  trio-asyncio on the same virtual clock: ``netstack[asyncio]``), as
  ``await lab["a"].run_asyncio(body)`` would; fixtures stay Trio's;
* ``@pytest.mark.netstack_lab(**kwargs)`` — ``lab`` (and the fixtures on it)
  is opened with these :func:`~netstack.open_lab` arguments too, e.g.
  ``polls_at_bh_enable=False`` (each host's NAPI polled by its own task) or
  ``chain_polls=True``; ``seed`` is ``netstack_seed``'s and ``debug_skb`` is
  always on, so neither may be given;
* ``@seeds(N)`` (:func:`seeds`) — the test runs once per lab seed
  ``0 … N-1`` (ids ``seed=K``); a failure names its seed and the one-line
  command that reruns it; ``--netstack-seed K`` runs every lab with seed K;
* **failure reports** — an exception raised inside a lab's block or one of
  its hosts' tasks arrives as itself (pytest's assertion report, not Trio's
  ``ExceptionGroup``), with a "netstack seed" section when seeds are in play;
* **capture on failure** — every device of every host in ``lab`` is captured
  in memory; when a test fails, the captures are written as pcap files
  (``HOST-DEV.pcap``) to a directory of the test's own (its node id made
  safe for a folder name, and a digest of it) that the failure report names
  (section "netstack captures"), ready for ``netstack decode`` or Wireshark. Turn it
  off with ``--netstack-no-capture`` or ``@pytest.mark.netstack_nocapture``;
  choose the directory with ``--netstack-capture-dir`` (under pytest-xdist each
  worker writes below its own ``gwN`` folder there, and by default under its
  own basetemp).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import shlex
from collections.abc import AsyncIterator, Callable, Generator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
import trio.testing

from netstack.core.dev import NETDEV_REGISTER
from netstack.host import Host, Lab, open_lab
from netstack.host.capture import Capture
from netstack.host.lab import sole_exception
from netstack.testing import topologies
from netstack.testing.packetdrill import pytest_collect_file  # collects *.pkt files
from netstack.testing.topologies import GreSites, RoutedHosts, TopologyUnavailable, TwoHosts

__all__ = [
    "capture_all",
    "gre_sites",
    "lab",
    "netstack_seed",
    "pytest_collect_file",
    "routed_hosts",
    "seeds",
    "topology",
    "topology_fixture",
    "two_hosts",
]

F = TypeVar("F", bound=Callable[..., Any])

_CAPTURES_KEY = pytest.StashKey[list[Capture]]()
_LAB_KEY = pytest.StashKey[Lab]()
_INSTALL = "pip install 'netstack[pytest]'"


def seeds(n: int, *, start: int = 0) -> Callable[[F], F]:
    """Run the decorated test once per lab seed ``start … start+n-1``.

    The ``lab`` fixture (and every topology built on it) opens its lab with
    that seed, so each run draws its own TCP ISNs, ports, netem losses …
    A failing run's report names its seed and the command that reruns only it::

        @seeds(20)
        async def test_survives_loss(lab): ...
    """
    if n < 1:
        raise ValueError("seeds(n) needs n >= 1")
    values = list(range(start, start + n))
    mark = pytest.mark.parametrize(
        "netstack_seed", values, indirect=True, ids=[f"seed={v}" for v in values]
    )
    return mark


def netstack_run(
    fn: Callable[[], Any], *, clock: trio.abc.Clock | None = None, instruments: Any = ()
) -> Any:
    """pytest-trio's runner for netstack tests: ``trio.run`` on an autojump
    ``MockClock`` unless the test brought its own clock."""
    if clock is None:
        clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(fn, clock=clock, instruments=instruments)


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

    group.addoption(
        "--netstack-seed",
        metavar="SEED",
        type=int,
        help="open every lab with this seed (overrides @seeds)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "topology(fn=build): the topology function the `topology` fixture builds"
    )
    config.addinivalue_line("markers", "netstack_nocapture: do not capture this test's lab devices")
    config.addinivalue_line(
        "markers",
        "netstack_lab(**kwargs): open the `lab` fixture's lab with these open_lab() "
        "arguments too (e.g. polls_at_bh_enable=False)",
    )
    config.addinivalue_line(
        "markers", "netstack_host(name): run the test body inside host NAME of its lab"
    )
    config.addinivalue_line(
        "markers",
        "netstack_asyncio(name): run the test body, an asyncio coroutine, as an asyncio "
        "task on host NAME of its lab",
    )


def _has_pytest_trio() -> bool:
    try:
        import pytest_trio  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the async tests that use a lab ``trio`` with netstack's runner.

    This runs before pytest-trio's own ``trio_mode`` marking, and the first
    ``trio`` marker is the one pytest-trio obeys: with or without
    ``trio_mode``, such tests run on the autojump clock.
    """
    trio_ok: bool | None = None
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        fn = item.obj
        fn = getattr(getattr(fn, "hypothesis", None), "inner_test", fn)
        uses_lab = (
            "lab" in item.fixturenames
            or item.get_closest_marker("netstack_host")
            or item.get_closest_marker("netstack_asyncio")
        )
        if not uses_lab or not inspect.iscoroutinefunction(fn):
            continue
        if trio_ok is None:
            trio_ok = _has_pytest_trio()
        if not trio_ok:
            raise pytest.UsageError(
                f"{item.nodeid} uses netstack's lab fixture, which needs pytest-trio: {_INSTALL}"
            )
        item.add_marker(pytest.mark.trio(run=netstack_run), append=False)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    for kind in ("netstack_host", "netstack_asyncio"):
        marker = item.get_closest_marker(kind)
        if marker is not None and isinstance(item, pytest.Function):
            name = marker.args[0] if marker.args else marker.kwargs.get("name")
            if not isinstance(name, str):
                raise pytest.UsageError(f'use @pytest.mark.{kind}("a") with a host name')
            item.obj = _inside_host(item, item.obj, name, kind)
            break
    return (yield)


def _inside_host(
    item: pytest.Item, fn: Callable[..., Any], name: str, kind: str = "netstack_host"
) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def run_inside(**kwargs: Any) -> Any:
        lab = item.stash.get(_LAB_KEY, None)
        if lab is None:
            raise pytest.UsageError(
                f"@pytest.mark.{kind}({name!r}) needs the test to use the lab fixture"
            )
        if name not in lab.hosts:
            raise pytest.UsageError(
                f"@pytest.mark.{kind}({name!r}): the lab has no host {name!r} when the "
                "test body starts; build the topology in a fixture (or the topology marker)"
            )
        if kind == "netstack_asyncio":
            return await lab.hosts[name].run_asyncio(fn, **kwargs)
        async with lab.hosts[name].as_current():
            return await fn(**kwargs)

    return run_inside


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, BaseExceptionGroup):
        # one failure inside a lab (a host task, a nursery of the test) → pytest's
        # own report of it, assertion introspection included
        leaf = sole_exception(excinfo.value)
        if leaf is not None and not isinstance(leaf, trio.Cancelled):
            call.excinfo = pytest.ExceptionInfo.from_exception(leaf)
    report = yield
    if report.when == "call" and report.failed:
        seed = _seed_of(item)
        if seed is not None:
            rerun = ["pytest", item.nodeid]
            if "[" not in item.nodeid:
                rerun.insert(1, f"--netstack-seed={seed}")
            report.sections.append(
                ("netstack seed", f"failed with lab seed {seed}; rerun it alone:\n  "
                 + shlex.join(rerun))
            )  # fmt: skip
    captures = item.stash.get(_CAPTURES_KEY, None)
    if report.when == "call" and report.failed and captures:
        # pytest-trio runs fixture teardown inside the test's trio.run, before this
        # report exists, so the pcaps are written here rather than in the fixture.
        opt = item.config.getoption("--netstack-capture-dir")
        worker = getattr(item.config, "workerinput", {}).get("workerid")
        if opt:
            base = Path(opt) / worker if worker else Path(opt)
        else:
            base = item.config._tmp_path_factory.getbasetemp() / "netstack-pcaps"  # type: ignore[attr-defined]
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

    # the node id made safe for a folder name (and shortened) is no longer unique
    # (``a/b.py::t`` and ``a_b.py::t``): its digest keeps tests apart
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in item.nodeid)[-110:]
    digest = hashlib.sha1(item.nodeid.encode(), usedforsecurity=False).hexdigest()[:8]
    target = base / f"{safe}-{digest}"
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


def _seed_of(item: pytest.Item) -> int | None:
    forced = item.config.getoption("--netstack-seed")
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "netstack_seed" in callspec.params:
        return int(forced if forced is not None else callspec.params["netstack_seed"])
    if forced is not None and "lab" in getattr(item, "fixturenames", ()):
        return int(forced)
    return None


@pytest.fixture
def netstack_seed(request: pytest.FixtureRequest) -> int:
    """The seed the ``lab`` fixture opens its lab with: ``--netstack-seed``, else the
    ``@seeds`` parameter, else 0."""
    forced = request.config.getoption("--netstack-seed")
    if forced is not None:
        return int(forced)
    return int(getattr(request, "param", 0))


@pytest.fixture
async def lab(request: pytest.FixtureRequest, netstack_seed: int) -> AsyncIterator[Lab]:
    """An empty lab (seeded by ``netstack_seed``), skb poisoning on, captured for failure
    reports. Tests using it run on Trio's autojump clock (virtual time).
    ``@pytest.mark.netstack_lab(**kwargs)`` adds :func:`open_lab` arguments."""
    __tracebackhide__ = True
    nocapture = request.config.getoption("--netstack-no-capture") or (
        request.node.get_closest_marker("netstack_nocapture") is not None
    )
    marker = request.node.get_closest_marker("netstack_lab")
    options: dict[str, Any] = {}
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("@pytest.mark.netstack_lab takes keyword arguments only")
        fixed = sorted({"seed", "debug_skb"} & marker.kwargs.keys())
        if fixed:
            raise pytest.UsageError(
                f"@pytest.mark.netstack_lab: {', '.join(fixed)} is the lab fixture's own "
                "(the seed is netstack_seed's: @seeds(N) or --netstack-seed)"
            )
        options = dict(marker.kwargs)
    captures: list[Capture] = []
    async with open_lab(seed=netstack_seed, debug_skb=True, **options) as the_lab:
        request.node.stash[_LAB_KEY] = the_lab
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
