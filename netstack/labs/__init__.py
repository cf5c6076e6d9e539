"""Labs: lab files, the command table and sessions the shell and checks share.

This package sits above :mod:`netstack.host` and below the ``netstack``
command, the pytest plugin and the experiments, which all use it:

* :mod:`.commands` — the one table of commands a user can type: names mapped
  to the user-space tools' entry points (``ip``, ``sysctl``, ``ping``,
  ``tcpdump``, ``nstat``, ``ss``, ``tc``… in :mod:`netstack.userspace`) and to
  the shell's own commands (:mod:`.builtins`: ``help``, ``sleep``, jobs,
  ``expect``), with tab completion (:mod:`.completion`);
* :mod:`.session` — runs command lines on a lab, with virtual-time rules;
* :mod:`.labfile` — TOML lab files: schema, validation with line numbers,
  building, running steps and checks;
* :mod:`.draw` — topology pictures (SVG, PNG).
"""

from netstack.labs.commands import Command, CommandTable
from netstack.labs.session import Context, Session

__all__ = ["Command", "CommandTable", "Context", "Session"]
