"""The device layer: ``SkBuff``, ``NetDevice``, ``Net``, transmit and receive entries.

See ``docs/design.md`` for how the pieces fit; each module opens with its
theory of operation.
"""
