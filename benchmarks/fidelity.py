"""Fidelity: bf16 GEMM throughput on contexts of k SMs against a plain stream, and against
k/132 of the whole GPU; plus what explains any gap (order of measurement, clocks, kernels)."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from torch_green_contexts import GreenContext

from .environment import ClockSampler
from .stats import interleaved, summarize

PLAIN = "plain stream"


def _label(count: int) -> str:
    return f"ours: {count} SMs"


def run(device: int, counts: tuple[int, ...] = (8, 16, 24, 32, 48, 64, 96, 128, 132),
        n: int = 8192, rounds: int = 5, target_ms: float = 120.0) -> dict[str, Any]:
    """TFLOP/s of an n^3 bf16 GEMM per variant: one pass in a fixed order (a plain stream
    first, then counts ascending, as a naive measurement would), then `rounds` interleaved."""
    torch.manual_seed(0)
    a, b, out = (torch.randn(n, n, device=device, dtype=torch.bfloat16) for _ in range(3))
    flops = 2.0 * n * n * n
    contexts = {count: GreenContext(num_sms=count, device_id=device) for count in counts}
    streams: dict[str, torch.cuda.Stream] = {PLAIN: torch.cuda.Stream()}
    granted: dict[str, int] = {PLAIN: torch.cuda.get_device_properties(device).multi_processor_count}
    for count, ctx in contexts.items():
        streams[_label(count)] = ctx.Stream()
        granted[_label(count)] = ctx.sm_count
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def gemms(stream: torch.cuda.Stream, reps: int) -> float:
        """Seconds per GEMM over `reps` back-to-back GEMMs on `stream` (after one warm-up)."""
        with torch.cuda.stream(stream):
            torch.mm(a, b, out=out)
            start.record(stream)
            for _ in range(reps):
                torch.mm(a, b, out=out)
            end.record(stream)
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / reps

    with ClockSampler(device) as clocks:
        # The naive pass comes first, on a GPU that has been idle, as a first measurement would.
        sequential = {name: flops / gemms(stream, 3) / 1e12 for name, stream in streams.items()}
        reps = {name: max(3, min(60, math.ceil(target_ms / 1000.0 * tflops * 1e12 / flops)))
                for name, tflops in sequential.items()}
        tflops: dict[str, list[float]] = {name: [] for name in streams}
        windows: dict[str, list[tuple[float, float]]] = {name: [] for name in streams}
        for _, name in interleaved(list(streams), rounds):
            began = time.perf_counter()
            tflops[name].append(flops / gemms(streams[name], reps[name]) / 1e12)
            windows[name].append((began, time.perf_counter()))

    whole = summarize(tflops[PLAIN])["median"]
    results: dict[str, Any] = {}
    for name in streams:
        s = summarize(tflops[name])
        share = granted[name] / granted[PLAIN]
        clock_means = [c for c in (clocks.between(*w) for w in windows[name]) if c]
        results[name] = {
            "sm_count": granted[name],
            "tflops": s,
            "tflops_sequential_pass": sequential[name],
            "ratio_to_share_of_whole": s["median"] / (whole * share),
            "ratio_to_plain": s["median"] / whole,
            "reps_per_measurement": reps[name],
            "sm_clock_mhz": (sum(c["sm_clock_mhz"] for c in clock_means) / len(clock_means)
                             if clock_means else None),
            "power_w": (sum(c["power_w"] for c in clock_means) / len(clock_means)
                        if clock_means else None),
        }
    return {
        "gemm": f"{n}^3 bf16",
        "rounds": rounds,
        "whole_gpu_tflops": whole,
        "clock_samples": len(clocks.samples),
        "results": results,
        "kernels": _kernel_names(device, {name: streams[name] for name in
                                          (PLAIN, _label(counts[-1]), _label(counts[-2]), _label(counts[0]))
                                          if name in streams}, a, b, out),
    }


def _kernel_names(device: int, streams: dict[str, torch.cuda.Stream], a: torch.Tensor,
                  b: torch.Tensor, out: torch.Tensor) -> dict[str, Any]:
    """The GPU kernels one GEMM launches on each stream, read with torch.profiler."""
    names: dict[str, Any] = {}
    try:
        from torch.profiler import ProfilerActivity, profile

        for label, stream in streams.items():
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                with torch.cuda.stream(stream):
                    torch.mm(a, b, out=out)
                stream.synchronize()
            names[label] = sorted({e.name for e in prof.events()
                                   if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA})
    except Exception as error:  # noqa: BLE001 - a profiler that cannot run is reported, not fatal
        names["error"] = f"{type(error).__name__}: {error}"
    torch.cuda.synchronize(device)
    return names
