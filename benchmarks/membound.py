"""What partitions do not isolate: a memory-bound latency step (a large layer norm, a large copy)
on a small partition while a memory-bound load (large copies) runs on the rest of the SMs,
against the same step idle on the same partition. SM partitions split SMs, not DRAM bandwidth
or L2; a compute-bound load (a GEMM loop) on the rest is measured beside it for contrast."""

from __future__ import annotations

from typing import Any, Callable

import torch

from torch_green_contexts import GreenContext
from torch_green_contexts.sizing import QueuedLoad, time_calls

from .stats import interleaved, summarize


def run(device: int, partition_sms: int = 16, rounds: int = 4, samples: int = 40,
        warmup: int = 3) -> dict[str, Any]:
    torch.manual_seed(0)
    gib = 2**30
    rows, cols = 16384, 8192  # 256 MiB of bf16 in, 256 MiB out
    x = torch.randn(rows, cols, device=device, dtype=torch.bfloat16)
    weight = torch.ones(cols, device=device, dtype=torch.bfloat16)
    bias = torch.zeros(cols, device=device, dtype=torch.bfloat16)
    copy_src = torch.empty(gib // 4 // 2, device=device, dtype=torch.bfloat16)  # 256 MiB
    copy_dst = torch.empty_like(copy_src)
    load_src = torch.empty(gib // 2, device=device, dtype=torch.bfloat16)  # 1 GiB
    load_dst = torch.empty_like(load_src)
    gemm = [torch.randn(8192, 8192, device=device, dtype=torch.bfloat16) for _ in range(3)]

    steps: dict[str, tuple[Callable[[], Any], int]] = {  # name -> (call, bytes moved)
        "layer_norm 16384x8192 bf16": (
            lambda: torch.nn.functional.layer_norm(x, (cols,), weight, bias),
            2 * x.numel() * x.element_size()),
        "copy 256 MiB": (lambda: copy_dst.copy_(copy_src), 2 * copy_src.numel() * copy_src.element_size()),
    }
    loads: dict[str, tuple[Callable[[], Any], float]] = {  # name -> (call, bytes or flops per call)
        "memory load (1 GiB copies)": (lambda: load_dst.copy_(load_src),
                                       2.0 * load_src.numel() * load_src.element_size()),
        "compute load (8192^3 GEMMs)": (lambda: torch.mm(gemm[0], gemm[1], out=gemm[2]), 2.0 * 8192**3),
    }

    small, rest = GreenContext.split(num_sms=(partition_sms, 0), backfill=(False, True), device_id=device)
    small_stream, rest_stream = small.Stream(), rest.Stream()
    plain_step, plain_load = torch.cuda.Stream(device), torch.cuda.Stream(device)
    variants: dict[str, tuple[torch.cuda.Stream, str | None, torch.cuda.Stream | None]] = {
        f"{small.sm_count}-SM partition, idle": (small_stream, None, None),
        "whole GPU, idle (plain stream)": (plain_step, None, None),
    }
    for load_name in loads:
        variants[f"{small.sm_count}-SM partition, {load_name} on the other {rest.sm_count}"] = (
            small_stream, load_name, rest_stream)
        variants[f"plain stream, {load_name} on another plain stream"] = (plain_step, load_name, plain_load)

    torch.cuda.synchronize(device)
    results: dict[str, Any] = {}
    for step_name, (step, step_bytes) in steps.items():
        times: dict[str, list[float]] = {name: [] for name in variants}
        load_rates: dict[str, list[float]] = {name: [] for name in variants}
        for _, name in interleaved(list(variants), rounds, seed=len(step_name)):
            stream, load_used, load_stream = variants[name]
            torch.cuda.synchronize(device)
            running = None
            if load_used is not None and load_stream is not None:
                running = QueuedLoad(loads[load_used][0], load_stream, depth=3)
                running.start()
            time_calls(step, stream, warmup, running)
            times[name].extend(time_calls(step, stream, samples, running))
            if running is not None:
                load_rates[name].append(running.stop() * loads[str(load_used)][1])
        idle = summarize(times[next(iter(variants))])
        per_variant = {}
        for name in variants:
            s = summarize(times[name])
            used = variants[name][1]
            per_variant[name] = {
                "device_us": s,
                "step_gb_per_s": step_bytes / (s["median"] * 1e-6) / 1e9,
                "p50_vs_partition_idle": s["median"] / idle["median"],
                "p99_vs_partition_idle": s["p99"] / idle["p99"],
                "load": None if used is None else {
                    "name": used,
                    "rate": summarize(load_rates[name]),
                    "unit": "GB/s" if "memory" in used else "FLOP/s",
                },
            }
        results[step_name] = per_variant
    torch.cuda.synchronize(device)
    return {
        "partition_sms": [small.sm_count, rest.sm_count],
        "rounds": rounds,
        "samples_per_round": samples,
        "variants": list(variants),
        "results": results,
    }
