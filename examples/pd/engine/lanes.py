"""Where each overlapping scheduler runs its decode steps and prefill pieces, and the adapters
that give the schedulers a device. Plain Python: a lane's streams are whatever the device uses
(torch streams on the GPU, a simulator's), and layouts are any ``LayoutSet``.

- :class:`PlainLanes` (two plain streams): one lane for every step; a request's prefill end is a
  marker the device makes on the batch stream.
- :class:`StaticLanes` (a static split): one layout of a ``Layouts``, disjoint or overlapped,
  never switched.
- :class:`PolicyLanes` (a ``StepPolicy``: ``SplitPolicy`` or ``PrefillDecodePolicy``): the layout
  the policy's ``step`` picks from the step's figures; while nothing decodes, its ``idle_key``.

Static and policy lanes mark a request's prefill end with ``layouts.handoff()`` (recorded on
the active layout's batch stream right after the request's last prefill piece); its first
decode step's stream waits for it on the device.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, Protocol, Sequence

from torch_green_contexts.step_policy import LayoutKey, LayoutSet, StepPolicy

from .overlap import OverlapDevice
from .planning import ChunkedPlan, Piece
from .steps import Marker, Pending, StepState


@dataclasses.dataclass(frozen=True)
class Lane:
    """The streams of one place to run: decode on ``latency``, prefill on ``batch``."""

    key: str
    latency: Any
    batch: Any


class HandoffLayouts(LayoutSet, Protocol):
    def handoff(self) -> Marker: ...


def key_label(key: LayoutKey) -> str:
    """A layout key as the results name it: ``16`` (latency SMs of a disjoint layout) or
    ``16/64`` (the floors of an overlapped one)."""
    return f"{key[0]}/{key[1]}" if isinstance(key, tuple) else str(key)


def layout_lane(layout: Any, prefix: str = "") -> Lane:
    """The lane of one layout, named by ``prefix`` and its key (lanes of two ``Layouts`` need
    different prefixes: each lane has its own graphs)."""
    return Lane(prefix + key_label(layout.key), layout.latency_stream, layout.batch_stream)


class LayoutSubset:
    """Some layouts of a ``Layouts`` (``keys``, in that order), as a ``LayoutSet`` of their own
    that switches the whole: a policy chooses among a few layouts of a larger set whose other
    layouts serve other schedulers, and every lane keeps one set of streams and graphs."""

    def __init__(self, layouts: HandoffLayouts, keys: Sequence[LayoutKey]) -> None:
        missing = [k for k in keys if k not in layouts.keys]
        if missing:
            raise KeyError(f"no layouts {missing}; have {list(layouts.keys)}")
        self.layouts, self._keys = layouts, tuple(keys)

    @property
    def keys(self) -> tuple[LayoutKey, ...]:
        return self._keys

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(k for k in self._keys if isinstance(k, int))

    def __getitem__(self, key: LayoutKey) -> Any:
        if key not in self._keys:
            raise KeyError(f"no layout {key!r}; have {list(self._keys)}")
        return self.layouts[key]

    def switch(self, key: LayoutKey, *, ordering: str | None = None) -> Any:
        if key not in self._keys:
            raise KeyError(f"no layout {key!r}; have {list(self._keys)}")
        return self.layouts.switch(key, ordering=ordering)

    def handoff(self) -> Marker:
        return self.layouts.handoff()

    @property
    def device_id(self) -> Any:
        return getattr(self.layouts, "device_id")

    def __iter__(self) -> Iterator[Any]:
        return (self.layouts[k] for k in self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class Lanes(Protocol):
    """A lane choice: the lane of each decode step and of prefill while nothing decodes."""

    def all(self) -> list[Lane]: ...
    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane: ...
    def idle_lane(self) -> Lane: ...
    def launched(self) -> None: ...
    def marker(self, lane: Lane) -> Marker: ...
    def mixed_tokens(self) -> int: ...
    def paused(self) -> bool: ...


class PlainLanes:
    """Decode and prefill on ``lane`` for every step; ``marker`` makes a prefill's end marker."""

    def __init__(self, lane: Lane, marker: Callable[[Lane], Marker]) -> None:
        self.lane, self._marker = lane, marker

    def all(self) -> list[Lane]:
        return [self.lane]

    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane:
        return self.lane

    def idle_lane(self) -> Lane:
        return self.lane

    def launched(self) -> None:
        pass

    def marker(self, lane: Lane) -> Marker:
        return self._marker(lane)

    def mixed_tokens(self) -> int:
        return 0

    def paused(self) -> bool:
        return False


