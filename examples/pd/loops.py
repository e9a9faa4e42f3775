"""The two scheduler loops, over an abstract engine: plain Python, so that a simulated engine
(tests/test_pd_loops.py) can run them without a GPU. engine.py has the GPU implementations.

Both loops replay the trace in real time (a request arrives when ``clock.now() - start`` passes
its arrival), admit requests in the settings' order (admission.py) into a fixed number of KV
slots and prefill them in that order, and wait for every decode step as a server does to read
its sampled tokens (polling, the same way in both loops). When nothing can run they sleep until
the next arrival.

- :func:`run_chunked` (chunked prefill, as vLLM and SGLang run it): each iteration is one
  forward pass of every decoding request's token and prompt chunks up to a token budget.
- :func:`run_overlap` (two plain streams, a static split, the split policy): decode steps on
  the latency side, prefill in pieces (a batch of prompt tokens through a block of layers) on
  the batch side, at most ``depth`` pieces queued and tracked with events, never waited for.
  A request joins the decode batch once the host sees its prefill's marker ready.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable, Protocol, Sequence

from .admission import FCFS, Admission, Live, Order, PrefillQueue
from .metrics import RequestRecord, RunLog, Slo, StepRecord
from .planning import ChunkedPlan, Piece, PrefillCursor, bucket_for, compose_chunked
from .workload import Request


class Clock(Protocol):
    def now(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class Pending(Protocol):
    """Work launched on the device; ``done`` asks without waiting (an event query)."""

    def done(self) -> bool: ...


class Marker(Protocol):
    """The end of one request's prefill on the batch side (an event, or a Handoff)."""

    def ready(self) -> bool: ...


class ChunkedEngine(Protocol):
    def iteration(self, plan: ChunkedPlan, bucket: int) -> Pending:
        """Launch one iteration: a decode-only one replays the graph of ``bucket`` rows."""


@dataclasses.dataclass(frozen=True)
class StepState:
    """What a layout choice may look at before a decode step: the step's rows (``bucket``,
    padded) and the context tokens its requests hold; prompt tokens waiting for prefill; the
    smallest TPOT slack of the decoding requests (their token budget at the TPOT SLO so far less
    the time taken) and the smallest TTFT slack of the requests without a first token (None:
    none waiting), in seconds."""

    bucket: int
    context_tokens: int
    prefill_tokens: int
    tpot_slack_s: float
    ttft_slack_s: float | None


class OverlapEngine(Protocol):
    """The overlapping schedulers' device; a lane is whatever it returns (its ``key`` names
    it in the step records)."""

    def decode_lane(self, bucket: int, state: StepState) -> Any:
        """The lane of the next decode step of ``bucket`` rows (switches layouts if needed)."""

    def idle_lane(self) -> Any:
        """The lane to launch prefill on while no request decodes."""

    def decode(self, lane: Any, rows: Sequence[tuple[int, int]], bucket: int, joining: Sequence[Any]) -> Pending:
        """Launch a decode step of ``rows`` (slot, KV length), padded to ``bucket``, after the
        device waits for the ``joining`` requests' prefill markers."""

    def prefill(self, lane: Any, piece: Piece) -> Pending: ...

    def prefill_marker(self, lane: Any) -> Marker:
        """A marker after the prefill launched so far on ``lane``."""


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    """What every scheduler shares: KV slots, decode buckets, the run's time cap (seconds
    after its start), the host's polling interval (0: the host spins) and a progress callback
    (finished requests, all requests, seconds elapsed), called about once a second."""

    slots: int
    buckets: Sequence[int]
    cap_s: float
    poll_s: float = 50e-6
    progress: Callable[[int, int, float], Any] | None = None
    order: Order = FCFS
    slo: Slo | None = None  # for the slacks of StepState (infinite slack without it)


