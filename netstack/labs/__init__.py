"""Labs: lab files, the command table and sessions the shell and checks share.

This package sits above :mod:`netstack.host` and below the ``netstack``
command, the pytest plugin and the experiments, which all use it:

* :mod:`.commands` and :mod:`.tools` — the one table of commands a user can
  type (``ip``, ``sysctl``, ``ping``, ``tcpdump``, ``nstat``, ``ss``, ``tc``…);
* :mod:`.session` — runs command lines on a lab, with virtual-time rules;
* :mod:`.labfile` — TOML lab files: schema, validation with line numbers,
  building, running steps and checks;
* :mod:`.draw` — topology pictures (SVG, PNG);
* :mod:`.progress` — progress bars for long runs.
"""

from netstack.labs.commands import Command, CommandTable
from netstack.labs.session import Context, Session

__all__ = ["Command", "CommandTable", "Context", "Session"]
