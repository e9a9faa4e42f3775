"""Decode steps on a latency side and prefill in pieces (a batch of prompt tokens through a
block of layers) on a batch side, interleaved by the host: at most ``depth`` pieces queued and
tracked with events, never waited for. A request joins the decode batch once the host sees its
prefill's marker ready. Two plain streams, a static split and the policies all run this way;
their difference is the lane each step runs on (:class:`OverlapDevice`). Plain Python."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from .admission import Live
from .planning import ChunkedPlan, Piece, PrefillCursor, bucket_for
from .request import Request
from .steps import Books, DecodeStep, EngineSettings, Marker, Pending, StepResult, StepState, Wait


class OverlapDevice(Protocol):
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

    def mixed_tokens(self) -> int:
        """Prompt tokens the lane choice of this step wants run with its decode batch in one
        mixed pass on the lane (0: a decode step, prefill in pieces beside it)."""

    def paused(self) -> bool:
        """The lane choice of this step pauses decode: prefill alone on the lane until the next."""

    def iteration(self, lane: Any, plan: ChunkedPlan, bucket: int) -> Pending:
        """Launch one mixed pass of ``plan`` on ``lane``'s latency stream."""


class OverlapScheduler:
    """Decode steps and prefill pieces (at most ``depth`` in flight) on ``device``."""

    def __init__(self, device: OverlapDevice, cursor: PrefillCursor, depth: int, settings: EngineSettings) -> None:
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        self.device, self.cursor, self.depth, self.settings = device, cursor, depth, settings
        self.books = Books(settings)
        self.inflight: list[Pending] = []
        self.awaiting: list[tuple[Live, Marker]] = []  # prefill launched to the end, not seen finished
        self.joining: list[tuple[Live, Marker]] = []  # prefill finished, not yet in a decode step
        self.decoding: list[Live] = []
        self._step: tuple[Any, list[Live], int, float, Pending, ChunkedPlan | None] | None = None
        self._events = 0  # arrivals admitted, pieces launched or finished, prefills seen finished
        self._paused_on: tuple[Any, int] | None = None  # a pause's lane and the events when it was chosen

    def add(self, request: Request) -> None:
        """``request`` has arrived."""
        self.books.add(request)

    @property
    def mid_step(self) -> bool:
        """A decode step is in flight."""
        return self._step is not None

    @property
    def idle(self) -> bool:
        """Nothing to do for the requests added so far."""
        return (self._step is None and self.books.admission.empty
                and not (self.cursor.busy or self.inflight or self.awaiting or self.joining or self.decoding))

    def step(self, now: float) -> StepResult:
        if self._step is None:
            if self._pause_holds(now):
                return self.books.result(Wait.POLL)
            batch = self.decoding + [live for live, _ in self.joining]
            if not batch:
                self._poll(self.device.idle_lane(), now)
                if self.joining:
                    return self.books.result(Wait.NONE)
                busy = self.inflight or self.awaiting or self.cursor.busy
                return self.books.result(Wait.POLL if busy else Wait.ARRIVAL)
            bucket = bucket_for(len(batch), self.settings.buckets)
            waiting = [live for live, _ in self.awaiting]
            unstarted = list(self.cursor.queue) + self.cursor.in_batch() + waiting
            prefill_tokens = self.cursor.tokens + sum(live.request.prompt for live in waiting)
            lane = self.device.decode_lane(bucket, self.books.state(batch, bucket, prefill_tokens, unstarted, now))
            if self.device.paused():
                self._poll(lane, now)
                if self.inflight or self.awaiting:
                    self._paused_on = (lane, self._events)
                    return self.books.result(Wait.POLL)
                # Nothing of prefill left on the device: the prompts counted as waiting had finished; ask again.
                return self.books.result(Wait.NONE)
            plan = self._mixed_plan(batch, self.device.mixed_tokens(), now)
            if plan is not None:
                pending = self.device.iteration(lane, plan, bucket)
            else:
                pending = self.device.decode(lane, [live.decode_row() for live in batch], bucket,
                                             [marker for _, marker in self.joining])
            self.joining.clear()
            self._step = (lane, batch, bucket, now, pending, plan)
        lane, batch, bucket, launched, pending, plan = self._step
        self._poll(lane, now)
        if not pending.done():
            return self.books.result(Wait.POLL)
        self._step = None
        for live in batch:
            self.books.add_token(live, now)
        self.decoding = [live for live in batch if live.finish is None]
        for part in plan.parts if plan is not None else ():
            if part.completes:
                self.books.first_token(part.live, now)
                if part.live.finish is None:
                    self.decoding.append(part.live)
        key = lane.key if plan is None else f"{lane.key} mixed"
        return self.books.result(Wait.NONE, DecodeStep(launched, now, len(batch), bucket, key))

    def _pause_holds(self, now: float) -> bool:
        """A pause goes on, unasked, until a request arrives or a prefill piece starts or ends."""
        if self._paused_on is None:
            return False
        lane, seen = self._paused_on
        self._poll(lane, now)
        if self._events == seen:
            return True
        self._paused_on = None
        return False

    def _mixed_plan(self, batch: list[Live], tokens: int, now: float) -> ChunkedPlan | None:
        """The mixed pass the lane choice asked for: the decode batch and up to ``tokens`` queued
        prompt tokens, when no prefill batch is part way through its pieces (None otherwise)."""
        if tokens <= 0 or self.cursor.in_batch() or not self.cursor.queue:
            return None
        return ChunkedPlan(tuple(batch), tuple(self.cursor.queue.take(tokens, now)))

    def _poll(self, lane: Any, now: float) -> None:
        """Between two looks at the device: admit arrivals, take in the prefills seen finished,
        and top the prefill queue up to ``depth`` pieces."""
        for live in self.books.admit(now):
            self.cursor.add(live)
            self._events += 1
        still = []
        for live, marker in self.awaiting:
            if not marker.ready():
                still.append((live, marker))
                continue
            self.books.first_token(live, now)
            self._events += 1
            if live.finish is None:
                self.joining.append((live, marker))
        self.awaiting[:] = still
        running = [p for p in self.inflight if not p.done()]
        self._events += len(self.inflight) - len(running)
        self.inflight[:] = running
        while len(self.inflight) < self.depth:
            piece = self.cursor.next_piece(now)
            if piece is None:
                break
            self._events += 1
            self.inflight.append(self.device.prefill(lane, piece))
            if piece.ends:
                for part in piece.batch.parts:
                    if part.completes:
                        self.awaiting.append((part.live, self.device.prefill_marker(lane)))