class _Books:
    """Admission, token accounting and records of one run."""

    def __init__(self, trace: Sequence[Request], settings: LoopSettings, clock: Clock) -> None:
        self.trace, self.settings, self.clock = trace, settings, clock
        self.admission = Admission(trace, settings.slots, settings.order)
        self.lives: dict[int, Live] = {}
        self.steps: list[StepRecord] = []
        self.gaps: list[float] = []
        self.finished = 0
        self.start = clock.now()
        self._reported = 0.0

    def now(self) -> float:
        return self.clock.now() - self.start

    def admit(self, now: float) -> list[Live]:
        self.admission.arrive(now)
        admitted = self.admission.admit(now)
        for live in admitted:
            self.lives[live.request.id] = live
        return admitted

    def first_token(self, live: Live, now: float) -> None:
        live.first_token, live.last_token, live.tokens = now, now, 1
        self._check_finished(live, now)

    def add_token(self, live: Live, now: float) -> None:
        live.tokens += 1
        assert live.last_token is not None
        self.gaps.append(now - live.last_token)
        live.last_token = now
        self._check_finished(live, now)

    def state(self, decoding: Sequence[Live], bucket: int, prefill_tokens: int, unstarted: Sequence[Live],
              now: float) -> StepState:
        """The figures of :class:`StepState` for a step of ``decoding`` now; ``unstarted``: the
        requests holding a slot that have no first token yet."""
        slo = self.settings.slo
        context = sum(live.request.prompt + live.tokens for live in decoding)
        if slo is None:
            return StepState(bucket, context, prefill_tokens, float("inf"), None)
        tpot = min(((live.tokens - 1) * slo.tpot - (now - live.first_token) for live in decoding
                    if live.first_token is not None), default=float("inf"))
        if slo.ttft_per_token:
            deadlines = [r.arrival + slo.ttft_for(r.prompt)
                         for r in itertools.chain((live.request for live in unstarted), self.admission.waiting)]
            ttft = min(deadlines) - now if deadlines else None
        else:
            arrivals = [live.request.arrival for live in unstarted] + [r.arrival for r in self.admission.waiting]
            ttft = min(arrivals) + slo.ttft - now if arrivals else None
        return StepState(bucket, context, prefill_tokens, tpot, ttft)

    def _check_finished(self, live: Live, now: float) -> None:
        if live.tokens >= live.request.output:
            live.finish = now
            self.finished += 1
            self.admission.release(live)

    def wait(self, pending: Pending, between: Callable[[], None] | None = None) -> None:
        """Poll until ``pending`` is done, running ``between`` before each look."""
        while True:
            if between is not None:
                between()
            if pending.done():
                return
            self.pause()

    def pause(self) -> None:
        """Between two looks at the device: sleep the polling interval (or spin when it is 0)."""
        if self.settings.poll_s > 0:
            self.clock.sleep(self.settings.poll_s)

    def sleep_until_arrival(self, now: float) -> None:
        upcoming = self.admission.next_arrival
        until = self.settings.cap_s if upcoming is None else min(upcoming, self.settings.cap_s)
        if until > now:
            self.clock.sleep(until - now)
        else:
            self.pause()

    def report(self, now: float) -> None:
        if self.settings.progress is not None and now - self._reported >= 1.0:
            self._reported = now
            self.settings.progress(self.finished, len(self.trace), now)

    def log(self, cut_off: bool) -> RunLog:
        now = self.now()
        if cut_off:  # the wait of every request cut off while decoding, so far
            self.gaps.extend(now - live.last_token for live in self.lives.values()
                             if live.finish is None and live.last_token is not None)
        records = []
        for request in self.trace:
            live = self.lives.get(request.id)
            records.append(RequestRecord(
                request.id, request.arrival, request.prompt, request.output,
                live.first_token if live else None, live.finish if live else None,
                live.tokens if live else 0))
        return RunLog(records, self.steps, now, cut_off, self.gaps)


