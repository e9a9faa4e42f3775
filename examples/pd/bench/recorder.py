"""A run's recorder: what the serve loop reports of each step, as the run log the metrics read
(requests, decode steps, the gaps between tokens), and progress once a second."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..engine.request import Request
from ..engine.steps import DecodeStep, StepResult
from .metrics import RequestRecord, RunLog


class RunRecorder:
    """Records a run over ``trace``; ``progress(finished, requests, seconds)`` is called about
    once a second."""

    def __init__(self, trace: Sequence[Request], progress: Callable[[int, int, float], Any] | None = None) -> None:
        self.trace, self.progress = trace, progress
        self.steps: list[DecodeStep] = []
        self.gaps: list[float] = []
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.finish: dict[int, float] = {}
        self.tokens: dict[int, int] = {}
        self._reported = 0.0

    def record(self, now: float, result: StepResult) -> None:
        if result.decoded is not None:
            self.steps.append(result.decoded)
        for token in result.tokens:
            rid = token.request.id
            if token.first:
                self.first[rid] = token.at
                self.tokens[rid] = 1
            else:
                self.gaps.append(token.at - self.last[rid])
                self.tokens[rid] += 1
            self.last[rid] = token.at
            if token.last:
                self.finish[rid] = token.at
        if self.progress is not None and now - self._reported >= 1.0:
            self._reported = now
            self.progress(len(self.finish), len(self.trace), now)

    def log(self, now: float, cut_off: bool) -> RunLog:
        """The run log at ``now``, when serving ended (``cut_off``: by the time cap)."""
        gaps = list(self.gaps)
        if cut_off:  # the wait of every request cut off while decoding, so far
            gaps.extend(now - last for rid, last in self.last.items() if rid not in self.finish)
        records = [RequestRecord(r.id, r.arrival, r.prompt, r.output, self.first.get(r.id), self.finish.get(r.id),
                                 self.tokens.get(r.id, 0)) for r in self.trace]
        return RunLog(records, list(self.steps), now, cut_off, gaps)
