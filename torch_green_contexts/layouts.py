"""Several splits of one device kept alive, and a switch between them per step.

A server that sizes its latency partition per step (more SMs for a large decode batch, fewer
when prefill must catch up) keeps one split per size and picks one each step::

    from torch_green_contexts.layouts import Layouts

    with Layouts([0, 16, 32, 64, 132], ordering="per_role") as layouts:
        for batch in steps:
            step = layouts.switch(sms_for(batch))      # a few microseconds, no host wait
            with torch.cuda.stream(step.latency_stream):
                decode(batch)
            with torch.cuda.stream(step.batch_stream):
                prefill_chunk()

:meth:`Layouts.switch` orders the new layout's streams after the previous layout's on the
device (events, never a host wait), in one of two ways:

- ``"full"``: both new streams wait for everything queued on both old streams. Any tensor
  written in one step can be read in the next, whatever stream wrote it; but the first latency
  step after a switch also waits for the batch work in flight (a prefill chunk).
- ``"per_role"``: the new latency stream waits only for the old latency stream, the new batch
  stream only for the old batch stream. Decode never waits for prefill at a switch; data that
  crosses roles (a prefill's KV cache joining the decode batch) must then be ordered on its
  own, with a :class:`Handoff` per request (:meth:`Layouts.handoff`).

The end layouts ``0`` (every SM to batch work) and the device's SM count (every SM to the
latency side) are layouts too: both run their two streams on one green context of the whole
device, as servers run pure prefill and pure decode steps.
"""

from __future__ import annotations

import operator
from typing import Iterable, Iterator, NamedTuple

import torch

from ._device import resolve_device
from ._green_context import GreenContext
from ._native import _C
from ._sm_partition import SMPartition

__all__ = ["Handoff", "Layout", "Layouts", "ORDERINGS"]

ORDERINGS = ("full", "per_role")
ROLES = ("latency", "batch")


class Layout(NamedTuple):
    """One split: the latency partition and the rest of the device, with a stream of each.

    ``sm_count`` and ``batch_sm_count`` are the SMs given to each role. In the end layouts
    (``sm_count`` 0 or all SMs) ``latency`` and ``batch`` are one context of the whole device.
    """

    latency_stream: torch.cuda.Stream
    batch_stream: torch.cuda.Stream
    latency: GreenContext
    batch: GreenContext
    sm_count: int
    batch_sm_count: int


class Handoff:
    """The work queued on a stream up to one moment, for another stream to wait for without
    the host waiting: say a request's last prefill chunk, before the decode step that first
    reads its KV cache."""

    __slots__ = ("_event",)

    def __init__(self, stream: torch.cuda.Stream) -> None:
        self._event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        self._event.record(stream)

    def ready(self) -> bool:
        """Whether that work has finished (never waits)."""
        return bool(self._event.query())  # type: ignore[no-untyped-call]

    def wait(self, stream: torch.cuda.Stream) -> None:
        """Make work queued on ``stream`` from now on run after it (on the device)."""
        stream.wait_event(self._event)

    def synchronize(self) -> None:
        """Wait on the host until it has finished."""
        self._event.synchronize()


def check_ordering(ordering: object) -> str:
    if ordering not in ORDERINGS:
        raise ValueError(f"ordering must be one of {ORDERINGS}, got {ordering!r}")
    return str(ordering)


def _make_layout(k: int, total: int, device: int, priority: int) -> Layout:
    if k in (0, total):
        whole = GreenContext(sm_partition=SMPartition.from_device(device))
        return Layout(whole.Stream(priority=priority), whole.Stream(), whole, whole, k, total - k)
    latency, batch = GreenContext.split(num_sms=(k, 0), backfill=(False, True), device_id=device)
    return Layout(latency.Stream(priority=priority), batch.Stream(), latency, batch, latency.sm_count,
                  batch.sm_count)


def _make_fence(layout: Layout) -> _C._StreamFence:
    return _C._StreamFence([(layout.latency._native, layout.latency_stream.cuda_stream),
                            (layout.batch._native, layout.batch_stream.cuda_stream)])


