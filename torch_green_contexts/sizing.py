"""Size a latency partition from measurements.

:func:`measure` answers "how many SMs does my latency-critical step need, and what does the
batch work lose?" on the GPU it runs on::

    from torch_green_contexts import sizing

    result = sizing.measure(decode_step, load=prefill_chunk)
    print(result.table())
    sms = result.smallest_meeting(deadline_us=2000)       # p99 under load, or None
    if sms is None:
        raise SystemExit("no partition meets 2000 us beside the load")
    latency, batch = GreenContext.split(num_sms=(sms, 0), backfill=(False, True))

For every candidate SM count it splits the device into (count, rest), times ``fn`` on the
first partition with CUDA events (idle, and with ``load`` kept queued on the rest), and
measures the load's rate there; the same figures on plain streams are measured in the same run,
interleaved with the rest in a new order each round, so that every row can be read against them.

:func:`profile` does the same for a step that depends on a parameter (a decode step per batch
size), and returns a :class:`LatencyProfile` that :class:`~torch_green_contexts.policy.SplitPolicy`
reads per step. :func:`profile_layouts` times a decode step over batch sizes and context lengths
on every layout of a :class:`~torch_green_contexts.layouts.Layouts` (disjoint and overlapped
alike) and fits a cost per layout, which
:class:`~torch_green_contexts.pd_policy.PrefillDecodePolicy` reads.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence, TypeVar

from . import _device, _validation
from ._errors import SplitError
from ._sizing import _layout_sweep, _sweep
from ._sizing._profile import LatencyProfile
from ._sizing._sizing_result import Latency, PlainFigures, SizingResult, SizingRow
from ._sizing._stats import interleaved, percentile
from ._sizing._step_costs import LayoutProfile, StepCost
from ._sizing._timing import QueuedLoad, graphed, time_calls
from ._sm_partition import SMPartition

__all__ = [
    "Latency", "LatencyProfile", "LayoutProfile", "PlainFigures", "QueuedLoad", "SizingResult", "SizingRow",
    "StepCost", "available_counts", "graphed", "interleaved", "measure", "percentile", "profile", "profile_layouts",
    "time_calls",
]

_P = TypeVar("_P", int, float)


def available_counts(device_id: int | None = None) -> list[int]:
    """The SM counts ``k`` for which the device splits exactly into ``k`` SMs and the rest,
    ascending, from the smallest group the driver gives up to all SMs. Read from the driver
    (no context is made), so it holds on any GPU; the last entry is the whole device."""
    device = _device.resolve_device(device_id)
    whole = SMPartition.from_device(device)
    total = whole.sm_count
    step = whole._split_granularity
    counts = []
    for k in range(step, total, step):
        try:
            groups, _ = whole.split(num_sms=(k, 0), backfill=(False, True))
        except SplitError:
            continue  # this layout cannot give k SMs exactly
        if groups[0].sm_count == k:
            counts.append(k)
    counts.append(total)
    return counts


def _requested_counts(counts: Any) -> list[int] | None:
    """``counts`` checked as far as no device is needed: None, or ints of 1 or more, at least one."""
    if counts is None:
        return None
    chosen = [_validation.as_int_at_least("counts entries", c, 1)
              for c in _validation.as_sequence("counts", counts, "a sequence of SM counts")]
    if not chosen:
        raise ValueError("counts must name at least one SM count")
    return chosen


def _against_device(chosen: list[int] | None, allowed: list[int]) -> list[int]:
    """The counts of :func:`_requested_counts` (None: every allowed one) against the device's."""
    if chosen is None:
        return list(allowed)
    wrong = sorted({c for c in chosen if c not in allowed})
    if wrong:
        raise ValueError(f"this device cannot be split exactly into {wrong} SMs and the rest; "
                         f"allowed counts: {allowed}")
    return sorted(set(chosen))


