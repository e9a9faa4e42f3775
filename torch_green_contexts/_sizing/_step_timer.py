"""Device time of latency steps, read without waiting: a CUDA event recorded before the step
and one after, their elapsed time read once the GPU has passed both. The policies use it."""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Hashable

import torch


def _timing_event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


class StepTimer:
    """Times one step in ``sample_every`` with at most ``max_pending`` timings unread; events
    are reused once read."""

    def __init__(self, sample_every: int, max_pending: int) -> None:
        self.sample_every, self.max_pending = sample_every, max_pending
        self.pending: deque[tuple[Hashable, Any, torch.cuda.Event, torch.cuda.Event]] = deque()
        self.pool: list[torch.cuda.Event] = []
        self._open: tuple[Hashable, Any, torch.cuda.Stream, torch.cuda.Event] | None = None

    def begin(self, key: Hashable, tag: Any, stream: torch.cuda.Stream, step: int, timed: bool = True) -> None:
        """Step number ``step`` on layout ``key`` starts on ``stream``: timed when ``timed`` and
        sampled."""
        if self._open is not None:  # the previous step never ended: not timed
            self.pool.append(self._open[3])
            self._open = None
        if timed and step % self.sample_every == 0 and len(self.pending) < self.max_pending:
            start = self.pool.pop() if self.pool else _timing_event()
            start.record(stream)
            self._open = (key, tag, stream, start)

    def end(self) -> None:
        """The step begun last has been launched; nothing for a step that is not timed."""
        if self._open is None:
            return
        key, tag, stream, start = self._open
        self._open = None
        end = self.pool.pop() if self.pool else _timing_event()
        end.record(stream)
        self.pending.append((key, tag, start, end))

    def read(self, observe: Callable[[Hashable, Any, float], None]) -> int:
        """Calls ``observe(key, tag, latency_us)`` for each step the GPU has finished, in
        order, never waiting; returns how many."""
        read = 0
        pending = self.pending
        while pending and pending[0][3].query():  # type: ignore[no-untyped-call]
            key, tag, start, end = pending.popleft()
            observe(key, tag, start.elapsed_time(end) * 1e3)
            self.pool += (start, end)
            read += 1
        return read
