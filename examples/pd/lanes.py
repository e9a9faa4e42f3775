"""Where each scheduler runs its decode steps and prefill pieces, and the adapters that give
the loops (loops.py) an engine.

- :class:`PlainLanes` (two plain streams): two ``torch.cuda.Stream`` of the whole GPU, the
  decode one at the highest priority; a request's prefill end is an event the host queries.
- :class:`StaticLanes` (a static split): one layout of a ``Layouts``, never switched.
- :class:`PolicyLanes` (the split policy): the layout ``SplitPolicy.step`` picks for each
  decode step's bucket; while nothing decodes, the layout ``SplitPolicy.choose(0)`` names
  (all SMs to prefill when the layouts have one of 0 SMs).

Static and policy lanes mark a request's prefill end with ``Layouts.handoff()`` (recorded on
the active layout's batch stream right after the request's last prefill piece); its first
decode step's stream waits for it on the device.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .engine import Engine, EventMarker, EventPending, HandoffMarker, Lane
from .loops import Marker
from .planning import ChunkedPlan, Piece


def layout_lane(layout: Any) -> Lane:
    """The lane of one ``Layout``, named by its latency side's SM count."""
    return Lane(str(layout.sm_count), layout.latency_stream, layout.batch_stream)


class PlainLanes:
    """Decode and prefill on two plain streams of the whole GPU, decode at high priority."""

    def __init__(self, device: int) -> None:
        high = torch.cuda.Stream.priority_range()[1]  # type: ignore[call-arg]
        self.lane = Lane("plain streams", torch.cuda.Stream(device, priority=high),  # type: ignore[call-arg]
                         torch.cuda.Stream(device))  # type: ignore[no-untyped-call]

    def all(self) -> list[Lane]:
        return [self.lane]

    def decode_lane(self, bucket: int) -> Lane:
        return self.lane

    def idle_lane(self) -> Lane:
        return self.lane

    def launched(self) -> None:
        pass

    def marker(self, lane: Lane) -> Marker:
        return EventMarker(lane.batch)


class StaticLanes:
    """Layout ``k`` of ``layouts`` for every step: decode on its ``k`` SMs, prefill on the rest."""

    def __init__(self, layouts: Any, k: int) -> None:
        self.layouts, self.k = layouts, k
        self.lane = layout_lane(layouts[k])

    def all(self) -> list[Lane]:
        return [self.lane]

    def decode_lane(self, bucket: int) -> Lane:
        self.layouts.switch(self.k)
        return self.lane

    def idle_lane(self) -> Lane:
        return self.decode_lane(0)

    def launched(self) -> None:
        pass

    def marker(self, lane: Lane) -> Marker:
        return HandoffMarker(self.layouts.handoff())


class PolicyLanes:
    """The layout ``policy`` picks per decode step; ``policy.done()`` after each launch."""

    def __init__(self, policy: Any, layouts: Any) -> None:
        self.policy, self.layouts = policy, layouts
        self.lanes = {k: layout_lane(layouts[k]) for k in layouts.counts}
        self._by_sms = {int(layouts[k].sm_count): self.lanes[k] for k in layouts.counts}

    def all(self) -> list[Lane]:
        return list(self.lanes.values())

    def decode_lane(self, bucket: int) -> Lane:
        return self._by_sms[int(self.policy.step(bucket).sm_count)]

    def idle_lane(self) -> Lane:
        k = self.policy.choose(0)
        self.layouts.switch(k)
        return self.lanes[k]

    def launched(self) -> None:
        self.policy.done()

    def marker(self, lane: Lane) -> Marker:
        return HandoffMarker(self.layouts.handoff())


class OverlapRunner:
    """The loops' ``OverlapEngine``: ``engine``'s work on the lanes of ``lanes``."""

    def __init__(self, engine: Engine, lanes: Any) -> None:
        self.engine, self.lanes = engine, lanes

    def decode_lane(self, bucket: int) -> Lane:
        lane: Lane = self.lanes.decode_lane(bucket)
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
