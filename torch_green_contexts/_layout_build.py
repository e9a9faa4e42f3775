"""How :class:`~torch_green_contexts.layouts.Layouts` makes each layout: a disjoint split of
the device, an end layout (one context of the whole device), or an overlapped layout (two
floors and a shared pool, each side's context the union of its floor and the pool)."""

from __future__ import annotations

from typing import NamedTuple, Tuple, Union

import torch

from ._green_context import GreenContext
from ._native import _C
from ._sm_partition import SMPartition

# Overlapped layouts split the device into groups co-scheduled in pairs: the backfilled rest
# of a split is co-scheduled in pairs only, and the driver combines only SM resources of one
# co-scheduling alignment.
OVERLAP_COSCHEDULING = 2

# What Layouts.switch takes for a layout: the latency SM count of a disjoint or end layout, the
# (latency_floor, batch_floor) of an overlapped one.
LayoutKey = Union[int, Tuple[int, int]]


class Layout(NamedTuple):
    """One layout: a context for each role, with a stream of each.

    ``sm_count`` and ``batch_sm_count`` are the SMs each role's context can use. In a disjoint
    layout they are disjoint; in the end layouts (``sm_count`` 0 or all SMs) ``latency`` and
    ``batch`` are one context of the whole device. In an overlapped layout both contexts hold
    the ``shared_sm_count`` SMs of the shared pool, each beside its own floor
    (:attr:`latency_floor`, :attr:`batch_floor`), which the other side never runs on.
    """

    latency_stream: torch.cuda.Stream
    batch_stream: torch.cuda.Stream
    latency: GreenContext
    batch: GreenContext
    sm_count: int
    batch_sm_count: int
    shared_sm_count: int = 0

    @property
    def latency_floor(self) -> int:
        """The SMs only the latency side runs on."""
        return self.sm_count - self.shared_sm_count

    @property
    def batch_floor(self) -> int:
        """The SMs only the batch side runs on."""
        return self.batch_sm_count - self.shared_sm_count

    @property
    def overlapped(self) -> bool:
        """Whether the two sides share SMs (an overlapped layout)."""
        return self.shared_sm_count > 0

    @property
    def key(self) -> int | tuple[int, int]:
        """What :meth:`Layouts.switch` takes for this layout: the latency SM count of a disjoint
        or end layout, ``(latency_floor, batch_floor)`` of an overlapped one."""
        return (self.latency_floor, self.batch_floor) if self.overlapped else self.sm_count


def granularity(device: int) -> int:
    """The step of the floors of overlapped layouts on ``device``: its split granularity."""
    return SMPartition.from_device(device)._split_granularity


def make_layout(k: int, total: int, device: int, priority: int) -> Layout:
    if k in (0, total):
        whole = GreenContext(sm_partition=SMPartition.from_device(device))
        return Layout(whole.Stream(priority=priority), whole.Stream(), whole, whole, k, total - k)
    latency, batch = GreenContext.split(num_sms=(k, 0), backfill=(False, True), device_id=device)
    return Layout(latency.Stream(priority=priority), batch.Stream(), latency, batch, latency.sm_count,
                  batch.sm_count)


def make_overlapped(latency_floor: int, batch_floor: int, step: int, device: int, priority: int) -> Layout:
    """Floors of ``latency_floor`` and ``batch_floor`` SMs (multiples of ``step``) and the rest
    shared: one split of the device into groups of ``step`` SMs and the rest, so that every
    piece comes from one driver split (as the driver requires of pieces it combines)."""
    n_latency, n_batch = latency_floor // step, batch_floor // step
    n = n_latency + n_batch
    groups, _ = SMPartition.from_device(device).split(
        num_sms=[step] * n + [0], coscheduled_sm_count=OVERLAP_COSCHEDULING, backfill=[False] * n + [True])
    floors, shared = groups[:-1], groups[-1]
    latency = GreenContext(sm_partition=SMPartition.union(*floors[:n_latency], shared))
    batch = GreenContext(sm_partition=SMPartition.union(*floors[n_latency:], shared))
    return Layout(latency.Stream(priority=priority), batch.Stream(), latency, batch, latency.sm_count,
                  batch.sm_count, shared.sm_count)


def make_fence(layout: Layout) -> _C._StreamFence:
    return _C._StreamFence([(layout.latency._native, layout.latency_stream.cuda_stream),
                            (layout.batch._native, layout.batch_stream.cuda_stream)])
