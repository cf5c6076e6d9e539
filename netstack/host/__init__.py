"""The composition root: hosts, labs, links, ports, captures.

Only this package knows every concrete class: it builds a Net, installs the
qdiscs, loopback and IPv4 on it, and wires devices between hosts.
"""

from netstack.host.capture import Capture
from netstack.host.host import Host, mac_for
from netstack.host.lab import Lab, Link, open_lab, run
from netstack.host.port import Port

__all__ = ["Capture", "Host", "Lab", "Link", "Port", "mac_for", "open_lab", "run"]
