"""The measuring loop behind :func:`torch_green_contexts.sizing.measure` and ``profile``: one
split per SM count, the step timed on each (idle and beside the load on the rest) and on plain
streams, every variant once per round in a new order."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable

import torch

from .._green_context import GreenContext
from .._native import _C
from .._sm_partition import SMPartition
from .._validation import as_bool, as_int_at_least
from ._progress import Progress
from ._sizing_result import Latency, PlainFigures, SizingResult, SizingRow
from ._stats import interleaved
from ._timing import POLL_S, QueuedLoad, graphed, time_calls

_QUEUED_LOAD_S = 2e-3  # at least this much load work stays queued between top-ups


def queued_depth(load_once_s: float) -> int:
    """How many load calls to keep queued so that at least _QUEUED_LOAD_S of work is waiting."""
    return max(2, min(64, math.ceil(_QUEUED_LOAD_S / max(load_once_s, 1e-7))))


@dataclasses.dataclass(frozen=True)
class Options:
    load: Callable[[], Any] | None
    rounds: int
    samples: int
    warmup: int
    seed: int
    graph: bool
    progress: bool

    @classmethod
    def check(cls, load: Any, rounds: Any, samples: Any, warmup: Any, seed: Any, graph: Any,
              progress: Any) -> Options:
        if load is not None and not callable(load):
            raise TypeError(f"load must be callable or None, got {type(load).__name__}")
        graph, progress = as_bool("graph", graph), as_bool("progress", progress)
        return cls(load, as_int_at_least("rounds", rounds, 1), as_int_at_least("samples", samples, 1),
                   as_int_at_least("warmup", warmup, 0), as_int_at_least("seed", seed, 0), graph, progress)


def sweep(device: int, chosen: list[int], steps: list[Callable[[], Any]], options: Options,
           what: str) -> list[SizingResult]:
    """One :class:`SizingResult` per step, all on one set of contexts made for ``chosen``."""
    total = _C.device_sm_count(device)
    per_step = 1 + len(chosen) + (2 + len([k for k in chosen if k != total]) if options.load else 0)
    bar = Progress(what, per_step * options.rounds * len(steps), enabled=options.progress)
    results = []
    with torch.cuda.device(device):
        torch.cuda.synchronize(device)
        layouts = _make_layouts(device, chosen)
        try:
            for i, fn in enumerate(steps):
                began = time.perf_counter()
                note = f"step {i + 1} of {len(steps)}" if len(steps) > 1 else ""
                result = _run(fn, device, layouts, options, lambda: bar.advance(note=note))
                settings = dict(result.settings, seconds=round(time.perf_counter() - began, 2))
                results.append(dataclasses.replace(result, settings=settings))
        finally:
            torch.cuda.synchronize(device)
            del layouts
            bar.close()
    return results


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


def _run(fn: Callable[[], Any], device: int, layouts: dict[int, _Layout], options: Options,
         advance: Callable[[], None]) -> SizingResult:
    load, rounds, samples, warmup = options.load, options.rounds, options.samples, options.warmup
    seed, graph = options.seed, options.graph
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
        depth = queued_depth(load_once_s)

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
                time.sleep(POLL_S)
        else:
            step = steps[id(stream)]
            time_calls(step, stream, warmup, running)
            times[name].extend(time_calls(step, stream, samples, running))
        if running is not None:
            running.stop()
            load_runs[name].append((running.calls, running.seconds))
        advance()
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