class StaticLanes:
    """Layout ``key`` of ``layouts`` for every step: decode on its latency side, prefill on its
    batch side."""

    def __init__(self, layouts: HandoffLayouts, key: LayoutKey, prefix: str = "") -> None:
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
        return self.layouts.handoff()

    def mixed_tokens(self) -> int:
        return 0

    def paused(self) -> bool:
        return False


def _finite_us(seconds: float) -> float:
    return max(-1e12, min(1e12, seconds * 1e6))


class PolicyLanes:
    """The layout ``policy`` (over ``layouts``) picks per decode step from the step's batch,
    context tokens, waiting prompt tokens and slacks; ``policy.done()`` after each launch."""

    def __init__(self, policy: StepPolicy, layouts: HandoffLayouts, prefix: str = "") -> None:
        self.policy, self.layouts = policy, layouts
        self.lanes = {k: layout_lane(layouts[k], prefix) for k in layouts.keys}

    def all(self) -> list[Lane]:
        return list(self.lanes.values())

    def decode_lane(self, bucket: int, state: StepState | None = None) -> Lane:
        if state is None:
            state = StepState(bucket, 0, 0, 0.0, None)
        ttft_slack_us = None if state.ttft_slack_s is None else _finite_us(state.ttft_slack_s)
        layout = self.policy.step(bucket, state.context_tokens, prefill_tokens=state.prefill_tokens,
                                  tpot_slack_us=_finite_us(state.tpot_slack_s), ttft_slack_us=ttft_slack_us,
                                  kv_used=state.kv_used)
        return self.lanes[layout.key]

    def idle_lane(self) -> Lane:
        key = self.policy.idle_key()
        self.layouts.switch(key)
        return self.lanes[key]

    def launched(self) -> None:
        self.policy.done()

    def marker(self, lane: Lane) -> Marker:
        return self.layouts.handoff()

    def mixed_tokens(self) -> int:
        """The prompt tokens the policy's last step runs with its decode batch (its mixed-batch
        fallback; 0 for a policy without one)."""
        return int(getattr(self.policy, "mixed_tokens", 0))

    def paused(self) -> bool:
        """The policy's last step pauses decode (its pause; False for a policy without one)."""
        return bool(getattr(self.policy, "paused", False))


class LaneDevice(Protocol):
    """A device that runs decode steps, prefill pieces and chunked iterations on lanes (the GPU
    engine, or a simulator)."""

    def decode(self, lane: Lane, rows: Sequence[tuple[int, int]], bucket: int, joining: Sequence[Any],
               after: Callable[[], Any] | None = None) -> Pending: ...
    def prefill(self, lane: Lane, piece: Piece) -> Pending: ...
    def iteration(self, lane: Lane, plan: ChunkedPlan, bucket: int) -> Pending: ...


class OverlapRunner(OverlapDevice):
    """The overlapping scheduler's device: ``device``'s work on the lanes ``lanes`` chooses."""

    def __init__(self, device: LaneDevice, lanes: Lanes) -> None:
        self.device, self.lanes = device, lanes

    def decode_lane(self, bucket: int, state: StepState) -> Lane:
        return self.lanes.decode_lane(bucket, state)

    def idle_lane(self) -> Lane:
        return self.lanes.idle_lane()

    def decode(self, lane: Lane, rows: Sequence[tuple[int, int]], bucket: int, joining: Sequence[Any]) -> Pending:
        return self.device.decode(lane, rows, bucket, joining, after=self.lanes.launched)

    def prefill(self, lane: Lane, piece: Piece) -> Pending:
        return self.device.prefill(lane, piece)

    def prefill_marker(self, lane: Lane) -> Marker:
        return self.lanes.marker(lane)

    def mixed_tokens(self) -> int:
        return self.lanes.mixed_tokens()

    def paused(self) -> bool:
        return self.lanes.paused()

    def iteration(self, lane: Lane, plan: ChunkedPlan, bucket: int) -> Pending:
        pending = self.device.iteration(lane, plan, bucket)
        self.lanes.launched()
        return pending


class ChunkedRunner:
    """The chunked scheduler's device: every iteration of ``device`` on ``lane``."""

    def __init__(self, device: LaneDevice, lane: Lane) -> None:
        self.device, self.lane = device, lane

    def iteration(self, plan: ChunkedPlan, bucket: int) -> Pending:
        return self.device.iteration(self.lane, plan, bucket)
