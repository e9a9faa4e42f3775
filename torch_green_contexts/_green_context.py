"""GreenContext: a CUDA green context limited to a partition of the GPU's SMs."""

from __future__ import annotations

import warnings
import inspect
from typing import Any, Sequence, overload

import torch

from ._device import resolve_device
from ._legacy_create import keyword_form
from ._native import _C
from ._sm_partition import SMPartition, split_path
from ._stream import GreenContextStream, new_stream
from ._split_args import split_requests
from ._validation import as_count, as_device_id, check_priority, check_workqueue, for_the_core

_DEPRECATION = (
    "GreenContext.{name}() is deprecated: create a stream with GreenContext.Stream() and run "
    "work on it with `with torch.cuda.stream(stream):` instead"
)


class GreenContext:
    """A CUDA green context: work on its streams runs only on its SMs.

    Give exactly one of ``num_sms`` (at least that many SMs; ``sm_count`` says how many were
    granted) or ``sm_partition`` (from :meth:`SMPartition.split` for disjoint partitions),
    or only a ``workqueue_scope``. Run work on it through :meth:`Stream`::

        ctx = GreenContext(num_sms=16)
        stream = ctx.Stream()
        with torch.cuda.stream(stream):
            y = model(x)  # runs on ctx's SMs

    Green-context streams are custom streams: order them against other streams with CUDA
    events, as for any stream. Separately created contexts may share SMs; contexts from one
    :meth:`split` never do.
    """

    def __init__(
        self,
        *,
        num_sms: int | None = None,
        sm_partition: SMPartition | None = None,
        workqueue_scope: str | None = None,
        workqueue_concurrency_limit: int | None = None,
        device_id: int | None = None,
    ) -> None:
        """Create a green context (see the class documentation for the arguments)."""
        if num_sms is None and sm_partition is None and workqueue_scope is None:
            raise RuntimeError(
                "GreenContext needs at least one of num_sms, sm_partition or workqueue_scope"
            )
        if num_sms is not None and sm_partition is not None:
            raise ValueError("num_sms and sm_partition are mutually exclusive: give one of them")
        count = None if num_sms is None else for_the_core(as_count("num_sms", num_sms))
        if sm_partition is not None and not isinstance(sm_partition, SMPartition):
            raise TypeError(
                f"sm_partition must be an SMPartition, got {type(sm_partition).__name__}"
            )
        scope, limit = check_workqueue(workqueue_scope, workqueue_concurrency_limit)
        device = as_device_id(device_id)
        # The device's range, num_sms's range and the partition's device: the core's rules.
        sms = count if sm_partition is None else sm_partition._native
        self._adopt_native(_C._GreenContext.create(device, sms, scope, limit))

    _native: _C._GreenContext

    def _adopt_native(self, native: _C._GreenContext) -> None:
        self._native = native
        self._previous_stream: torch.cuda.Stream | None = None
        self._current_stream: GreenContextStream | None = None

    @classmethod
    def _of_native(cls, native: _C._GreenContext) -> GreenContext:
        self = object.__new__(cls)
        self._adopt_native(native)
        return self

    @overload
    @staticmethod
    def create(
        *,
        num_sms: int | None = None,
        sm_partition: SMPartition | None = None,
        workqueue_scope: str | None = None,
        workqueue_concurrency_limit: int | None = None,
        device_id: int | None = None,
    ) -> GreenContext: ...

    @overload
    @staticmethod
    def create(num_sms: int, device_id: int = 0, /) -> GreenContext: ...  # torch 2.9-2.14's form

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> GreenContext:
        """Create a green context; the same as calling ``GreenContext(...)``. The arguments are
        keyword-only, as in torch 2.15; torch 2.9-2.14's ``create(num_sms, device_id=0)`` with
        positions still works and warns (FutureWarning) that it will stop working."""
        if args:
            kwargs = keyword_form(args, kwargs)
        return GreenContext(**kwargs)

    @staticmethod
    def split(
        *,
        num_sms: int | Sequence[int] = 0,
        coscheduled_sm_count: int | Sequence[int] = 0,
        preferred_coscheduled_sm_count: int | Sequence[int] = 0,
        backfill: bool | Sequence[bool] = False,
        locality_domain_ids: int | None | Sequence[int | None] = None,
        workqueue_scope: str | None = None,
        workqueue_concurrency_limit: int | None = None,
        device_id: int | None = None,
    ) -> tuple[GreenContext, ...]:
        """Create contexts on disjoint SM partitions of a whole device.

        Partition options are those of :meth:`SMPartition.split`; the workqueue options apply
        to every context. SMs left unassigned stay unused (split an
        :meth:`SMPartition.from_device` yourself to keep the remainder)::

            latency, batch = GreenContext.split(num_sms=(16, 0), backfill=(False, True))
        """
        requests = split_requests(
            num_sms, coscheduled_sm_count, preferred_coscheduled_sm_count, backfill,
            locality_domain_ids,
        )
        scope, limit = check_workqueue(workqueue_scope, workqueue_concurrency_limit)
        device = as_device_id(device_id)
        natives = _C._GreenContext.create_split(device, requests, scope, limit, split_path())
        return tuple(GreenContext._of_native(native) for native in natives)

    @staticmethod
    def max_workqueue_concurrency(device_id: int | None = None) -> int:
        """The device's default limit of concurrent stream-ordered workloads (driver 13.1+)."""
        return _C.max_workqueue_concurrency(resolve_device(device_id))

    def Stream(self, *, priority: int = 0) -> torch.cuda.Stream:
        """A stream of this green context, as a ``torch.cuda.Stream``.

        Run work on it with ``torch.cuda.stream(stream)``; order it against other streams with
        events. The stream keeps this context alive. ``priority`` works as for
        ``torch.cuda.Stream``: 0 is the default, lower numbers are higher priorities, and values
        beyond ``torch.cuda.Stream.priority_range()`` are clamped to it. Like
        ``torch.cuda.Stream()``, streams come from a pool: each priority's first 32 calls
        create distinct streams, later calls hand them out again in turn.
        """
        if priority.__class__ is not int or priority:
            priority = check_priority(priority)
        stream: torch.cuda.Stream = new_stream(self._native, priority)
        return stream

    @property
    def device_id(self) -> int:
        """The device index of this green context."""
        return self._native.device

    @property
    def sm_count(self) -> int:
        """The number of SMs this context actually has."""
        return self._native.sm_count

    @property
    def sm_partition(self) -> SMPartition:
        """This context's SMs as an SMPartition, which can be split; it keeps the context alive."""
        return SMPartition._wrap(self._native.sm_partition(), parent=self)

    @property
    def locality_domain_id(self) -> int | None:
        """The locality domain CUDA reports for this context, or None (driver 13.4+)."""
        return self._native.locality_domain_id

    def set_context(self) -> None:
        """Make this green context current and PyTorch's current stream one of its streams.

        Deprecated: use :meth:`Stream` with ``torch.cuda.stream()``. The switch is ordered
        after the work already queued on the previous current stream.
        """
        warnings.warn(_DEPRECATION.format(name="set_context"), FutureWarning, stacklevel=2)
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(
                "set_context() cannot be used while a CUDA graph is being captured (it would "
                "switch the capturing stream); capture on a stream of this context instead: "
                "`with torch.cuda.graph(graph, stream=ctx.Stream()):`"
            )
        if self._previous_stream is not None:
            raise RuntimeError(
                "set_context() was already called on this green context; call pop_context() first"
            )
        previous = torch.cuda.current_stream(self.device_id)
        if self._current_stream is None:
            self._current_stream = new_stream(self._native, 0)
        stream = self._current_stream
        stream.wait_stream(previous)
        self._native.push_current()
        torch.cuda.set_stream(stream)
        self._previous_stream = previous

    def pop_context(self) -> None:
        """Undo :meth:`set_context`: restore the previous context and stream.

        Deprecated: use :meth:`Stream` with ``torch.cuda.stream()``. Work queued afterwards on
        the restored stream is ordered after the work queued on this context's stream.
        """
        warnings.warn(_DEPRECATION.format(name="pop_context"), FutureWarning, stacklevel=2)
        previous = self._previous_stream
        if previous is None:
            raise RuntimeError("pop_context() without a matching set_context() on this green context")
        assert self._current_stream is not None
        self._native.pop_current()
        previous.wait_stream(self._current_stream)
        torch.cuda.set_stream(previous)
        self._previous_stream = None

    def __repr__(self) -> str:
        return f"GreenContext(device_id={self.device_id}, sm_count={self.sm_count})"



def _report_keyword_signature() -> None:
    """``GreenContext.create`` reports torch 2.15's keyword-only signature: ``__init__``'s."""
    init = inspect.signature(GreenContext.__init__)
    keywords = init.replace(parameters=list(init.parameters.values())[1:], return_annotation="GreenContext")
    GreenContext.create.__signature__ = keywords  # type: ignore[attr-defined]


_report_keyword_signature()
