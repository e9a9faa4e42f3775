"""A simulated GPU behind the engine's device interface: virtual time for the host, and two
queues of work (the latency role: decode steps and chunked iterations; the batch role: prefill
pieces), each run in launch order (as ``per_role`` layouts order them), sharing the device as a
fluid: a piece of work runs at its lane's idle speed while the other role has nothing running
and at its loaded speed while it has, so a step's duration follows what overlapped it.

The host pays for what it launches (:meth:`SimClock.spend`): work cannot start before its launch
is done, and the host's next look waits for it. A look at the device between two events finds
nothing new, so a polling host is moved straight to its first look after the next event (a
work's end or an arrival): the decisions are the same as polling every interval. Plain Python.
"""

from __future__ import annotations

import math
import random
from collections import deque
from typing import Any, Callable, Sequence

from ..engine.lanes import Lane
from ..engine.mixed import token_buckets
from ..engine.planning import ChunkedPlan, Piece, longest_row
from .costs import LaneCosts, MixedCosts

ROLES = ("latency", "batch")


class SimClock:
    """The host's virtual clock: every sleep oversleeps by the host's measured overshoot,
    ``spend`` books host time for a launch, and a look's pause (a sleep of ``poll_s``) skips to
    the first look after ``wake`` (the next change a look could see)."""

    def __init__(self, oversleep_s: float = 0.0, poll_s: float = 50e-6) -> None:
        self.t = 0.0
        self.host_free = 0.0
        self.oversleep_s, self.poll_s = oversleep_s, poll_s
        self.wake: Callable[[float], float | None] | None = None

    def now(self) -> float:
        return self.t

    def spend(self, seconds: float) -> float:
        """The host launches work taking ``seconds`` of its time; returns when it is done."""
        self.host_free = max(self.host_free, self.t) + seconds
        return self.host_free

    def sleep(self, seconds: float) -> None:
        start = max(self.t, self.host_free)
        step = seconds + self.oversleep_s
        target = start + step
        if seconds == self.poll_s and self.wake is not None:
            woken = self.wake(self.t)  # from the last look: what ended while the host was busy is seen at once
            if woken is not None and woken > target:
                target = start + math.ceil((woken - start) / step - 1e-9) * step
        self.t = target


class Work:
    """One launch on a role: its durations alone and beside the other role, when its launch is
    done on the host, and the work it waits for (prefill ends a decode step joins)."""

    __slots__ = ("role", "idle_s", "loaded_s", "ready_at", "deps", "start", "end", "progress", "tokens", "costs")

    def __init__(self, role: str, idle_s: float, loaded_s: float, ready_at: float, deps: Sequence[Work]) -> None:
        self.role, self.idle_s, self.loaded_s, self.ready_at = role, max(idle_s, 1e-7), max(loaded_s, 1e-7), ready_at
        self.deps = [d for d in deps if d is not None]
        self.tokens: int | None = None  # a prefill piece's prompt tokens
        self.costs: LaneCosts | None = None  # a decode step's lane, whose slowdown may depend on the piece beside it
        self.start: float | None = None
        self.end: float | None = None
        self.progress = 0.0

    def startable_at(self, after: float) -> float | None:
        """When it can start at ``after`` or later, as far as known (None: a dependency has not
        ended yet)."""
        if any(d.end is None for d in self.deps):
            return None
        return max([after, self.ready_at] + [d.end for d in self.deps if d.end is not None])


class SimPending:
    """Work launched on the simulated device; ``done`` once it has ended by the clock's now."""

    def __init__(self, device: SimDevice, work: Work | None) -> None:
        self.device, self.work = device, work

    def done(self) -> bool:
        return self.device.ended(self.work)

    def ready(self) -> bool:
        return self.done()


