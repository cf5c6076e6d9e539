"""Shared fixtures come from the netstack pytest plugin (netstack.testing.plugin).

``lab`` (an empty lab on the autojump clock, skb poisoning on, pcaps of
failing tests), ``two_hosts``, ``routed_hosts``, ``gre_sites`` and
``topology`` are registered by the ``pytest11`` entry point when netstack is
installed; this file only documents that.
"""
