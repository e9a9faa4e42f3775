"""Several splits of one device kept alive, and a switch between them per step.

A server that sizes its latency partition per step (more SMs for a large decode batch, fewer
when prefill must catch up) keeps one split per size and picks one each step::

    from torch_green_contexts.layouts import Layouts

    layouts = Layouts(latency_sms=(16, 32, 48, 64))
    for batch in requests:
        step = layouts.switch(sms_for(batch))          # a few microseconds, no host wait
        with torch.cuda.stream(step.latency_stream):
            decode(batch)
        with torch.cuda.stream(step.batch_stream):
            prefill_chunk()

What a dict of splits does not give: :meth:`Layouts.switch` orders the new layout's two
streams after everything queued so far on the previous layout's two streams (one event per
stream, recorded there and waited on by the new streams, on the device), so tensors written
in one step can be read in the next whatever layout each step used, without a device-wide
synchronisation and without the host waiting.
"""

from __future__ import annotations

import operator
from typing import Iterable, Iterator, NamedTuple

import torch

from ._device import resolve_device
from ._green_context import GreenContext
from ._native import _C

__all__ = ["Layout", "Layouts"]


class Layout(NamedTuple):
    """One split: the latency partition and the rest of the device, with a stream of each."""

    latency_stream: torch.cuda.Stream
    batch_stream: torch.cuda.Stream
    latency: GreenContext
    batch: GreenContext

    @property
    def sm_count(self) -> int:
        """SMs of the latency partition."""
        return self.latency.sm_count


class Layouts:
    """One split ``(k, rest)`` of the device per ``k`` in ``latency_sms``, all alive at once.

    Each layout's two contexts come from one split, so they never share SMs; layouts of
    different sizes do share SMs with each other, so run one layout's work at a time, as
    :meth:`switch` orders it. ``latency_priority`` is the priority of the latency streams
    (as for ``torch.cuda.Stream``: lower is higher). Holding a layout costs two green contexts
    and two streams; :meth:`close` (or the end of a ``with`` block) drops them.
    """

    def __init__(self, latency_sms: Iterable[int], *, device_id: int | None = None,
                 latency_priority: int = 0) -> None:
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
        device = resolve_device(device_id)
        total = _C.device_sm_count(device)
        wrong = [k for k in counts if not 1 <= k < total]
        if wrong:
            raise ValueError(f"latency_sms entries must be between 1 and {total - 1} (device {device} "
                             f"has {total} SMs and the rest needs some), got {wrong}")
        self._device = device
        self._layouts: dict[int, Layout] = {}
        self._fences: dict[int, _C._StreamFence] = {}
        for k in counts:
            latency, batch = GreenContext.split(num_sms=(k, 0), backfill=(False, True), device_id=device)
            layout = Layout(latency.Stream(priority=latency_priority), batch.Stream(), latency, batch)
            self._layouts[k] = layout
            self._fences[k] = _C._StreamFence([
                (latency._native, layout.latency_stream.cuda_stream),
                (batch._native, layout.batch_stream.cuda_stream),
            ])
        self._active: int | None = None

    @property
    def device_id(self) -> int:
        return self._device

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

    def switch(self, latency_sms: int) -> Layout:
        """The layout of ``latency_sms`` SMs, its streams ordered after the work queued so far on
        the previously switched-to layout's streams (nothing to order when it is the same
        layout). Costs a few microseconds of host time and never waits for the GPU. Call it from
        one thread at a time."""
        fence = self._fences.get(latency_sms)
        if fence is None:
            raise KeyError(f"no layout of {latency_sms!r} latency SMs; have {list(self._layouts)}")
        previous = self._active
        if previous != latency_sms:
            if previous is not None:
                fence.order_after(self._fences[previous])
            self._active = latency_sms
        return self._layouts[latency_sms]

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
        return f"Layouts(latency_sms={self.counts}, device_id={self._device})"