class SimDevice:
    """The engine's ``LaneDevice`` on the simulated GPU: the costs of ``lanes`` (by lane key,
    ``aliases`` naming lanes measured as others), mixed iterations and host launches, with
    durations drawn from the measured spreads by ``rng``."""

    def __init__(self, clock: SimClock, lanes: dict[str, LaneCosts], aliases: dict[str, str], mixed: MixedCosts | None,
                 host_us: dict[str, float], rng: random.Random, max_len: int) -> None:
        self.clock, self.lanes, self.aliases, self.mixed = clock, lanes, aliases, mixed
        self.host_us, self.rng, self.max_len = host_us, rng, max_len
        self.queues: dict[str, deque[Work]] = {r: deque() for r in ROLES}
        self.last: dict[str, Work | None] = dict.fromkeys(ROLES)
        self.t = 0.0
        self.drained = False
        self.mixed_buckets: list[int] = []
        self.launched = {"decode": 0, "prefill": 0, "iteration": 0}
        self.recorded: list[tuple[Work, dict[str, Any]]] | None = None  # a device timeline, when asked for

    def costs(self, lane: Lane) -> LaneCosts:
        key = self.aliases.get(lane.key, lane.key)
        try:
            return self.lanes[key]
        except KeyError:
            raise KeyError(f"the calibration has no lane {lane.key!r}; it measured {sorted(self.lanes)}") from None

    def use_budget(self, budget: int) -> None:
        """Chunked prefill's mixed iterations pad their prompt rows to this budget's buckets."""
        self.mixed_buckets = token_buckets(budget, self.max_len)

    # The engine's LaneDevice.

    def decode(self, lane: Lane, rows: Sequence[tuple[int, int]], bucket: int, joining: Sequence[Any],
               after: Callable[[], Any] | None = None) -> SimPending:
        context = sum(length for _, length in rows) + (bucket - len(rows))
        costs, longest = self.costs(lane), longest_row(rows)
        idle, loaded = costs.decode_us(bucket, context, longest)
        draw = costs.decode_spread.draw(self.rng)
        work = self._submit("latency", idle * draw, loaded * draw, self.host_us["decode_launch_us"],
                            [m.work for m in joining])
        work.costs = costs
        self._record(work, "decode", lane, rows=len(rows), bucket=bucket, context=context - (bucket - len(rows)),
                     longest=longest)
        if after is not None:
            after()
        self.launched["decode"] += 1
        return SimPending(self, work)

    def prefill(self, lane: Lane, piece: Piece) -> SimPending:
        parts = [(p.start, p.length) for p in piece.batch.parts]
        pairs = sum(n * start + n * (n + 1) // 2 for start, n in parts)
        costs = self.costs(lane)
        idle, loaded = costs.prefill_us(piece.batch.tokens, pairs, piece.last_layer - piece.first_layer)
        draw = costs.prefill_spread.draw(self.rng)
        self.launched["prefill"] += 1
        work = self._submit("batch", idle * draw, loaded * draw, self.host_us["piece_launch_us"], ())
        work.tokens = piece.batch.tokens
        self._record(work, "prefill", lane, tokens=piece.batch.tokens, prompts=len(parts), pairs=pairs,
                     layers=piece.last_layer - piece.first_layer)
        return SimPending(self, work)

    def iteration(self, lane: Lane, plan: ChunkedPlan, bucket: int) -> SimPending:
        decode = [live.decode_row() for live in plan.decode]
        self.launched["iteration"] += 1
        if not plan.parts:
            return self.decode(lane, decode, bucket, ())
        if self.mixed is None:
            raise KeyError("the calibration has no mixed iterations of chunked prefill")
        rows = sum(p.length for p in plan.parts)
        tokens = next((t for t in self.mixed_buckets if t >= rows), rows)
        pairs = sum(p.length * p.start + p.length * (p.length + 1) // 2 for p in plan.parts)
        context = sum(length for _, length in decode)
        us = self.mixed.us(tokens, context, pairs) * self.mixed.spread.draw(self.rng)
        work = self._submit("latency", us, us, self.host_us.get("mixed_launch_us", 0.0), ())
        self._record(work, "mixed", lane, rows=len(decode), bucket=bucket, context=context, longest=longest_row(decode),
                     tokens=rows, pairs=pairs)
        return SimPending(self, work)

    def _record(self, work: Work, kind: str, lane: Lane, **figures: int) -> None:
        if self.recorded is not None:
            self.recorded.append((work, {"kind": kind, "lane": lane.key, "role": work.role, **figures}))

    def timeline(self) -> list[dict[str, Any]]:
        """The recorded works with their device start and end (ms), as a GPU timeline has them
        (run the device to its end first)."""
        return [{**figures, "start_ms": w.start * 1e3, "end_ms": w.end * 1e3} for w, figures in self.recorded or ()
                if w.start is not None and w.end is not None]

    def marker(self) -> SimPending:
        """The end of the batch work launched so far (a handoff, or an event on plain streams)."""
        return SimPending(self, self.last["batch"])

    # The fluid simulation.

    def _submit(self, role: str, idle_us: float, loaded_us: float, host_us: float, deps: Sequence[Any]) -> Work:
        work = Work(role, idle_us * 1e-6, loaded_us * 1e-6, self.clock.spend(host_us * 1e-6), deps)
        self.queues[role].append(work)
        self.last[role] = work
        return work

    def ended(self, work: Work | None) -> bool:
        if work is None or self.drained:
            return True
        if work.end is None:
            self.advance(self.clock.now())
        return work.end is not None and work.end <= self.clock.now()

    def advance(self, until: float) -> None:
        """Run the device up to ``until``."""
        while self.t < until:
            if self._advance_once(until) is None:
                self.t = until
                return

    def next_end(self, after: float) -> float | None:
        """When the next work ends after ``after``, or None: the device runs up to ``after`` and
        looks ahead from there without moving (the host may launch more before then)."""
        self.advance(after)
        heads = [q[0] for q in self.queues.values() if q]
        saved = (self.t, [(w, w.start, w.progress) for w in heads])
        ended = None
        while ended is None and any(self.queues.values()):
            done = self._advance_once(math.inf)
            if done is None:
                break
            if done:
                ended = self.t
        self.t, states = saved
        for w, start, progress in states:
            w.start, w.progress, w.end = start, progress, None
            if not self.queues[w.role] or self.queues[w.role][0] is not w:
                self.queues[w.role].appendleft(w)
        return ended

    def _advance_once(self, limit: float) -> bool | None:
        """Move to the next start or end, or to ``limit``; whether some work ended (None: nothing
        is running or can start)."""
        heads = [q[0] for q in self.queues.values() if q]
        for w in heads:
            if w.start is None and (at := w.startable_at(self.t)) is not None and at <= self.t:
                w.start = self.t
        running = [w for w in heads if w.start is not None]
        starts = [at for w in heads if w.start is None and (at := w.startable_at(self.t)) is not None]
        both = len(running) == 2
        rates = [1.0 / (_loaded_s(w, running) if both else w.idle_s) for w in running]
        finishes = [self.t + (1.0 - w.progress) / rate for w, rate in zip(running, rates)]
        if not finishes and not starts:
            return None
        t_next = min([*finishes, *starts, limit])
        for w, rate in zip(running, rates):
            w.progress += (t_next - self.t) * rate
        self.t = t_next
        ended = False
        for w, finish in zip(running, finishes):
            if finish <= t_next:
                w.end, w.progress = finish, 1.0
                self.queues[w.role].popleft()
                ended = True
        return ended

    def drain(self) -> None:
        """Run every queued work to its end (after a run: the next run finds an idle device)."""
        while any(self.queues.values()) and self._advance_once(math.inf) is not None:
            pass
        self.drained = True


def _loaded_s(work: Work, running: Sequence[Work]) -> float:
    """How long ``work`` takes beside the other role's running work: a decode step beside a
    piece smaller than a chunk takes the share of its slowdown its lane measured for that size."""
    if work.costs is None:
        return work.loaded_s
    other = running[0] if running[1] is work else running[1]
    return work.idle_s + (work.loaded_s - work.idle_s) * work.costs.loaded_share(other.tokens)
