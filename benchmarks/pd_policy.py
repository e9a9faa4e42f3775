"""The host cost of PrefillDecodePolicy.step() and done() on the GPU, on real layouts and with
its CUDA-event step timer: the budget rule alone, and the P99 mode with an anchor, the guard, a
dwell and KV pressure, over a trace of step figures that moves the choice between layouts. The
profile is made up (what a step costs the host does not depend on its figures); no work is
launched between step() and done(), so the events pass at once and are read every 8 steps."""

from __future__ import annotations

import time
from typing import Any, Hashable

import torch

from torch_green_contexts import SMPartition
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.sizing import Latency, LayoutProfile

from .stats import summarize

COUNTS = (0, 16, 32, 64)


def _profile(layouts: Layouts) -> LayoutProfile:
    """A decode step of ``1000 + 2 * batch + 4 * context/1k`` us scaled by 128 over a layout's
    latency SMs (the end layout of none: as 32)."""
    measured: dict[Hashable, Any] = {}
    sms: dict[Hashable, tuple[int, int, int]] = {}
    for key in layouts.keys:
        layout = layouts[key]
        speed = layout.sm_count or 32
        measured[key] = {(b, c): _latency((1000 + 2 * b + 4 * c / 1000) * 128 / speed)
                         for b in (1, 16, 64) for c in (1_000, 64_000, 256_000)}
        sms[key] = (layout.sm_count, layout.batch_sm_count, layout.shared_sm_count)
    return LayoutProfile(measured, sms, {k: True for k in layouts.keys}, {"made up": True})


def _latency(us: float) -> Latency:
    return Latency(p50=us, p90=us, p99=us, mean=us, samples=10)


def run(device: int, steps: int = 20000) -> dict[str, Any]:
    total = SMPartition.from_device(device).sm_count
    out: dict[str, Any] = {"steps": steps}
    with Layouts([*COUNTS, total], device_id=device, ordering="per_role") as layouts:
        profile = _profile(layouts)
        options = {"budget rule": {}, "p99 mode": {"mode": "p99", "anchor": 64, "dwell_steps": 16,
                                                   "kv_pressure": (0.85, 0.3)}}
        for name, extra in options.items():
            policy = PrefillDecodePolicy(profile, layouts, tpot_slo_us=5000, **extra)  # type: ignore[arg-type]
            clock = time.perf_counter_ns
            step_ns, done_ns = [], []
            for i in range(steps):
                batch, context = (16, 64_000) if i % 6 < 3 else (1, 1_000)
                late = -1.0 if i % 10 == 0 else 5e5
                t0 = clock()
                policy.step(batch, context, prefill_tokens=4096, tpot_slack_us=100.0, ttft_slack_us=late,
                            kv_used=0.5)
                t1 = clock()
                policy.done()
                t2 = clock()
                step_ns.append(t1 - t0)
                done_ns.append(t2 - t1)
                if i % 1024 == 1023:
                    torch.cuda.synchronize(device)
            torch.cuda.synchronize(device)
            both = [a + b for a, b in zip(step_ns, done_ns)][steps // 10:]
            out[name] = {"step_and_done_us": summarize(t / 1e3 for t in both),
                         "step_us": summarize(t / 1e3 for t in step_ns[steps // 10:]),
                         "chosen": {str(k): v for k, v in policy.stats()["chosen"].items()}}
    return out
