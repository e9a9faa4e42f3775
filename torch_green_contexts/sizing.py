"""Size a latency partition from measurements.

:func:`measure` answers "how many SMs does my latency-critical step need, and what does the
batch work lose?" on the GPU it runs on::

    from torch_green_contexts import sizing

    result = sizing.measure(decode_step, load=prefill_chunk)
    print(result.table())
    sms = result.smallest_meeting(deadline_us=2000)       # p99 under load, or None
    latency, batch = GreenContext.split(num_sms=(sms, 0), backfill=(False, True))

For every candidate SM count it splits the device into (count, rest), times ``fn`` on the
first partition with CUDA events (idle, and with ``load`` kept queued on the rest), and
measures the load's rate there; the same figures on plain streams are measured in the same run,
interleaved with the rest in a new order each round, so that every row can be read against them.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import time
import warnings
from collections import deque
from typing import Any, Callable, Iterable, Sequence

import torch

from ._device import resolve_device
from ._green_context import GreenContext
from ._native import _C
from ._sm_partition import SMPartition
from ._sizing_result import Latency, PlainFigures, SizingResult, SizingRow
from ._stats import interleaved

__all__ = [
    "Latency", "PlainFigures", "QueuedLoad", "SizingResult", "SizingRow", "available_counts", "graphed",
    "interleaved", "measure", "time_calls",
]

_POLL_S = 50e-6  # how often the host tops the load up while it waits for `fn`
_QUEUED_LOAD_S = 2e-3  # at least this much load work stays queued between top-ups


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})") from None
    if number < minimum:
        raise ValueError(f"{name} must be {minimum} or more, got {number}")
    return number


def available_counts(device_id: int | None = None) -> list[int]:
    """The SM counts ``k`` for which the device splits exactly into ``k`` SMs and the rest,
    ascending, from the smallest group the driver gives up to all SMs. Read from the driver
    (no context is made), so it holds on any GPU; the last entry is the whole device."""
    device = resolve_device(device_id)
    whole = SMPartition.from_device(device)
    total = whole.sm_count
    step = max(1, whole._native.min_partition_size)
    counts = []
    for k in range(step, total, step):
        try:
            groups, _ = whole.split(num_sms=(k, 0), backfill=(False, True))
        except ValueError:
            continue  # this layout cannot give k SMs exactly
        except RuntimeError as error:
            # The native split reports a count the layout cannot give as a driver error.
            if "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" not in str(error):
                raise
            continue
        if groups[0].sm_count == k:
            counts.append(k)
    counts.append(total)
    return counts


def _check_counts(counts: Any, allowed: list[int]) -> list[int]:
    if counts is None:
        return list(allowed)
    if isinstance(counts, (str, bytes)) or not isinstance(counts, Iterable):
        raise TypeError(f"counts must be a sequence of SM counts, got {type(counts).__name__}")
    chosen = [_positive_int("counts entries", c) for c in counts]
    if not chosen:
        raise ValueError("counts must name at least one SM count")
    wrong = sorted({c for c in chosen if c not in allowed})
    if wrong:
        raise ValueError(f"this device cannot be split exactly into {wrong} SMs and the rest; "
                         f"allowed counts: {allowed}")
    return sorted(set(chosen))


class QueuedLoad:
    """Keeps batch work queued on a stream: ``load()`` launches one piece of it, and every
    :meth:`top_up` launches more until ``depth`` calls are in flight. :meth:`stop` waits for
    them and returns the calls per second of device time (CUDA events around the calls)."""

    def __init__(self, load: Callable[[], Any], stream: torch.cuda.Stream, depth: int) -> None:
        self.load, self.stream, self.depth = load, stream, depth
        self.pending: deque[torch.cuda.Event] = deque()
        self.calls = 0
        self.seconds = 0.0  # device time of the calls, after stop()
        self.first = _event(timing=True)
        self.last = _event(timing=True)

    def start(self) -> None:
        self.calls = 0
        self.first.record(self.stream)
        self.top_up()

    def top_up(self) -> None:
        while self.pending and self.pending[0].query():  # type: ignore[no-untyped-call]
            self.pending.popleft()
        while len(self.pending) < self.depth:
            with torch.cuda.stream(self.stream):
                self.load()
            done = _event()
            done.record(self.stream)
            self.pending.append(done)
            self.calls += 1

    def stop(self) -> float:
        """Waits for the queued calls; returns the calls per second of device time."""
        self.last.record(self.stream)
        self.last.synchronize()
        self.pending.clear()
        self.seconds = float(self.first.elapsed_time(self.last)) / 1e3
        return self.calls / self.seconds


def _event(timing: bool = False) -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=timing)  # type: ignore[no-untyped-call]


def time_calls(fn: Callable[[], Any], stream: torch.cuda.Stream, calls: int,
                load: QueuedLoad | None = None) -> list[float]:
    """Device time in microseconds (CUDA events) of each of ``calls`` calls of ``fn`` on
    ``stream``, one at a time, each waited for before the next (with the GIL released), keeping
    ``load`` (already started) topped up before each call and while waiting for it."""
    start, end = _event(timing=True), _event(timing=True)
    times = []
    for _ in range(calls):
        if load is not None:
            load.top_up()
        with torch.cuda.stream(stream):
            start.record(stream)
            fn()
            end.record(stream)
        if load is None:
            end.synchronize()  # releases the GIL
        else:
            while not end.query():  # type: ignore[no-untyped-call]
                load.top_up()
                time.sleep(_POLL_S)  # releases the GIL
        times.append(start.elapsed_time(end) * 1e3)
    return times


def graphed(fn: Callable[[], Any], stream: torch.cuda.Stream, *, warmup: int = 2) -> Callable[[], None]:
    """``fn`` captured into a CUDA graph on ``stream`` (after ``warmup`` calls there), as servers
    run their decode steps; returns the graph's replay, which launches on the current stream.

    A graph keeps the context it was captured in: its kernels run on the SMs of ``stream``'s
    green context wherever the replay is launched, so capture once per partition.
    """
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    stream.synchronize()
    previous = torch.cuda.current_stream(stream.device)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=stream):
            fn()
    except Exception as error:
        _recover_from_failed_capture(stream, previous)
        raise RuntimeError(f"fn could not be captured into a CUDA graph: {error}") from error
    replay: Callable[[], None] = graph.replay
    return replay


def _recover_from_failed_capture(stream: torch.cuda.Stream, previous: torch.cuda.Stream) -> None:
    """PyTorch leaves two things behind when a capture fails (torch.cuda.graph's exit raises
    before it restores them): the capture stream stays current, and its CUDA random generator
    stays marked as capturing, so that every later random op fails. Restore the stream, and
    let an empty capture on the same stream end the generator's capture."""
    torch.cuda.set_stream(previous)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "the CUDA graph is empty"
            with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=stream):
                pass
    except Exception:  # noqa: BLE001 - best effort; the capture error is what the caller sees
        pass
    finally:
        torch.cuda.set_stream(previous)


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
    (kept for reuse within the idle limit), and no context is left current.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if load is not None and not callable(load):
        raise TypeError(f"load must be callable or None, got {type(load).__name__}")
    rounds = _positive_int("rounds", rounds)
    samples = _positive_int("samples", samples)
    warmup = _positive_int("warmup", warmup, minimum=0)
    seed = _positive_int("seed", seed, minimum=0)
    if not isinstance(graph, bool):
        raise TypeError(f"graph must be a bool, got {type(graph).__name__}")
    device = resolve_device(device_id)
    chosen = _check_counts(counts, available_counts(device))

    began = time.perf_counter()
    with torch.cuda.device(device):
        torch.cuda.synchronize(device)
        layouts = _make_layouts(device, chosen)
        try:
            result = _run(fn, load, device, layouts, rounds, samples, warmup, seed, graph)
        finally:
            torch.cuda.synchronize(device)
            del layouts
    settings = dict(result.settings, seconds=round(time.perf_counter() - began, 2))
    return dataclasses.replace(result, settings=settings)


