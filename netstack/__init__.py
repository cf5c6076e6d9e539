"""netstack: the Linux network stack, emulated layer by layer on Trio.

Start with :func:`open_lab` and :func:`run`::

    import netstack

    async def main():
        async with netstack.open_lab() as lab:
            a, b = lab.add_host("a"), lab.add_host("b")
            lab.add_link("a:eth0", "b:eth0")
            a.ip("addr add 10.0.0.1/24 dev eth0")
            b.ip("addr add 10.0.0.2/24 dev eth0")
            print(await a.ping("10.0.0.2", count=3))

    netstack.run(main)
"""

from netstack.core.patches import Patches
from netstack.errors import ConfigError, NetstackError, SkbPanic, TopologyError
from netstack.host import Capture, Host, Lab, Link, Port, open_lab, run
from netstack.userspace.iputils.ping import PingReply, PingResult

__version__ = "0.1.0"

__all__ = [
    "Capture",
    "ConfigError",
    "Host",
    "Lab",
    "Link",
    "NetstackError",
    "Patches",
    "PingReply",
    "PingResult",
    "Port",
    "SkbPanic",
    "TopologyError",
    "__version__",
    "open_lab",
    "run",
]
