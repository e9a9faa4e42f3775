"""Several splits of one device kept alive, and a switch between them per step.

A server that sizes its latency partition per step (more SMs for a large decode batch, fewer
when prefill must catch up) keeps one split per size and picks one each step::

    from torch_green_contexts import SMPartition
    from torch_green_contexts.layouts import Layouts

    total = SMPartition.from_device().sm_count            # 132 on an H200
    with Layouts([0, 16, 32, 64, total], ordering="per_role") as layouts:
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

Overlapped layouts (``overlapped=[(latency_floor, batch_floor), ...]``) give each side a floor
of SMs the other never runs on and let both use the rest, the shared pool: the latency context
holds its floor and the pool, the batch context its floor and the pool, and the latency stream
runs at the highest priority, so decode has SMs no prefill kernel can occupy plus the pool
whenever it needs it, while prefill keeps most of the GPU. Such a layout is switched to by its
``(latency_floor, batch_floor)`` key::

    layouts = Layouts([0], overlapped=[(16, 64), (32, 32)], ordering="per_role")
    step = layouts.switch((16, 64))   # step.sm_count == 16 + shared, step.shared_sm_count == shared

The first launch of each kernel in each context loads it there (CUDA's lazy module loading),
and a load can wait for work running on the device: run every kernel a server uses once on
every layout before serving (:meth:`Layouts.warm_up`), or set ``CUDA_MODULE_LOADING=EAGER``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import torch

from . import _device, _layout_args, _layout_build, _validation
from ._layout_args import ORDERINGS
from ._layout_build import Layout
from ._native import _C

__all__ = ["Handoff", "Layout", "Layouts", "ORDERINGS"]


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


class Layouts:
    """Layouts of the device, all alive at once, one of them active at a time.

    For each ``k`` in ``latency_sms`` (0 to the device's SM count), a split ``(k, rest)``: each
    layout between the ends comes from one split, so its two contexts never share SMs. For each
    ``(latency_floor, batch_floor)`` in ``overlapped``, an overlapped layout: floors that are
    multiples of the device's smallest partition (8 SMs on Hopper, read from the driver) and
    leave at least that many SMs to share. Different layouts share SMs with each other, so run
    one layout's work at a time, as :meth:`switch` orders it.

    ``latency_priority`` is the priority of the latency streams (as for ``torch.cuda.Stream``:
    lower is higher); by default 0 in disjoint and end layouts and the highest priority in
    overlapped ones, where the latency side competes with the batch side for the shared SMs.
    ``ordering`` is the default of :meth:`switch`: ``"full"`` unless given. Holding a layout
    costs two streams and two green contexts (one at the ends); :meth:`close` (or the end of a
    ``with`` block) drops them.
    """

    def __init__(self, latency_sms: Iterable[int] = (), *, overlapped: Iterable[tuple[int, int]] = (),
                 device_id: int | None = None, latency_priority: int | None = None,
                 ordering: str = "full") -> None:
        counts, pairs = _layout_args.layout_requests(latency_sms, overlapped)
        if latency_priority is not None:
            latency_priority = _validation.as_count("latency_priority", latency_priority, "an int or None")
        self._ordering = _layout_args.check_ordering(ordering)
        _layout_args.check_without_device(counts, pairs, _validation.as_device_id(device_id))
        device = _device.resolve_device(device_id)
        total = _C.device_sm_count(device)
        _layout_args.check_counts(counts, total, device)
        step = _layout_build.granularity(device) if pairs else 1
        _layout_args.check_floors(pairs, step, total, device)
        self._device = device
        self._layouts: dict[_layout_build.LayoutKey, Layout] = {}
        self._fences: dict[_layout_build.LayoutKey, _C._StreamFence] = {}
        disjoint_priority = 0 if latency_priority is None else latency_priority
        for k in counts:
            self._add(_layout_build.make_layout(k, total, device, disjoint_priority))
        if pairs:
            overlap_priority = _validation.highest_priority() if latency_priority is None else latency_priority
            for latency_floor, batch_floor in pairs:
                self._add(_layout_build.make_overlapped(latency_floor, batch_floor, step, device, overlap_priority))
        self._active: _layout_build.LayoutKey | None = None

    def _add(self, layout: Layout) -> None:
        self._layouts[layout.key] = layout
        self._fences[layout.key] = _layout_build.make_fence(layout)

    @property
    def device_id(self) -> int:
        return self._device

    @property
    def ordering(self) -> str:
        """How :meth:`switch` orders a new layout after the previous one by default."""
        return self._ordering

    @property
    def counts(self) -> tuple[int, ...]:
        """The latency SM counts of the disjoint and end layouts, in the order given."""
        return tuple(k for k in self._layouts if isinstance(k, int))

    @property
    def keys(self) -> tuple[_layout_build.LayoutKey, ...]:
        """What :meth:`switch` takes for each layout: the counts of the disjoint and end layouts,
        then the ``(latency_floor, batch_floor)`` pairs of the overlapped ones."""
        return tuple(self._layouts)

    @property
    def active(self) -> Layout | None:
        """The layout of the last :meth:`switch`, or None before the first."""
        return None if self._active is None else self._layouts[self._active]

    def __getitem__(self, key: _layout_build.LayoutKey) -> Layout:
        """The layout of ``key`` (see :attr:`keys`), without ordering anything (see :meth:`switch`);
        ValueError for a key that has no layout here."""
        layout = self._layouts.get(_as_key(key))
        if layout is None:
            raise ValueError(f"{_no_layout(key)}; have {list(self._layouts)}")
        return layout

    def __iter__(self) -> Iterator[Layout]:
        return iter(self._layouts.values())

    def __len__(self) -> int:
        return len(self._layouts)

    def switch(self, key: _layout_build.LayoutKey, *, ordering: str | None = None) -> Layout:
        """The layout of ``key`` (a latency SM count, or an overlapped layout's
        ``(latency_floor, batch_floor)``), its streams ordered after the work queued so far on
        the previously switched-to layout's streams, ``"full"`` or ``"per_role"`` (default: the
        ``ordering`` given to the constructor; see the module's documentation). Nothing is
        ordered when it is the layout already active. Costs a few microseconds of host time and
        never waits for the GPU. Call it from one thread at a time."""
        key = _as_key(key)
        fence = self._fences.get(key)
        if fence is None:
            raise ValueError(f"{_no_layout(key)}; have {list(self._layouts)}")
        previous = self._active
        if previous != key:
            if previous is not None:
                mode = self._ordering if ordering is None else _layout_args.check_ordering(ordering)
                if mode == "full":
                    fence.order_after(self._fences[previous])
                else:
                    fence.order_each_after(self._fences[previous])
            self._active = key
        return self._layouts[key]

    def handoff(self, *, role: str = "batch") -> Handoff:
        """A :class:`Handoff` of the work queued so far on the active layout's ``role`` stream
        (``"batch"`` or ``"latency"``): with ``"per_role"`` switching, what one role produces for
        the other (a request's KV cache from its prefill) is ordered this way, per request::

            ready = layouts.handoff()            # after the request's last prefill chunk
            ...
            if ready.ready():                    # or, to join at once: ready.wait(step.latency_stream)
                decode_batch.append(request)
        """
        _layout_args.check_role(role)
        active = self.active
        if active is None:
            raise RuntimeError("Layouts.handoff: no layout is active yet; call switch() first")
        return Handoff(active.latency_stream if role == "latency" else active.batch_stream)

    def warm_up(self, launch: Callable[[], Any]) -> None:
        """Call ``launch`` (which queues work on PyTorch's current stream) once on each stream
        of every layout, then wait for it all: the kernels it launches are then loaded in every
        context, and a later first use cannot wait on a module load (see the module's
        documentation). The active layout stays as it was."""
        seen: set[int] = set()
        for layout in self._layouts.values():
            for stream in (layout.latency_stream, layout.batch_stream):
                if id(stream) in seen:
                    continue
                seen.add(id(stream))
                with torch.cuda.stream(stream):
                    launch()
        torch.cuda.synchronize(self._device)

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
        pairs = [k for k in self._layouts if not isinstance(k, int)]
        extra = f", overlapped={pairs}" if pairs else ""
        return f"Layouts(latency_sms={self.counts}{extra}, device_id={self._device}, ordering={self._ordering!r})"


def _no_layout(key: Any) -> str:
    return f"no layout of {key!r} latency SMs" if isinstance(key, int) else f"no overlapped layout {key!r}"


def _as_key(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
