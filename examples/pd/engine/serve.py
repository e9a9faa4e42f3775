"""The serve loop: requests from a source enter a step-shaped scheduler as they arrive, and
what each step reports goes to a recorder, on a clock (the wall clock on the GPU, a virtual
one in a simulation). Plain Python."""

from __future__ import annotations

import time
from typing import Iterable, Protocol

from .request import Request
from .steps import StepResult, Wait


class Clock(Protocol):
    def now(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The wall clock."""

    now = staticmethod(time.perf_counter)
    sleep = staticmethod(time.sleep)


class Scheduler(Protocol):
    def add(self, request: Request) -> None: ...
    def step(self, now: float) -> StepResult: ...
    @property
    def mid_step(self) -> bool: ...
    @property
    def idle(self) -> bool: ...


class RequestSource(Protocol):
    def arrived(self, now: float) -> Iterable[Request]:
        """The requests that arrived by ``now`` and were not handed out yet, in arrival order."""

    @property
    def next_arrival(self) -> float | None:
        """When the next request not handed out yet arrives; None when none is left."""


class Recorder(Protocol):
    def record(self, now: float, result: StepResult) -> None: ...


class Requests:
    """A :class:`RequestSource` over requests known in advance (in any order)."""

    def __init__(self, requests: Iterable[Request]) -> None:
        self._requests = sorted(requests, key=lambda r: (r.arrival, r.id))
        self._next = 0

    def arrived(self, now: float) -> list[Request]:
        start = self._next
        while self._next < len(self._requests) and self._requests[self._next].arrival <= now:
            self._next += 1
        return self._requests[start:self._next]

    @property
    def next_arrival(self) -> float | None:
        return self._requests[self._next].arrival if self._next < len(self._requests) else None


def serve(scheduler: Scheduler, source: RequestSource, recorder: Recorder, clock: Clock, *,
          cap_s: float, poll_s: float = 50e-6) -> tuple[float, bool]:
    """Serve until the source has no request left and the scheduler is idle, or until ``cap_s``
    seconds have passed (checked between steps, never within one); returns the seconds served
    and whether the cap cut serving off. Between two looks at work in flight the host sleeps
    ``poll_s`` (0: it spins); when nothing can run it sleeps until the next arrival."""
    start = clock.now()
    while True:
        now = clock.now() - start
        if not scheduler.mid_step:
            if now >= cap_s:
                return now, True
            if source.next_arrival is None and scheduler.idle:
                return now, False
        for request in source.arrived(now):
            scheduler.add(request)
        result = scheduler.step(now)
        recorder.record(now, result)
        if result.wait is Wait.NONE:
            continue
        if result.wait is Wait.ARRIVAL:
            upcoming = source.next_arrival
            until = cap_s if upcoming is None else min(upcoming, cap_s)
            if until > now:
                clock.sleep(until - now)
                continue
        if poll_s > 0:
            clock.sleep(poll_s)
