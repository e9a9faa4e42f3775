"""Where each scheduler runs its decode steps and prefill pieces, and the adapters that give
the loops (loops.py) an engine.

- :class:`PlainLanes` (two plain streams): two ``torch.cuda.Stream`` of the whole GPU, the
  decode one at the highest priority; a request's prefill end is an event the host queries.
- :class:`StaticLanes` (a static split): one layout of a ``Layouts``, disjoint or overlapped,
  never switched.
- :class:`PolicyLanes` (the split policy): the layout ``SplitPolicy.step`` picks for each
  decode step's bucket; while nothing decodes, the layout ``SplitPolicy.choose(0)`` names
  (all SMs to prefill when the layouts have one of 0 SMs).
- :class:`TwoSloLanes` (the two-SLO policy): the layout ``PrefillDecodePolicy.step`` picks from
  the step's batch, context tokens, waiting prompt tokens and the requests' slacks; while
  nothing decodes, the one it gives prefill.

Static and policy lanes mark a request's prefill end with ``Layouts.handoff()`` (recorded on
the active layout's batch stream right after the request's last prefill piece); its first
decode step's stream waits for it on the device.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .engine import Engine
from .events import EventMarker, EventPending, HandoffMarker, Lane
from .loops import Marker, StepState
from .planning import ChunkedPlan, Piece


def key_label(key: Any) -> str:
    """A layout key as the results name it: ``16`` (latency SMs of a disjoint layout) or
    ``16/64`` (the floors of an overlapped one)."""
    return f"{key[0]}/{key[1]}" if isinstance(key, tuple) else str(key)


def layout_lane(layout: Any, prefix: str = "") -> Lane:
    """The lane of one ``Layout``, named by ``prefix`` and its key (lanes of two ``Layouts``
    need different prefixes: each lane has its own graphs)."""
    return Lane(prefix + key_label(layout.key), layout.latency_stream, layout.batch_stream)


class PlainLanes:
    """Decode and prefill on two plain streams of the whole GPU, decode at high priority."""

    def __init__(self, device: int) -> None:
        high = torch.cuda.Stream.priority_range()[1]  # type: ignore[call-arg]
        self.lane = Lane("plain streams", torch.cuda.Stream(device, priority=high),  # type: ignore[call-arg]
                         torch.cuda.Stream(device))  # type: ignore[no-untyped-call]

    def all(self) -> list[Lane]:
        return [self.lane]

    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane:
        return self.lane

    def idle_lane(self) -> Lane:
        return self.lane

    def launched(self) -> None:
        pass

    def marker(self, lane: Lane) -> Marker:
        return EventMarker(lane.batch)


class StaticLanes:
    """Layout ``key`` of ``layouts`` for every step: decode on its latency side, prefill on its
    batch side."""

    def __init__(self, layouts: Any, key: Any, prefix: str = "") -> None:
        self.layouts, self.key = layouts, key
        self.lane = layout_lane(layouts[key], prefix)

    def all(self) -> list[Lane]:
        return [self.lane]

    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane:
        self.layouts.switch(self.key)
        return self.lane

    def idle_lane(self) -> Lane:
        return self.decode_lane(0)

    def launched(self) -> None:
        pass

    def marker(self, lane: Lane) -> Marker:
        return HandoffMarker(self.layouts.handoff())


class _ChosenLanes:
    """The lanes of every layout of ``layouts`` (by ``keys``), one chosen per step by
    ``policy``; ``policy.done()`` after each launch, a handoff per request."""

    def __init__(self, policy: Any, layouts: Any, keys: Sequence[Any], prefix: str) -> None:
        self.policy, self.layouts = policy, layouts
        self.lanes = {k: layout_lane(layouts[k], prefix) for k in keys}

    def all(self) -> list[Lane]:
        return list(self.lanes.values())

    def idle_lane(self) -> Lane:
        key = self.policy.choose(0)
        self.layouts.switch(key)
        return self.lanes[key]

    def launched(self) -> None:
        self.policy.done()

    def marker(self, lane: Lane) -> Marker:
        return HandoffMarker(self.layouts.handoff())


class PolicyLanes(_ChosenLanes):
    """The layout ``policy`` (a ``SplitPolicy``) picks per decode step's bucket."""

    def __init__(self, policy: Any, layouts: Any, prefix: str = "") -> None:
        super().__init__(policy, layouts, layouts.counts, prefix)
        self._by_sms = {int(layouts[k].sm_count): self.lanes[k] for k in layouts.counts}

    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane:
        return self._by_sms[int(self.policy.step(bucket).sm_count)]


def _finite_us(seconds: float | None) -> float | None:
    if seconds is None:
        return None
    return max(-1e12, min(1e12, seconds * 1e6))


class TwoSloLanes(_ChosenLanes):
    """The layout ``policy`` (a ``PrefillDecodePolicy`` over ``layouts``) picks per step."""

    def __init__(self, policy: Any, layouts: Any, prefix: str = "") -> None:
        super().__init__(policy, layouts, layouts.keys, prefix)

    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane:
        if state is None:
            state = StepState(bucket, 0, 0, 0.0, None)
        layout = self.policy.step(bucket, state.context_tokens, prefill_tokens=state.prefill_tokens,
                                  tpot_slack_us=_finite_us(state.tpot_slack_s), ttft_slack_us=_finite_us(state.ttft_slack_s))
        return self.lanes[layout.key]


class OverlapRunner:
    """The loops' ``OverlapEngine``: ``engine``'s work on the lanes of ``lanes``."""

    def __init__(self, engine: Engine, lanes: Any) -> None:
        self.engine, self.lanes = engine, lanes

    def decode_lane(self, bucket: int, state: StepState) -> Lane:
        lane: Lane = self.lanes.decode_lane(bucket, state)
        return lane

    def idle_lane(self) -> Lane:
        lane: Lane = self.lanes.idle_lane()
        return lane

    def decode(self, lane: Lane, rows: Sequence[tuple[int, int]], bucket: int, joining: Sequence[Any]) -> EventPending:
        return self.engine.decode(lane, rows, bucket, joining, after=self.lanes.launched)

    def prefill(self, lane: Lane, piece: Piece) -> EventPending:
        return self.engine.prefill(lane, piece)

    def prefill_marker(self, lane: Lane) -> Marker:
        marker: Marker = self.lanes.marker(lane)
        return marker


class ChunkedRunner:
    """The loops' ``ChunkedEngine``: every iteration on the decode stream of ``lane``."""

    def __init__(self, engine: Engine, lane: Lane) -> None:
        self.engine, self.lane = engine, lane

    def iteration(self, plan: ChunkedPlan, bucket: int) -> EventPending:
        return self.engine.iteration(self.lane, plan, bucket)
