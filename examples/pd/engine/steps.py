"""What the schedulers share: the device they launch work on, what a step reports, what a
layout choice sees, and the books of the requests holding KV slots. Plain Python (no torch).

A scheduler is step-shaped: requests enter one at a time (``add``), and each ``step(now)``
makes one scheduling decision or one look at the work in flight, and says what ran and what
finished (:class:`StepResult`) and when to call again (:class:`Wait`). ``serve.serve`` drives one.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from typing import Protocol, Sequence

from .admission import FCFS, Admission, Live, Order
from .request import Request, Slo


class Pending(Protocol):
    """Work launched on the device; ``done`` asks without waiting (an event query)."""

    def done(self) -> bool: ...


class Marker(Protocol):
    """The end of one request's prefill on the batch side (an event, or a handoff)."""

    def ready(self) -> bool: ...


class Wait(enum.Enum):
    """When to call ``step`` again: at once, after a look's pause (work is in flight), or at
    the next arrival (nothing can run)."""

    NONE = "none"
    POLL = "poll"
    ARRIVAL = "arrival"


@dataclasses.dataclass(frozen=True)
class DecodeStep:
    """A decode step (for chunked prefill: an iteration that carried decode tokens): launched
    and answered at these times, ``batch`` requests padded to ``bucket`` rows, on ``lane``."""

    launched: float
    ended: float
    batch: int
    bucket: int
    lane: str

    @property
    def seconds(self) -> float:
        return self.ended - self.launched


@dataclasses.dataclass(frozen=True)
class Token:
    """An output token of ``request`` reached the host at ``at``; ``first``: its prefill's;
    ``last``: the request has all its output tokens."""

    request: Request
    at: float
    first: bool
    last: bool


@dataclasses.dataclass(frozen=True)
class StepResult:
    """What one ``step`` did: the decode step it finished (if any), the tokens that reached the
    host, and when to call again."""

    wait: Wait
    decoded: DecodeStep | None = None
    tokens: tuple[Token, ...] = ()


@dataclasses.dataclass(frozen=True)
class StepState:
    """What a layout choice may look at before a decode step: the step's rows (``bucket``,
    padded) and the context tokens its requests hold; prompt tokens waiting for prefill; the
    smallest TPOT slack of the decoding requests (their token budget at the TPOT SLO so far less
    the time taken) and the smallest TTFT slack of the requests without a first token (None:
    none waiting), in seconds; the share of the KV slots held."""

    bucket: int
    context_tokens: int
    prefill_tokens: int
    tpot_slack_s: float
    ttft_slack_s: float | None
    kv_used: float = 0.0  # the share of the KV slots held


@dataclasses.dataclass(frozen=True)
class EngineSettings:
    """What every scheduler shares: KV slots, decode buckets, the admission order and the SLOs
    (for the slacks of :class:`StepState`; infinite slack without them)."""

    slots: int
    buckets: Sequence[int]
    order: Order = FCFS
    slo: Slo | None = None


class Books:
    """Admission and the token accounting of the requests holding slots; collects the tokens of
    the current step."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.admission = Admission(settings.slots, settings.order)
        self.tokens: list[Token] = []

    def add(self, request: Request) -> None:
        self.admission.add(request)

    def admit(self, now: float) -> list[Live]:
        self.admission.arrive()
        return self.admission.admit(now)

    def first_token(self, live: Live, now: float) -> None:
        live.first_token, live.last_token, live.tokens = now, now, 1
        self._token(live, now, first=True)

    def add_token(self, live: Live, now: float) -> None:
        live.tokens += 1
        live.last_token = now
        self._token(live, now, first=False)

    def _token(self, live: Live, now: float, first: bool) -> None:
        last = live.tokens >= live.request.output
        if last:
            live.finish = now
            self.admission.release(live)
        self.tokens.append(Token(live.request, now, first, last))

    def result(self, wait: Wait, decoded: DecodeStep | None = None) -> StepResult:
        tokens, self.tokens = tuple(self.tokens), []
        return StepResult(wait, decoded, tokens)

    def state(self, decoding: Sequence[Live], bucket: int, prefill_tokens: int, unstarted: Sequence[Live],
              now: float) -> StepState:
        """The figures of :class:`StepState` for a step of ``decoding`` now; ``unstarted``: the
        requests holding a slot that have no first token yet."""
        slo = self.settings.slo
        context = sum(live.request.prompt + live.tokens for live in decoding)
        kv_used = self.admission.held / self.admission.slots
        if slo is None:
            return StepState(bucket, context, prefill_tokens, float("inf"), None, kv_used)
        tpot = min(((live.tokens - 1) * slo.tpot - (now - live.first_token) for live in decoding
                    if live.first_token is not None), default=float("inf"))
        waiting = self.admission.waiting
        if slo.ttft_per_token:
            deadlines = [r.arrival + slo.ttft_for(r.prompt)
                         for r in itertools.chain((live.request for live in unstarted), waiting)]
            ttft = min(deadlines) - now if deadlines else None
        else:
            arrivals = [live.request.arrival for live in unstarted] + [r.arrival for r in waiting]
            ttft = min(arrivals) + slo.ttft - now if arrivals else None
        return StepState(bucket, context, prefill_tokens, tpot, ttft, kv_used)
