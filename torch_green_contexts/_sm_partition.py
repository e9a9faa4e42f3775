"""SMPartition: a set of SMs chosen by CUDA, plus its device."""

from __future__ import annotations

import os
from typing import Iterable, Sequence

from ._device import resolve_device
from ._native import _C
from ._split_args import split_requests

# Testing hook: force the split path ("native" or "emulated"); "auto" picks by driver version.
_SPLIT_PATH_ENV = "TORCH_GREEN_CONTEXTS_SPLIT_PATH"


def split_path() -> _C.SplitPath:
    """The split path the environment asks for (unset or empty: auto); ValueError for others."""
    name = os.environ.get(_SPLIT_PATH_ENV) or "auto"
    paths = _C.SplitPath.__members__
    if name not in paths:
        raise ValueError(
            f"{_SPLIT_PATH_ENV}={name!r} is not a split path; allowed values: {', '.join(paths)}"
        )
    return paths[name]


class SMPartition:
    """A set of streaming multiprocessors (SMs) of one device, as CUDA describes it.

    A partition describes SMs and reserves nothing: two contexts made from one partition
    share its SMs. Get one from :meth:`from_device`, :attr:`GreenContext.sm_partition` or
    :meth:`split`; pass it to ``GreenContext(sm_partition=...)``.
    """

    __slots__ = ("_native", "_parent", "__weakref__")

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            "SMPartition objects are not made directly: use SMPartition.from_device(), "
            "GreenContext.sm_partition or SMPartition.split()"
        )

    _native: _C._SmPartition
    _parent: object

    @classmethod
    def _wrap(cls, native: _C._SmPartition, parent: object = None) -> "SMPartition":
        self = object.__new__(cls)
        self._native = native
        self._parent = parent
        return self

    @staticmethod
    def _natives(partitions: Iterable[SMPartition]) -> list[_C._SmPartition]:
        """The core's partitions behind ``partitions``, for the package's calls into the core."""
        return [part._native for part in partitions]

    @classmethod
    def from_device(cls, device_id: int | None = None) -> SMPartition:
        """All SMs of a device (``None``: PyTorch's current device)."""
        device = resolve_device(device_id)
        return cls._wrap(_C._SmPartition.from_device(device))

    @staticmethod
    def union(*partitions: SMPartition) -> SMPartition:
        """The SMs of several disjoint partitions as one partition, for one context that runs on
        all of them: ``GreenContext(sm_partition=SMPartition.union(a, b))``.

        The partitions must be groups or the remainder of one :meth:`split` (the outputs of one
        split are disjoint, and the driver makes a context only from SM resources of one split);
        on drivers before 13.1 that split must make them in one driver call, which it does for
        consecutive groups of one size and the remainder after them. Anything else, the same
        group twice and partitions of different devices are a ValueError naming the rule. Two
        unions may share pieces: contexts made from them then share those SMs (this is how
        overlapped layouts give both sides a shared pool). The union keeps its pieces alive and,
        like a group, cannot be split again directly.
        """
        for part in partitions:
            if not isinstance(part, SMPartition):
                raise TypeError(f"SMPartition.union takes SMPartition objects, got {type(part).__name__}")
        native = _C._SmPartition.union(SMPartition._natives(partitions))
        return SMPartition._wrap(native, parent=partitions)

    @property
    def device_id(self) -> int:
        """The device index this partition belongs to."""
        return self._native.device

    @property
    def sm_count(self) -> int:
        """The number of SMs in this partition."""
        return self._native.sm_count

    @property
    def coscheduled_sm_count(self) -> int:
        """The co-scheduling alignment CUDA reports for this partition's SMs."""
        return self._native.coscheduled_sm_count

    @property
    def locality_domain_id(self) -> int | None:
        """The locality domain of these SMs, or None when unspecified (CUDA driver 13.4+)."""
        return self._native.locality_domain_id

    # Private, beyond torch.cuda.green_contexts' SMPartition: what the package's own tools
    # (sizing, layouts, compat) read of a partition.

    @property
    def _min_partition_size(self) -> int:
        """The smallest group the driver splits these SMs into (``minSmPartitionSize``, driver
        13.0+); 0 where the driver does not report it."""
        return self._native.min_partition_size

    @property
    def _split_granularity(self) -> int:
        """The step the package's tools take through SM counts of this device: the smallest
        partition the driver reports (13.0+), else the co-scheduling alignment (at least 2)."""
        return self._native.split_granularity

    @property
    def _splittable(self) -> bool:
        """Whether the driver splits this partition directly: a device's or a context's SMs. The
        groups and remainder of a split and unions it refuses; make a GreenContext of them and
        split its ``sm_partition``."""
        return self._native.splittable

    def split(
        self,
        *,
        num_sms: int | Sequence[int] = 0,
        coscheduled_sm_count: int | Sequence[int] = 0,
        preferred_coscheduled_sm_count: int | Sequence[int] = 0,
        backfill: bool | Sequence[bool] = False,
        locality_domain_ids: int | None | Sequence[int | None] = None,
    ) -> tuple[tuple[SMPartition, ...], SMPartition | None]:
        """Split this partition into disjoint groups of SMs.

        Each option is a scalar or a sequence; sequences share one length and scalars
        broadcast to it. ``num_sms=0`` asks for the largest group that fits ("discovery");
        with ``backfill=True`` it takes every remaining SM and must be the last group.
        Counts are never rounded: a count the hardware cannot give is a ValueError.

        Returns ``(groups, remainder)``; ``remainder`` is None when no SM is left. Groups and
        remainder are disjoint. A returned partition cannot be split again directly: make a
        GreenContext from it and split that context's ``sm_partition``.
        """
        requests = split_requests(
            num_sms, coscheduled_sm_count, preferred_coscheduled_sm_count, backfill,
            locality_domain_ids,
        )
        native_groups, native_remainder = self._native.split(requests, split_path())
        parts = tuple(SMPartition._wrap(g, parent=self) for g in native_groups)
        remainder = None if native_remainder is None else SMPartition._wrap(native_remainder, parent=self)
        return parts, remainder

    def __repr__(self) -> str:
        return (
            f"SMPartition(device_id={self.device_id}, sm_count={self.sm_count}, "
            f"coscheduled_sm_count={self.coscheduled_sm_count})"
        )
