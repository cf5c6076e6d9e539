"""Helpers for testing protocol behaviour with netstack (pytest plugin in ``plugin``)."""
