"""User space: the programs a user runs on a host, one subpackage per upstream project.

Like the real tools, these only talk to the kernel of the host they run on (a
:class:`~netstack.core.net.Net`, its sockets, its packet taps), never to a lab;
the host layer offers them as ``host.ip("…")``, ``host.tc("…")``,
``host.sysctl("…")``, ``await host.ping(…)``, and the shell's command table
maps each command name to the tool's entry point.

* :mod:`.iproute2` — ``ip`` (:mod:`.iproute2.ip`), ``tc``, ``ss``, ``nstat``;
* :mod:`.ethtool` — ``ethtool``;
* :mod:`.iputils` — ``ping``;
* :mod:`.procps` — ``sysctl``;
* :mod:`.tcpdump` — ``tcpdump`` (options, filter expressions, the printer);
* :mod:`.netperf` — ``netperf`` and ``netserver``;
* :mod:`.packetdrill` — packetdrill scripts (``netstack packetdrill``).

Nothing here runs on the data path (timed mode charges no cost site in it:
``host/sites.py`` skips the package).
"""
