"""The measuring loop behind :func:`torch_green_contexts.sizing.profile_layouts`: a decode step
per (batch, context) point timed on the latency stream of every layout of a
:class:`~torch_green_contexts.layouts.Layouts`, beside the load kept queued on the layout's
batch stream, every variant once per round in a new order."""

from __future__ import annotations

import time
from typing import Any, Callable, Hashable

import torch

from ._progress import Progress
from ._sizing_result import Latency
from ._stats import interleaved
from ._step_costs import LayoutProfile, Point, key_name
from ._sweep import Options, queued_depth
from ._timing import QueuedLoad, graphed, time_calls

def sweep_layouts(layouts: Any, steps: dict[Point, Callable[[], Any]], options: Options) -> LayoutProfile:
    began = time.perf_counter()
    device = layouts.device_id
    chosen = list(layouts)
    # Variant name -> (layout, point). A layout that gives the batch side no SM is timed idle.
    variants: dict[str, tuple[Any, Point]] = {}
    for layout in chosen:
        for point in steps:
            variants[f"{key_name(layout.key)}@{point[0]}x{point[1]}"] = (layout, point)
    bar = Progress("layout profile", len(variants) * options.rounds, enabled=options.progress)
    times: dict[str, list[float]] = {name: [] for name in variants}
    with torch.cuda.device(device):
        torch.cuda.synchronize(device)
        # The step per (stream, point): fn itself, or its replay captured on that stream.
        runs: dict[tuple[int, Point], Callable[[], Any]] = {}
        for layout, point in variants.values():
            stream = layout.latency_stream
            if (id(stream), point) not in runs:
                fn = steps[point]
                runs[(id(stream), point)] = graphed(fn, stream, warmup=max(options.warmup, 1)) if options.graph else fn
        loads: dict[int, QueuedLoad] = {}
        if options.load is not None:
            plain = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
            once_s = time_calls(options.load, plain, 2)[-1] / 1e6
            depth = queued_depth(once_s)
            for layout in chosen:
                if layout.batch_sm_count > 0:
                    loads.setdefault(id(layout.batch_stream), QueuedLoad(options.load, layout.batch_stream, depth))
        try:
            for _, name in interleaved(list(variants), options.rounds, options.seed):
                layout, point = variants[name]
                torch.cuda.synchronize(device)
                running = loads.get(id(layout.batch_stream)) if layout.batch_sm_count > 0 else None
                if running is not None:
                    running.start()
                step = runs[(id(layout.latency_stream), point)]
                time_calls(step, layout.latency_stream, options.warmup, running)
                times[name].extend(time_calls(step, layout.latency_stream, options.samples, running))
                if running is not None:
                    running.stop()
                bar.advance()
        finally:
            torch.cuda.synchronize(device)
            bar.close()
    measured: dict[Hashable, dict[Point, Latency]] = {}
    for name, (layout, point) in variants.items():
        measured.setdefault(layout.key, {})[point] = Latency.of(times[name])
    return LayoutProfile(
        measured,
        {layout.key: (layout.sm_count, layout.batch_sm_count, layout.shared_sm_count) for layout in chosen},
        {layout.key: options.load is not None and layout.batch_sm_count > 0 for layout in chosen},
        {"rounds": options.rounds, "samples": options.samples, "warmup": options.warmup, "seed": options.seed,
         "graph": options.graph, "points": [list(p) for p in steps], "device": torch.cuda.get_device_name(device),
         "seconds": round(time.perf_counter() - began, 2)})
