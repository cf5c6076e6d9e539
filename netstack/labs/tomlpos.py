"""Where each key and array item of a TOML document starts (line, column).

Theory of operation: the standard library's ``tomllib`` parses a lab file but
forgets positions, and a lab-file error must point at its line. After
``tomllib`` has accepted a document (so it is valid TOML), :func:`locate`
scans the text once more with a small tokenizer that understands exactly
what decides positions — table headers ``[a.b]`` and ``[[a]]`` (with the
index of each array-of-tables entry), dotted and quoted keys, the four
string forms, arrays, inline tables and comments — and returns a map from
key paths (``("links", 1, "rate")``, ``("hosts", "a", "commands", 2)``) to
1-based ``(line, column)``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["Path", "locate"]

Path = tuple[str | int, ...]

_BARE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.line_starts = [0]
        for n, ch in enumerate(text):
            if ch == "\n":
                self.line_starts.append(n + 1)
        self.positions: dict[Path, tuple[int, int]] = {}
        self.aot_index: dict[Path, int] = {}

    def pos(self, i: int) -> tuple[int, int]:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= i:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, i - self.line_starts[lo] + 1

    def mark(self, path: Path, i: int) -> None:
        self.positions.setdefault(path, self.pos(i))

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def skip_ws(self, newlines: bool = False) -> None:
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in " \t\r" or (newlines and ch == "\n"):
                self.i += 1
            elif ch == "#" and newlines:
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def skip_line(self) -> None:
        while self.i < len(self.s) and self.s[self.i] != "\n":
            self.i += 1

    # -- keys -----------------------------------------------------------------------------
    def key(self) -> list[str]:
        parts = []
        while True:
            self.skip_ws()
            ch = self.peek()
            if ch in ('"', "'"):
                parts.append(self.string())
            else:
                start = self.i
                while self.peek() in _BARE and self.peek():
                    self.i += 1
                parts.append(self.s[start : self.i])
            self.skip_ws()
            if self.peek() == ".":
                self.i += 1
                continue
            return parts

    def string(self) -> str:
        s = self.s
        if s.startswith('"""', self.i) or s.startswith("'''", self.i):
            q = s[self.i : self.i + 3]
            end = s.find(q, self.i + 3)
            if q == '"""':
                while end > 0 and _escaped(s, end):
                    end = s.find(q, end + 1)
            while s.startswith(q[0], end + 3):  # up to two quotes may end the content
                end += 1
            value = s[self.i + 3 : end]
            self.i = end + 3
            return value
        q = s[self.i]
        j = self.i + 1
        while j < len(s) and s[j] != q:
            if q == '"' and s[j] == "\\":
                j += 1
            j += 1
        value = s[self.i + 1 : j]
        self.i = j + 1
        return value

    # -- values ---------------------------------------------------------------------------------
    def value(self, path: Path) -> None:
        self.skip_ws()
        ch = self.peek()
        if ch in ('"', "'"):
            self.string()
        elif ch == "[":
            self.i += 1
            n = 0
            while True:
                self.skip_ws(newlines=True)
                if self.peek() == "]":
                    self.i += 1
                    return
                self.mark((*path, n), self.i)
                self.value((*path, n))
                n += 1
                self.skip_ws(newlines=True)
                if self.peek() == ",":
                    self.i += 1
        elif ch == "{":
            self.i += 1
            while True:
                self.skip_ws()
                if self.peek() == "}":
                    self.i += 1
                    return
                start = self.i
                keys = self.key()
                sub = (*path, *keys)
                self.mark(sub, start)
                self.skip_ws()
                self.i += 1  # '='
                self.value(sub)
                self.skip_ws()
                if self.peek() == ",":
                    self.i += 1
        else:
            while self.i < len(self.s) and self.s[self.i] not in ",]}\n#":
                self.i += 1

    # -- document ---------------------------------------------------------------------------------
    def document(self) -> None:
        table: Path = ()
        while True:
            self.skip_ws(newlines=True)
            if self.i >= len(self.s):
                return
            start = self.i
            if self.s.startswith("[[", self.i):
                self.i += 2
                name = tuple(self.key())
                index = self.aot_index.get(name, -1) + 1
                self.aot_index[name] = index
                self.i += 2  # ']]'
                self.mark(name, start)
                table = (*name, index)
                self.mark(table, start)
            elif self.peek() == "[":
                self.i += 1
                name = tuple(self.key())
                self.i += 1  # ']'
                for n in range(1, len(name) + 1):
                    self.mark(self._resolve(name[:n]), start)
                table = self._resolve(name)
            else:
                keys = self.key()
                path = (*table, *keys)
                for n in range(len(table) + 1, len(path) + 1):
                    self.mark(path[:n], start)
                self.skip_ws()
                self.i += 1  # '='
                self.value(path)
            self.skip_ws()
            if self.peek() == "#":
                self.skip_line()

    def _resolve(self, name: tuple[str, ...]) -> Path:
        """Insert the current index after each array-of-tables prefix: [links.x] → links/N/x."""
        out: list[str | int] = []
        for n, part in enumerate(name):
            out.append(part)
            idx = self.aot_index.get(name[: n + 1])
            if idx is not None and n + 1 < len(name):
                out.append(idx)
        return tuple(out)


def _escaped(s: str, i: int) -> bool:
    n = 0
    while i - n - 1 >= 0 and s[i - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def locate(text: str) -> dict[Path, tuple[int, int]]:
    """Positions (1-based line, column) of every key path in a valid TOML *text*."""
    scanner = _Scanner(text)
    scanner.document()
    return scanner.positions
