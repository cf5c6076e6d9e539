"""``ip``: iproute2's front end (placeholder until the full command set lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from netstack.errors import ConfigError

if TYPE_CHECKING:
    from netstack.core.net import Net


def ip(net: Net, command: str) -> str:
    raise ConfigError(f'Object "{command}" is unknown, try "ip help".')
