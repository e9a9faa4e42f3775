"""The policies' view of the simulated GPU: layouts (a ``LayoutSet`` whose switch costs the
host its measured time and whose handoff marks the batch work launched so far) and a step timer
that reads a step's device time once the simulated device has passed it, as CUDA events would.
Both are made once per sweep, as the GPU's are, and attached to each run's device. Plain
Python."""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any, Callable, Hashable

from torch_green_contexts.step_policy import LayoutKey

from ..engine.lanes import key_label
from .device import SimDevice, SimPending, Work


@dataclasses.dataclass(frozen=True)
class SimLayout:
    """A layout of the simulated GPU, as ``torch_green_contexts.layouts.Layout`` describes one."""

    key: LayoutKey
    sm_count: int
    batch_sm_count: int
    shared_sm_count: int
    latency_stream: str
    batch_stream: str

    @property
    def latency_floor(self) -> int:
        return self.sm_count - self.shared_sm_count

    @property
    def batch_floor(self) -> int:
        return self.batch_sm_count - self.shared_sm_count


class SimLayouts:
    """Layouts of ``counts`` (key -> (latency SMs, batch SMs, shared SMs)) on the simulated GPU;
    ``prefix`` names their lanes as the sweep does."""

    def __init__(self, counts: dict[LayoutKey, tuple[int, int, int]], prefix: str = "") -> None:
        self._layouts = {k: SimLayout(k, *c, f"{prefix}{key_label(k)}:latency", f"{prefix}{key_label(k)}:batch")
                         for k, c in counts.items()}
        self.active: LayoutKey | None = None
        self.device: SimDevice | None = None
        self.switches = 0

    def attach(self, device: SimDevice) -> None:
        self.device = device

    @property
    def keys(self) -> tuple[LayoutKey, ...]:
        return tuple(self._layouts)

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(k for k in self._layouts if isinstance(k, int))

    def __getitem__(self, key: LayoutKey) -> SimLayout:
        try:
            return self._layouts[key]
        except KeyError:
            raise KeyError(f"no layout {key!r}; have {list(self._layouts)}") from None

    def switch(self, key: LayoutKey, *, ordering: str | None = None) -> SimLayout:
        layout = self[key]
        if key != self.active:  # a switch to the active layout orders nothing: it costs next to no host time
            if self.device is not None:
                self.device.clock.spend(self.device.host_us.get("switch_us", 0.0) * 1e-6)
            self.switches += 1
        self.active = key
        return layout

    def handoff(self) -> SimPending:
        if self.device is None:
            raise RuntimeError("the simulated layouts are not attached to a device")
        return self.device.marker()


class SimTimer:
    """A policy's step timer on the simulated GPU: a step is timed from when the latency role
    reaches its start (after the work queued before it) to its end, and read only once the
    device has passed it."""

    def __init__(self) -> None:
        self.pending: deque[tuple[Hashable, Any, float, Work | None, Work, SimDevice]] = deque()
        self.device: SimDevice | None = None
        self._open: tuple[Hashable, Any, float, Work | None] | None = None

    def attach(self, device: SimDevice) -> None:
        self.device = device

    def begin(self, key: Hashable, tag: Any, stream: Any, step: int, timed: bool = True) -> None:
        self._open = None
        if timed and self.device is not None:
            self._open = (key, tag, self.device.clock.now(), self.device.last["latency"])

    def end(self) -> None:
        if self._open is None or self.device is None:
            return
        key, tag, began, before = self._open
        self._open = None
        work = self.device.last["latency"]
        if work is not None and work is not before:
            self.pending.append((key, tag, began, before, work, self.device))

    def read(self, observe: Callable[[Hashable, Any, float], None]) -> int:
        read = 0
        while self.pending:
            key, tag, began, before, work, device = self.pending[0]
            if not device.ended(work) or work.end is None:
                break
            self.pending.popleft()
            reached = max(began, before.end if before is not None and before.end is not None else began)
            observe(key, tag, (work.end - reached) * 1e6)
            read += 1
        return read
