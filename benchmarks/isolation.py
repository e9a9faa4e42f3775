"""Isolation: latency of a small GEMM on a partition while a saturating GEMM loop runs on the
rest of the GPU, beside what users would do instead (plain streams, a high-priority stream,
PyTorch's own separately created contexts, which overlap). The loop is kept queued by
sizing.QueuedLoad, whose rate is per second of device time (CUDA events around its calls)."""

from __future__ import annotations

import functools
import time
from typing import Any

import torch

from torch_green_contexts import GreenContext, observed_sm_ids
from torch_green_contexts.sizing import QueuedLoad

from .environment import Builtin
from .stats import interleaved, summarize


LOAD_DEPTH = 3


def run(device: int, builtin: Builtin, partition_sms: int = 16, latency_n: int = 2048,
        load_n: int = 8192, rounds: int = 10, samples: int = 100, warmup: int = 10) -> dict[str, Any]:
    """p50/p99 latency (CUDA events, microseconds) of a `latency_n`^3 bf16 GEMM per variant."""
    torch.manual_seed(0)
    make = lambda n: torch.randn(n, n, device=device, dtype=torch.bfloat16)  # noqa: E731
    lat_a, lat_b, lat_out = make(latency_n), make(latency_n), make(latency_n)
    reference = (lat_a.float() @ lat_b.float())

    latency_ctx, load_ctx = GreenContext.split(
        num_sms=(partition_sms, 0), backfill=(False, True), device_id=device)
    plain_latency, plain_load = torch.cuda.Stream(), torch.cuda.Stream()
    high_priority = torch.cuda.Stream(priority=-1)

    # (latency stream, load stream or None) per variant.
    setups: dict[str, tuple[torch.cuda.Stream, torch.cuda.Stream | None]] = {
        "whole GPU, idle (plain stream)": (plain_latency, None),
        f"ours: {latency_ctx.sm_count}-SM partition, idle": (latency_ctx.Stream(), None),
        f"ours: {latency_ctx.sm_count}-SM partition, load on the other {load_ctx.sm_count}":
            (latency_ctx.Stream(), load_ctx.Stream()),
        "plain stream, load on another plain stream": (plain_latency, plain_load),
        "high-priority stream, load on a plain stream": (high_priority, plain_load),
    }
    builtin_counts = None
    if builtin.available:
        small, large = builtin.create(partition_sms, device), builtin.create(
            torch.cuda.get_device_properties(device).multi_processor_count - partition_sms, device)
        builtin_latency = small.Stream()
        setups["torch built-in: separate contexts, idle"] = (builtin_latency, None)
        setups["torch built-in: separate contexts, load on the other"] = (builtin_latency, large.Stream())
        builtin_counts = _sm_counts(small, large)

    # Which SMs each side of a loaded variant runs on, read with the %smid probe.
    sm_overlap: dict[str, dict[str, int]] = {}
    for name, (stream, load_stream) in setups.items():
        if load_stream is not None:
            latency_sms, load_sms = set(observed_sm_ids(stream)), set(observed_sm_ids(load_stream))
            sm_overlap[name] = {"latency_sms": len(latency_sms), "load_sms": len(load_sms),
                                "shared_sms": len(latency_sms & load_sms)}

    loads: dict[int, QueuedLoad] = {}
    for _, load_stream in setups.values():
        if load_stream is not None and id(load_stream) not in loads:
            a, b, out = make(load_n), make(load_n), make(load_n)
            loads[id(load_stream)] = QueuedLoad(functools.partial(torch.mm, a, b, out=out), load_stream,
                                                LOAD_DEPTH)
    load_flop = 2.0 * load_n**3
    torch.cuda.synchronize(device)

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def sample(stream: torch.cuda.Stream, load: QueuedLoad | None) -> tuple[float, float]:
        if load is not None:
            load.top_up()
        host_start = time.perf_counter()
        with torch.cuda.stream(stream):
            start.record(stream)
            torch.mm(lat_a, lat_b, out=lat_out)
            end.record(stream)
        end.synchronize()
        host_us = (time.perf_counter() - host_start) * 1e6
        return start.elapsed_time(end) * 1000.0, host_us

    names = list(setups)
    device_us: dict[str, list[float]] = {name: [] for name in names}
    host_us: dict[str, list[float]] = {name: [] for name in names}
    load_tflops: dict[str, list[float]] = {name: [] for name in names}
    correct: dict[str, bool] = {}
    for _, name in interleaved(names, rounds):
        stream, load_stream = setups[name]
        load = loads[id(load_stream)] if load_stream is not None else None
        stream.wait_stream(torch.cuda.current_stream(device))
        if load is not None:
            load.start()
        for _ in range(warmup):
            sample(stream, load)
        for _ in range(samples):
            d, h = sample(stream, load)
            device_us[name].append(d)
            host_us[name].append(h)
        if load is not None:
            load_tflops[name].append(load.stop() * load_flop / 1e12)
        if name not in correct:
            torch.cuda.current_stream(device).wait_stream(stream)
            correct[name] = bool(torch.allclose(lat_out.float(), reference, rtol=2e-2, atol=1.0))
    torch.cuda.synchronize(device)

    idle = summarize(device_us[names[1]])
    results: dict[str, Any] = {}
    for name in names:
        s = summarize(device_us[name])
        results[name] = {
            "device_us": s,
            "host_us": summarize(host_us[name]),
            "p50_vs_partition_idle": s["median"] / idle["median"],
            "p99_vs_partition_idle": s["p99"] / idle["p99"],
            "load_tflops": summarize(load_tflops[name]) if load_tflops[name] else None,
            "result_correct": correct[name],
        }
    return {
        "latency_gemm": f"{latency_n}^3 bf16",
        "load_gemm": f"{load_n}^3 bf16, {LOAD_DEPTH} queued at all times",
        "load_rate": "per second of device time (CUDA events around the queued calls)",
        "rounds": rounds,
        "samples_per_round": samples,
        "ours_sm_counts": [latency_ctx.sm_count, load_ctx.sm_count],
        "builtin_sm_counts": builtin_counts,
        "variants": names,
        "observed_sms": sm_overlap,
        "results": results,
        "samples_device_us": device_us,
    }


def _sm_counts(*contexts: Any) -> list[int | None]:
    counts: list[int | None] = []
    for ctx in contexts:
        count = getattr(ctx, "sm_count", None)
        counts.append(count if isinstance(count, int) else None)
    return counts
