"""Shared fixtures come from the netstack pytest plugin (netstack.testing.plugin).

``lab`` (an empty lab on the autojump clock, skb poisoning on, pcaps of
failing tests), ``two_hosts``, ``routed_hosts``, ``gre_sites`` and
``topology`` are registered by the ``pytest11`` entry point when netstack is
installed; this file only documents that, and sets the hypothesis profile.
"""

from __future__ import annotations

from hypothesis import settings

# Every property test is deterministic: the same examples on every run and
# machine, no example database carried between runs.
settings.register_profile("netstack", derandomize=True, database=None, deadline=None)
settings.load_profile("netstack")
