"""A device timeline of the engine's work (GPU): CUDA events around each decode step, prefill
piece and chunked iteration, read once the run is over into start and end times on one clock,
with what each work held (rows, context tokens, prompt tokens, attention pairs). It is what the
simulator's costs are checked against; the engine records it only when asked."""

from __future__ import annotations

import time
from typing import Any

import torch


def _timing_event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


class Timeline:
    """Works recorded as (kind, lane, role, figures, start event, end event, host time)."""

    def __init__(self, stream: torch.cuda.Stream) -> None:
        self.origin = _timing_event()
        self.origin.record(stream)
        self.began = time.perf_counter()
        self.works: list[tuple[str, str, str, dict[str, int], torch.cuda.Event, torch.cuda.Event, float]] = []
        self._open: tuple[str, str, str, dict[str, int], torch.cuda.Event, float] | None = None

    def begin(self, kind: str, lane: str, role: str, stream: torch.cuda.Stream, **figures: int) -> None:
        start = _timing_event()
        start.record(stream)
        self._open = (kind, lane, role, figures, start, time.perf_counter() - self.began)

    def end(self, stream: torch.cuda.Stream) -> None:
        if self._open is None:
            return
        kind, lane, role, figures, start, host = self._open
        self._open = None
        end = _timing_event()
        end.record(stream)
        self.works.append((kind, lane, role, figures, start, end, host))

    def read(self) -> list[dict[str, Any]]:
        """Every work with its device start and end (ms since the timeline began) and the host
        time of its launch (s); waits for the device."""
        torch.cuda.synchronize()
        return [{"kind": kind, "lane": lane, "role": role, **figures, "host_s": round(host, 6),
                 "start_ms": round(self.origin.elapsed_time(start), 4), "end_ms": round(self.origin.elapsed_time(end), 4)}
                for kind, lane, role, figures, start, end, host in self.works]
