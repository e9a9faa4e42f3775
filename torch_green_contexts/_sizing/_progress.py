"""A progress line for long-running work, on standard error; silenced with ``enabled=False``."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``done`` of ``total`` units of work, the elapsed time and an estimate of what is left.

    On a terminal the line is redrawn in place; elsewhere (logs, CI) a line is printed at most
    every ``every_s`` seconds, and always at the end.
    """

    def __init__(self, what: str, total: int, *, enabled: bool = True, stream: TextIO | None = None,
                 every_s: float = 5.0) -> None:
        self.what, self.total, self.enabled = what, max(total, 1), enabled
        self.stream = sys.stderr if stream is None else stream
        self.every_s = every_s
        self.began = time.perf_counter()
        self.done = 0
        self._last_print = -float("inf")
        self._inline = bool(getattr(self.stream, "isatty", lambda: False)())

    def advance(self, units: int = 1, note: str = "") -> None:
        self.done = min(self.done + units, self.total)
        if not self.enabled:
            return
        now = time.perf_counter()
        if self._inline or now - self._last_print >= self.every_s or self.done == self.total:
            self._last_print = now
            self._write(self.line(now, note))

    def line(self, now: float | None = None, note: str = "") -> str:
        elapsed = (time.perf_counter() if now is None else now) - self.began
        left = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        eta = f", about {left:.0f} s left" if self.done and self.done < self.total else ""
        extra = f" ({note})" if note else ""
        return f"{self.what}: {self.done}/{self.total}{extra}, {elapsed:.1f} s{eta}"

    def close(self) -> None:
        if self.enabled and self._inline:
            self.stream.write("\n")
            self.stream.flush()

    def _write(self, text: str) -> None:
        if self._inline:
            self.stream.write("\r\x1b[2K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
