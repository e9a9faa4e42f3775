"""The seam between a serving loop and a policy that picks a layout per step.

Both policies of the package, :class:`~torch_green_contexts.policy.SplitPolicy` (one SLO, from
a latency profile) and :class:`~torch_green_contexts.pd_policy.PrefillDecodePolicy` (both SLOs,
from a layout profile), are :class:`StepPolicy` objects, so a loop written against this
protocol runs either::

    def decode_step(policy: StepPolicy, batch, queued_tokens):
        layout = policy.step(len(batch), sum(r.context for r in batch), prefill_tokens=queued_tokens)
        with torch.cuda.stream(layout.latency_stream):
            decode(batch)
        policy.done()

A policy works over any :class:`LayoutSet` (a :class:`~torch_green_contexts.layouts.Layouts`,
or a stand-in with the same members, such as a simulator's) and times the steps it hands out
with a :class:`StepTimer` (CUDA events by default; a simulator passes its own clock's).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Protocol, Sized, Tuple, Union, runtime_checkable

LayoutKey = Union[int, Tuple[int, int]]

__all__ = ["LayoutKey", "LayoutLike", "LayoutSet", "StepPolicy", "StepTimer"]


class LayoutLike(Protocol):
    """What a policy reads of a layout (:class:`~torch_green_contexts.layouts.Layout`)."""

    @property
    def key(self) -> LayoutKey: ...
    @property
    def sm_count(self) -> int: ...
    @property
    def batch_sm_count(self) -> int: ...
    @property
    def batch_floor(self) -> int: ...
    @property
    def latency_stream(self) -> Any: ...
    @property
    def batch_stream(self) -> Any: ...


class LayoutSet(Protocol):
    """What a policy uses of a :class:`~torch_green_contexts.layouts.Layouts`."""

    @property
    def keys(self) -> tuple[LayoutKey, ...]: ...
    @property
    def counts(self) -> tuple[int, ...]: ...
    def __getitem__(self, key: LayoutKey) -> Any: ...
    def switch(self, key: LayoutKey, *, ordering: str | None = None) -> Any: ...


class StepTimer(Protocol):
    """Times the steps a policy hands out, never waiting for the device: :meth:`begin` when a
    step starts on a layout's latency stream, :meth:`end` once its work is launched, and
    :meth:`read` for the timings the device has finished (``pending`` holds the unread ones)."""

    @property
    def pending(self) -> Sized: ...
    def begin(self, key: Hashable, tag: Any, stream: Any, step: int, timed: bool = True) -> None: ...
    def end(self) -> None: ...
    def read(self, observe: Callable[[Hashable, Any, float], None]) -> int: ...


@runtime_checkable
class StepPolicy(Protocol):
    """A per-step layout choice: :meth:`step` switches to the layout for a decode step and
    returns it, :meth:`done` marks the step's work launched, :meth:`idle_key` names the layout
    while nothing decodes. A policy reads the figures it models and ignores the others."""

    def step(self, batch: int, context_tokens: int = 0, /, *, prefill_tokens: int = 0,
             tpot_slack_us: float = 0.0, ttft_slack_us: float | None = None, kv_used: float | None = None) -> Any: ...
    def done(self) -> None: ...
    def idle_key(self) -> LayoutKey: ...
    def update(self) -> int: ...
    def stats(self) -> dict[str, Any]: ...
