"""Progress bars for long runs (floods, experiments, lab checks), on a terminal only.

Theory of operation: :class:`Progress` draws one line on stderr —
``udpflood  [##########..........]  50%  5000/10000`` — rewriting it in place
with a carriage return, at most ten times a second of wall time, and erases
it when done. When stderr is not a terminal (pipes, CI, tests) it draws
nothing, so output that is parsed or compared stays clean. Wall time is only
used to throttle drawing; nothing it measures depends on it.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A progress bar for *total* steps.

    Args:
        total: number of steps (``update(total)`` is 100 %).
        label: shown before the bar.
        enabled: False to draw nothing; None (default) draws only on a terminal.
        stream: where to draw (default: ``sys.stderr``).
        width: bar width in characters.
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        width: int = 30,
    ) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty is not None and isatty())
        self.enabled = enabled
        self.width = width
        self.done = 0
        self._last = 0.0
        self._drawn = False

    def update(self, done: int) -> None:
        """Record *done* steps; redraw if enough wall time passed."""
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < self.total:
            return
        self._last = now
        self.stream.write("\r" + self.render())
        self.stream.flush()
        self._drawn = True

    def render(self) -> str:
        """The bar's text for the current count."""
        frac = min(self.done / self.total, 1.0)
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        label = f"{self.label}  " if self.label else ""
        return f"{label}[{bar}] {frac * 100:3.0f}%  {self.done}/{self.total}"

    def close(self) -> None:
        """Erase the bar."""
        if self._drawn:
            self.stream.write("\r" + " " * len(self.render()) + "\r")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