# (latency context, stream, rest context or None, stream or None) per SM count.
_Layout = tuple[GreenContext, torch.cuda.Stream, "GreenContext | None", "torch.cuda.Stream | None"]


def _make_layouts(device: int, counts: list[int]) -> dict[int, _Layout]:
    total = _C.device_sm_count(device)
    layouts: dict[int, _Layout] = {}
    for k in counts:
        if k == total:
            whole = GreenContext(sm_partition=SMPartition.from_device(device))
            layouts[k] = (whole, whole.Stream(), None, None)
        else:
            first, rest = GreenContext.split(num_sms=(k, 0), backfill=(False, True), device_id=device)
            layouts[k] = (first, first.Stream(), rest, rest.Stream())
    return layouts


def _run(fn: Callable[[], Any], load: Callable[[], Any] | None, device: int,
         layouts: dict[int, _Layout], rounds: int, samples: int, warmup: int, seed: int,
         graph: bool) -> SizingResult:
    plain_fn = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    plain_load = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    plain_fn.wait_stream(torch.cuda.current_stream(device))
    plain_load.wait_stream(torch.cuda.current_stream(device))

    # One call of each alone, after a warm-up call, sets how many load calls stay queued and
    # how long the load runs alone in its reference variant.
    # The step per stream: fn itself, or its replay captured on that stream.
    steps: dict[int, Callable[[], Any]] = {}
    for fn_stream in [plain_fn, *(layout[1] for layout in layouts.values())]:
        steps[id(fn_stream)] = graphed(fn, fn_stream, warmup=max(warmup, 1)) if graph else fn
    fn_once_s = time_calls(steps[id(plain_fn)], plain_fn, 2)[-1] / 1e6
    depth, load_once_s = 2, 0.0
    if load is not None:
        load_once_s = time_calls(load, plain_load, 2)[-1] / 1e6
        depth = max(2, min(64, math.ceil(_QUEUED_LOAD_S / max(load_once_s, 1e-7))))

    # variant name -> (fn stream or None, load stream or None)
    variants: dict[str, tuple[torch.cuda.Stream | None, torch.cuda.Stream | None]] = {
        "plain/idle": (plain_fn, None)}
    if load is not None:
        variants["plain/loaded"] = (plain_fn, plain_load)
        variants["plain/load-alone"] = (None, plain_load)
    for k, (_, first_stream, _, rest_stream) in layouts.items():
        variants[f"{k}/idle"] = (first_stream, None)
        if load is not None and rest_stream is not None:
            variants[f"{k}/loaded"] = (first_stream, rest_stream)

    times: dict[str, list[float]] = {name: [] for name in variants}
    load_runs: dict[str, list[tuple[int, float]]] = {name: [] for name in variants}  # (calls, s)
    loads = {id(s): QueuedLoad(load, s, depth) for _, s in variants.values() if s is not None and load}
    for _, name in interleaved(list(variants), rounds, seed):
        stream, load_stream = variants[name]
        torch.cuda.synchronize(device)
        running = loads[id(load_stream)] if load_stream is not None else None
        if running is not None:
            running.start()
        if stream is None:
            assert running is not None
            # The load alone, for as long as the step's samples take on a plain stream.
            window_s = max(samples * fn_once_s, depth * load_once_s)
            deadline = time.perf_counter() + window_s
            while time.perf_counter() < deadline:
                running.top_up()
                time.sleep(_POLL_S)
        else:
            step = steps[id(stream)]
            time_calls(step, stream, warmup, running)
            times[name].extend(time_calls(step, stream, samples, running))
        if running is not None:
            running.stop()
            load_runs[name].append((running.calls, running.seconds))
    torch.cuda.synchronize(device)

    def rate(name: str) -> float | None:
        runs = load_runs.get(name)
        if not runs:
            return None
        return sum(c for c, _ in runs) / sum(s for _, s in runs)

    rows = []
    for k, (first, _, rest, _) in layouts.items():
        loaded = f"{k}/loaded"
        rows.append(SizingRow(
            sm_count=first.sm_count,
            rest_sm_count=0 if rest is None else rest.sm_count,
            idle=Latency.of(times[f"{k}/idle"]),
            loaded=Latency.of(times[loaded]) if times.get(loaded) else None,
            load_rate=rate(loaded),
        ))
    plain = PlainFigures(
        idle=Latency.of(times["plain/idle"]),
        loaded=Latency.of(times["plain/loaded"]) if times.get("plain/loaded") else None,
        load_rate=rate("plain/loaded"),
        load_alone_rate=rate("plain/load-alone"),
    )
    props = torch.cuda.get_device_properties(device)
    info = {"name": props.name, "index": device, "sm_count": _C.device_sm_count(device),
            "driver": _C.format_driver_version(_C.driver_version()), "torch": torch.__version__}
    settings = {"rounds": rounds, "samples": samples, "warmup": warmup, "seed": seed, "graph": graph,
                "load_depth": depth if load is not None else None, "counts": list(layouts)}
    return SizingResult(tuple(rows), plain, info, settings)
