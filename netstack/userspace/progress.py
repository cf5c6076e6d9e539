"""Progress bars for long runs (floods, experiments, lab checks), on a terminal only.

Theory of operation: :class:`Progress` draws one line on stderr —
``udpflood  [##########..........]  50%  5000/10000`` — or, for work whose
steps mean nothing to the reader, the percentage and a note such as the time
left (``experiment gre-lltx (both)  [#####.....]  50%  step 2 of 2, 9 s
left``), rewriting it in place
with a carriage return, at most ten times a second of wall time (at once when the
note changes), and erases
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
        counts: False to show the percentage without ``done/total``.
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        width: int = 30,
        counts: bool = True,
    ) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty is not None and isatty())
        self.enabled = enabled
        self.width = width
        self.counts = counts
        self.note = ""  # shown after the bar (e.g. the time left)
        self.done = 0
        self._last = 0.0
        self._drawn = False
        self._width_drawn = 0
        self._note = ""  # the note drawn last

    def update(self, done: int) -> None:
        """Record *done* steps; redraw if enough wall time passed."""
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < self.total and self.note == self._note:
            return
        self._last, self._note = now, self.note
        text = self.render()
        pad = " " * max(self._width_drawn - len(text), 0)  # a shorter line covers the last
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._width_drawn = max(self._width_drawn, len(text))
        self._drawn = True

    def render(self) -> str:
        """The bar's text for the current count."""
        frac = min(self.done / self.total, 1.0)
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        label = f"{self.label}  " if self.label else ""
        text = f"{label}[{bar}] {frac * 100:3.0f}%"
        if self.counts:
            text += f"  {self.done}/{self.total}"
        return text + (f"  {self.note}" if self.note else "")

    def close(self) -> None:
        """Erase the bar."""
        if self._drawn:
            self.stream.write("\r" + " " * self._width_drawn + "\r")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
