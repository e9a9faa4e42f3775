"""Chunked prefill, as vLLM and SGLang run it: each iteration is one forward pass of every
decoding request's next token and prompt chunks (in the admission order) up to a token budget.
Plain Python over a :class:`ChunkedDevice`."""

from __future__ import annotations

from typing import Protocol

from .admission import Live, PrefillQueue
from .planning import ChunkedPlan, bucket_for, compose_chunked
from .request import Request
from .steps import Books, DecodeStep, EngineSettings, Pending, StepResult, Wait


class ChunkedDevice(Protocol):
    def iteration(self, plan: ChunkedPlan, bucket: int) -> Pending:
        """Launch one iteration: a decode-only one replays the graph of ``bucket`` rows."""


class ChunkedScheduler:
    """One iteration of at most ``budget`` tokens in flight at a time on ``device``."""

    def __init__(self, device: ChunkedDevice, budget: int, settings: EngineSettings) -> None:
        if budget < 1:
            raise ValueError(f"budget must be at least 1 token, got {budget}")
        self.device, self.budget, self.settings = device, budget, settings
        self.books = Books(settings)
        self.queue = PrefillQueue(settings.order)
        self.decoding: list[Live] = []
        self._inflight: tuple[ChunkedPlan, int, float, Pending] | None = None

    def add(self, request: Request) -> None:
        """``request`` has arrived."""
        self.books.add(request)

    @property
    def mid_step(self) -> bool:
        """An iteration is in flight."""
        return self._inflight is not None

    @property
    def idle(self) -> bool:
        """Nothing to do for the requests added so far."""
        return self._inflight is None and self.books.admission.empty and not self.queue and not self.decoding

    def step(self, now: float) -> StepResult:
        if self._inflight is None:
            for live in self.books.admit(now):
                self.queue.add(live)
            plan = compose_chunked(self.decoding, self.queue, self.budget, now)
            if not plan.tokens:
                return self.books.result(Wait.ARRIVAL)
            bucket = bucket_for(len(plan.decode), self.settings.buckets) if plan.decode else 0
            self._inflight = (plan, bucket, now, self.device.iteration(plan, bucket))
        plan, bucket, launched, pending = self._inflight
        if not pending.done():
            return self.books.result(Wait.POLL)
        self._inflight = None
        decoded = None
        if plan.decode:
            decoded = DecodeStep(launched, now, len(plan.decode), bucket, "mixed" if plan.parts else "decode only")
        for live in plan.decode:
            self.books.add_token(live, now)
        self.decoding = [live for live in self.decoding if live.finish is None]
        for part in plan.parts:
            if part.completes:
                self.books.first_token(part.live, now)
                if part.live.finish is None:
                    self.decoding.append(part.live)
        return self.books.result(Wait.NONE, decoded)