def run_chunked(trace: Sequence[Request], engine: ChunkedEngine, budget: int,
                settings: LoopSettings, clock: Clock) -> RunLog:
    """Chunked prefill: one forward pass per iteration over at most ``budget`` tokens, every
    decoding request's next token first and prompt chunks (in the settings' order) in the rest."""
    books = _Books(trace, settings, clock)
    queue = PrefillQueue(settings.order)
    decoding: list[Live] = []
    while True:
        now = books.now()
        if now >= settings.cap_s:
            return books.log(cut_off=True)
        books.report(now)
        for live in books.admit(now):
            queue.add(live)
        if books.admission.drained and not queue and not decoding:
            return books.log(cut_off=False)
        plan = compose_chunked(decoding, queue, budget, now)
        if not plan.tokens:
            books.sleep_until_arrival(now)
            continue
        bucket = bucket_for(len(plan.decode), settings.buckets) if plan.decode else 0
        launched = books.now()
        books.wait(engine.iteration(plan, bucket))
        ended = books.now()
        if plan.decode:
            books.steps.append(StepRecord(launched, ended, len(plan.decode), bucket,
                                          "mixed" if plan.parts else "decode only"))
        for live in plan.decode:
            books.add_token(live, ended)
        decoding = [live for live in decoding if live.finish is None]
        for part in plan.parts:
            if part.completes:
                books.first_token(part.live, ended)
                if part.live.finish is None:
                    decoding.append(part.live)


def run_overlap(trace: Sequence[Request], engine: OverlapEngine, cursor: PrefillCursor, depth: int,
                settings: LoopSettings, clock: Clock) -> RunLog:
    """Decode steps on the latency side, prefill pieces on the batch side (at most ``depth``
    in flight), interleaved by the host; requests join decoding when their marker is ready."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    books = _Books(trace, settings, clock)
    inflight: list[Pending] = []
    awaiting: list[tuple[Live, Marker]] = []  # prefill launched to the end, not seen finished
    joining: list[tuple[Live, Marker]] = []  # prefill finished, not yet in a decode step
    decoding: list[Live] = []

    def poll(lane: Any) -> None:
        now = books.now()
        for live in books.admit(now):
            cursor.add(live)
        still = []
        for live, marker in awaiting:
            if not marker.ready():
                still.append((live, marker))
                continue
            books.first_token(live, now)
            if live.finish is None:
                joining.append((live, marker))
        awaiting[:] = still
        inflight[:] = [p for p in inflight if not p.done()]
        while len(inflight) < depth:
            piece = cursor.next_piece(now)
            if piece is None:
                break
            inflight.append(engine.prefill(lane, piece))
            if piece.ends:
                for part in piece.batch.parts:
                    if part.completes:
                        awaiting.append((part.live, engine.prefill_marker(lane)))

    while True:
        now = books.now()
        if now >= settings.cap_s:
            return books.log(cut_off=True)
        books.report(now)
        if books.admission.drained and not (cursor.busy or inflight or awaiting or joining or decoding):
            return books.log(cut_off=False)
        batch = decoding + [live for live, _ in joining]
        if not batch:
            lane = engine.idle_lane()
            poll(lane)
            if joining:
                continue
            if inflight or awaiting or cursor.busy:
                books.pause()
            else:
                books.sleep_until_arrival(now)
            continue
        bucket = bucket_for(len(batch), settings.buckets)
        waiting = [live for live, _ in awaiting]
        unstarted = list(cursor.queue) + cursor.in_batch() + waiting
        lane = engine.decode_lane(bucket, books.state(batch, bucket, cursor.tokens + sum(
            live.request.prompt for live in waiting), unstarted, now))
        launched = books.now()
        pending = engine.decode(lane, [live.decode_row() for live in batch], bucket,
                                [marker for _, marker in joining])
        joining.clear()
        books.wait(pending, between=lambda: poll(lane))
        ended = books.now()
        books.steps.append(StepRecord(launched, ended, len(batch), bucket, lane.key))
        for live in batch:
            books.add_token(live, ended)
        decoding = [live for live in batch if live.finish is None]
