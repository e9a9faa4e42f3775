"""Runs of the engine's schedulers over a whole trace, for the tests: the serve loop with a
recorder, returning the run log the metrics read."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from examples.pd.bench.metrics import RunLog
from examples.pd.bench.recorder import RunRecorder
from examples.pd.engine.admission import FCFS, Order
from examples.pd.engine.chunked import ChunkedDevice, ChunkedScheduler
from examples.pd.engine.overlap import OverlapDevice, OverlapScheduler
from examples.pd.engine.planning import PrefillCursor
from examples.pd.engine.request import Request, Slo
from examples.pd.engine.serve import Clock, Requests, serve
from examples.pd.engine.steps import EngineSettings


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    slots: int
    buckets: Sequence[int]
    cap_s: float
    poll_s: float = 50e-6
    progress: Callable[[int, int, float], Any] | None = None
    order: Order = FCFS
    slo: Slo | None = None

    def engine(self) -> EngineSettings:
        return EngineSettings(self.slots, self.buckets, self.order, self.slo)


def _serve(scheduler: Any, trace: Sequence[Request], settings: LoopSettings, clock: Clock) -> RunLog:
    recorder = RunRecorder(trace, settings.progress)
    seconds, cut_off = serve(scheduler, Requests(trace), recorder, clock, cap_s=settings.cap_s, poll_s=settings.poll_s)
    return recorder.log(seconds, cut_off)


def run_chunked(trace: Sequence[Request], device: ChunkedDevice, budget: int, settings: LoopSettings,
                clock: Clock) -> RunLog:
    return _serve(ChunkedScheduler(device, budget, settings.engine()), trace, settings, clock)


def run_overlap(trace: Sequence[Request], device: OverlapDevice, cursor: PrefillCursor, depth: int,
                settings: LoopSettings, clock: Clock) -> RunLog:
    return _serve(OverlapScheduler(device, cursor, depth, settings.engine()), trace, settings, clock)