class Layouts:
    """One split ``(k, rest)`` of the device per ``k`` in ``latency_sms``, all alive at once.

    ``k`` is 0 to the device's SM count: each layout between the ends comes from one split, so
    its two contexts never share SMs; layouts of different sizes do share SMs with each other,
    so run one layout's work at a time, as :meth:`switch` orders it. ``latency_priority`` is
    the priority of the latency streams (as for ``torch.cuda.Stream``: lower is higher);
    ``ordering`` is the default of :meth:`switch`. Holding a layout costs two streams and two
    green contexts (one at the ends); :meth:`close` (or the end of a ``with`` block) drops them.
    """

    def __init__(self, latency_sms: Iterable[int], *, device_id: int | None = None,
                 latency_priority: int = 0, ordering: str = "full") -> None:
        if isinstance(latency_sms, (str, bytes)) or not isinstance(latency_sms, Iterable):
            raise TypeError(f"latency_sms must be a sequence of SM counts, got {type(latency_sms).__name__}")
        counts = []
        for k in latency_sms:
            if isinstance(k, bool):
                raise TypeError("latency_sms entries must be ints, not bool")
            try:
                counts.append(operator.index(k))
            except TypeError:
                raise TypeError(f"latency_sms entries must be ints, got {type(k).__name__} ({k!r})") from None
        if not counts:
            raise ValueError("latency_sms must name at least one SM count")
        if len(set(counts)) != len(counts):
            raise ValueError(f"latency_sms has repeated counts: {counts}")
        self._ordering = check_ordering(ordering)
        device = resolve_device(device_id)
        total = _C.device_sm_count(device)
        wrong = [k for k in counts if not 0 <= k <= total]
        if wrong:
            raise ValueError(f"latency_sms entries must be between 0 (every SM to batch work) and "
                             f"{total} (every SM of device {device} to the latency side), got {wrong}")
        self._device = device
        self._layouts: dict[int, Layout] = {}
        self._fences: dict[int, _C._StreamFence] = {}
        for k in counts:
            layout = _make_layout(k, total, device, latency_priority)
            self._layouts[k] = layout
            self._fences[k] = _make_fence(layout)
        self._active: int | None = None

    @property
    def device_id(self) -> int:
        return self._device

    @property
    def ordering(self) -> str:
        """How :meth:`switch` orders a new layout after the previous one by default."""
        return self._ordering

    @property
    def counts(self) -> tuple[int, ...]:
        """The latency partitions' SM counts, in the order given."""
        return tuple(self._layouts)

    @property
    def active(self) -> Layout | None:
        """The layout of the last :meth:`switch`, or None before the first."""
        return None if self._active is None else self._layouts[self._active]

    def __getitem__(self, latency_sms: int) -> Layout:
        """The layout of ``latency_sms`` SMs, without ordering anything (see :meth:`switch`)."""
        try:
            return self._layouts[latency_sms]
        except KeyError:
            raise KeyError(f"no layout of {latency_sms!r} latency SMs; have {list(self._layouts)}") from None

    def __iter__(self) -> Iterator[Layout]:
        return iter(self._layouts.values())

    def __len__(self) -> int:
        return len(self._layouts)

    def switch(self, latency_sms: int, *, ordering: str | None = None) -> Layout:
        """The layout of ``latency_sms`` SMs, its streams ordered after the work queued so far on
        the previously switched-to layout's streams, ``"full"`` or ``"per_role"`` (default: the
        ``ordering`` given to the constructor; see the module's documentation). Nothing is
        ordered when it is the layout already active. Costs a few microseconds of host time and
        never waits for the GPU. Call it from one thread at a time."""
        fence = self._fences.get(latency_sms)
        if fence is None:
            raise KeyError(f"no layout of {latency_sms!r} latency SMs; have {list(self._layouts)}")
        previous = self._active
        if previous != latency_sms:
            if previous is not None:
                mode = self._ordering if ordering is None else check_ordering(ordering)
                if mode == "full":
                    fence.order_after(self._fences[previous])
                else:
                    fence.order_each_after(self._fences[previous])
            self._active = latency_sms
        return self._layouts[latency_sms]

    def handoff(self, *, role: str = "batch") -> Handoff:
        """A :class:`Handoff` of the work queued so far on the active layout's ``role`` stream
        (``"batch"`` or ``"latency"``): with ``"per_role"`` switching, what one role produces for
        the other (a request's KV cache from its prefill) is ordered this way, per request::

            ready = layouts.handoff()            # after the request's last prefill chunk
            ...
            if ready.ready():                    # or, to join at once: ready.wait(step.latency_stream)
                decode_batch.append(request)
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        active = self.active
        if active is None:
            raise RuntimeError("Layouts.handoff: no layout is active yet; call switch() first")
        return Handoff(active.latency_stream if role == "latency" else active.batch_stream)

    def close(self) -> None:
        """Drop every layout (their contexts go back to the pool of idle contexts)."""
        self._fences.clear()
        self._layouts.clear()
        self._active = None

    def __enter__(self) -> Layouts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Layouts(latency_sms={self.counts}, device_id={self._device}, ordering={self._ordering!r})"
