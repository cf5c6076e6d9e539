"""The two ways a script does not pass: it is bad input, or the stack disagreed.

Both carry the message packetdrill would print, starting ``FILE:LINE:``.
"""

from __future__ import annotations

__all__ = ["PacketdrillError", "ScriptError", "ScriptFailure", "Unsupported"]


class PacketdrillError(Exception):
    """Base class: ``str(e)`` is the whole report (``FILE:LINE: …``)."""

    def __init__(self, message: str, *, path: str = "", line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def __str__(self) -> str:
        return self.message


class ScriptError(PacketdrillError):
    """Bad input: a syntax or semantic error, an unknown name (nothing ran, or the run stopped)."""


class Unsupported(ScriptError):
    """A construct packetdrill knows but this runner does not (the message says what is missing)."""


class ScriptFailure(PacketdrillError):
    """The stack did something other than what the script expects."""