def measure(
    fn: Callable[[], Any],
    *,
    load: Callable[[], Any] | None = None,
    device_id: int | None = None,
    counts: Sequence[int] | None = None,
    rounds: int = 3,
    samples: int = 20,
    warmup: int = 2,
    seed: int = 0,
    graph: bool = False,
    progress: bool = True,
) -> SizingResult:
    """Time ``fn`` on partitions of every size in ``counts`` (default: :func:`available_counts`).

    ``fn`` launches the latency-critical step on PyTorch's current stream; ``load``, when
    given, launches one piece of batch work on the current stream and is kept queued on the
    rest of the device while ``fn`` is timed. Each round runs every variant (each count idle
    and under load, and the plain-stream references) in a new order; a variant runs ``warmup``
    untimed and ``samples`` timed calls of ``fn``, one at a time. Both callables must be safe
    to call repeatedly on any stream; work queued by earlier calls is finished before a
    variant starts. With ``graph=True`` ``fn`` is captured into a CUDA graph once per
    partition (and once on the plain stream) by :func:`graphed`, and its replays are timed: the
    figures then leave out Python's launch overhead, as a server that replays its step does.
    The GIL is released while waiting on the GPU; the contexts made are dropped at the end
    (kept for reuse within the idle limit), and no context is left current. A progress line
    goes to standard error unless ``progress`` is false.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    options = _sweep.Options.check(load, rounds, samples, warmup, seed, graph, progress)
    requested = _requested_counts(counts)  # what needs no device, before the device is looked up
    device = _device.resolve_device(device_id)
    chosen = _against_device(requested, available_counts(device))
    return _sweep.sweep(device, chosen, [fn], options, "sizing")[0]


def profile(
    make_step: Callable[[_P], Callable[[], Any]],
    params: Sequence[_P],
    *,
    load: Callable[[], Any] | None = None,
    counts: Sequence[int] | None = None,
    rounds: int = 3,
    samples: int = 20,
    warmup: int = 2,
    graph: bool = False,
    progress: bool = True,
    device_id: int | None = None,
    seed: int = 0,
) -> LatencyProfile:
    """A latency profile over a workload parameter: what :func:`measure` measures, for the
    step ``make_step(p)`` of each ``p`` in ``params`` (say a decode step per batch-size bucket).

    ``params`` are sizes, finite numbers of 0 or more (sorted ascending in the result); ``make_step(p)`` returns the
    zero-argument callable that launches the step for ``p`` on the current stream. The green
    contexts of every count are made once and shared by all parameters; each parameter gets
    its own plain-stream references, in the same run. The other arguments are those of
    :func:`measure`. Returns a :class:`LatencyProfile`, which answers "what latency at ``p`` on
    ``k`` SMs" and "how many SMs for ``p`` to meet a deadline" conservatively between the
    measured parameters.
    """
    if not callable(make_step):
        raise TypeError(f"make_step must be callable, got {type(make_step).__name__}")
    chosen_params = _check_params(params)
    options = _sweep.Options.check(load, rounds, samples, warmup, seed, graph, progress)
    requested = _requested_counts(counts)  # what needs no device, before the device is looked up
    device = _device.resolve_device(device_id)
    chosen = _against_device(requested, available_counts(device))
    steps = []
    for p in chosen_params:
        step = make_step(p)
        if not callable(step):
            raise TypeError(f"make_step({p!r}) must return a callable, got {type(step).__name__}")
        steps.append(step)
    results = _sweep.sweep(device, chosen, steps, options, "profile")
    seconds = sum(r.settings["seconds"] for r in results)
    return LatencyProfile(tuple(zip(chosen_params, results)),
                          {"params": list(chosen_params), "seconds": round(seconds, 2)})


def _check_params(params: Any) -> list[Any]:
    chosen = _validation.as_sequence("params", params, "a sequence of numbers")
    if not chosen:
        raise ValueError("params must name at least one parameter")
    for p in chosen:
        _validation.check_non_negative("params", p, "each a size such as a decode batch size")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"params has repeated values: {chosen}")
    return sorted(chosen)




def profile_layouts(
    make_step: Callable[[int, int], Callable[[], Any]],
    points: Sequence[tuple[int, int]],
    layouts: Any,
    *,
    load: Callable[[], Any] | None = None,
    rounds: int = 3,
    samples: int = 20,
    warmup: int = 2,
    graph: bool = False,
    progress: bool = True,
    seed: int = 0,
) -> LayoutProfile:
    """A step's latency on every layout of ``layouts`` (a
    :class:`~torch_green_contexts.layouts.Layouts`), over ``points``.

    ``points`` are ``(batch, context_tokens)`` pairs: the decode batch size and the total context
    tokens its requests hold (what a decode step's cost follows); ``make_step(batch,
    context_tokens)`` returns the zero-argument callable that launches that step on the current
    stream. Each point is timed on each layout's latency stream with ``load`` (one piece of
    batch work, say a prefill chunk) kept queued on the layout's batch stream, or idle where the
    layout leaves the batch side no SM. The other arguments are those of :func:`measure`. The
    result fits ``a * context/1k + b * batch + c`` per layout and percentile
    (:meth:`LayoutProfile.cost`), never below a measured point.
    """
    if not callable(make_step):
        raise TypeError(f"make_step must be callable, got {type(make_step).__name__}")
    if not hasattr(layouts, "keys") or not hasattr(layouts, "device_id") or not len(layouts):
        raise TypeError(f"layouts must be a Layouts with at least one layout, got {type(layouts).__name__}")
    options = _sweep.Options.check(load, rounds, samples, warmup, seed, graph, progress)
    chosen = _check_points(points)
    steps = {}
    for batch, context in chosen:
        step = make_step(batch, context)
        if not callable(step):
            raise TypeError(f"make_step({batch}, {context}) must return a callable, got {type(step).__name__}")
        steps[(batch, context)] = step
    return _layout_sweep.sweep_layouts(layouts, steps, options)


def _check_points(points: Any) -> list[tuple[int, int]]:
    chosen = []
    for point in _validation.as_sequence("points", points, "a sequence of (batch, context_tokens) pairs"):
        if isinstance(point, (str, bytes)) or not isinstance(point, Iterable) or len(tuple(point)) != 2:
            raise TypeError(f"points must be (batch, context_tokens) pairs, got {point!r}")
        batch, context = tuple(point)
        chosen.append((_validation.as_int_at_least("a point's batch", batch, 1),
                       _validation.as_int_at_least("a point's context_tokens", context, 0)))
    if not chosen:
        raise ValueError("points must name at least one (batch, context_tokens) pair")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"points has repeated pairs: {chosen}")
    return chosen
