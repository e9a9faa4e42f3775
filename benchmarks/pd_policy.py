"""The host cost of PrefillDecodePolicy.step() and done() on the GPU, on real layouts and with
its CUDA-event step timer: the budget rule alone, and the P99 mode with an anchor, the guard, a
dwell and KV pressure, over a trace of step figures that moves the choice between layouts. The
profile is made up (what a step costs the host does not depend on its figures); no work is
launched between step() and done(), so the events pass at once and are read every 8 steps.
Beside it, what that cost is made of: the same trace with a timer that records nothing (the
policy's Python and the layout switches), one CUDA event record on a layout's latency stream,
and one layout switch (the streams' ordering after the previous layout's); and the same trace
with one step in ``SAMPLED`` timed (``sample_every``), what a server pays that times fewer steps."""

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
SAMPLED = 4


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


class _Untimed:
    """A step timer that records nothing: the policy's host cost without its CUDA events."""

    pending: tuple[()] = ()

    def begin(self, key: Hashable, tag: Any, stream: Any, step: int, timed: bool = True) -> None:
        pass

    def end(self) -> None:
        pass

    def read(self, observe: Any) -> int:
        return 0


def _trace(policy: PrefillDecodePolicy, steps: int, device: int) -> tuple[list[int], list[int]]:
    """Host nanoseconds of each step() and done() over the trace of step figures."""
    clock = time.perf_counter_ns
    step_ns, done_ns = [], []
    for i in range(steps):
        batch, context = (16, 64_000) if i % 6 < 3 else (1, 1_000)
        late = -1.0 if i % 10 == 0 else 5e5
        t0 = clock()
        policy.step(batch, context, prefill_tokens=4096, tpot_slack_us=100.0, ttft_slack_us=late, kv_used=0.5)
        t1 = clock()
        policy.done()
        t2 = clock()
        step_ns.append(t1 - t0)
        done_ns.append(t2 - t1)
        if i % 1024 == 1023:
            torch.cuda.synchronize(device)
    torch.cuda.synchronize(device)
    return step_ns[steps // 10:], done_ns[steps // 10:]


def _sum_us(step_ns: list[int], done_ns: list[int]) -> dict[str, float]:
    """The summary of each step's step() + done(), in microseconds."""
    return summarize((a + b) / 1e3 for a, b in zip(step_ns, done_ns))


def _parts(layouts: Layouts, steps: int, device: int) -> dict[str, Any]:
    """One timing event's record on the 64-SM layout's latency stream, and one layout switch
    (between 0 and 64 latency SMs in turn), in host microseconds."""
    clock = time.perf_counter_ns
    stream = layouts[64].latency_stream
    event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    record_ns, switch_ns = [], []
    for i in range(steps):
        t0 = clock()
        event.record(stream)
        t1 = clock()
        layouts.switch(64 if i % 2 else 0)
        t2 = clock()
        record_ns.append(t1 - t0)
        switch_ns.append(t2 - t1)
        if i % 1024 == 1023:
            torch.cuda.synchronize(device)
    torch.cuda.synchronize(device)
    return {"event_record_us": summarize(t / 1e3 for t in record_ns[steps // 10:]),
            "switch_us": summarize(t / 1e3 for t in switch_ns[steps // 10:])}


def run(device: int, steps: int = 20000) -> dict[str, Any]:
    total = SMPartition.from_device(device).sm_count
    out: dict[str, Any] = {"steps": steps}
    with Layouts([*COUNTS, total], device_id=device, ordering="per_role") as layouts:
        profile = _profile(layouts)
        options = {"budget rule": {}, "p99 mode": {"mode": "p99", "anchor": 64, "dwell_steps": 16,
                                                   "kv_pressure": (0.85, 0.3)}}
        for name, extra in options.items():
            def traced(**timing: Any) -> tuple[PrefillDecodePolicy, list[int], list[int]]:
                made = PrefillDecodePolicy(profile, layouts, tpot_slo_us=5000, **extra, **timing)  # type: ignore[arg-type]
                return (made, *_trace(made, steps, device))

            policy, step_ns, done_ns = traced()
            _, bare_step_ns, bare_done_ns = traced(timer=_Untimed())
            _, sampled_step_ns, sampled_done_ns = traced(sample_every=SAMPLED)
            out[name] = {"step_and_done_us": _sum_us(step_ns, done_ns),
                         "step_us": summarize(t / 1e3 for t in step_ns),
                         "untimed_step_and_done_us": _sum_us(bare_step_ns, bare_done_ns),
                         "sampled_step_and_done_us": _sum_us(sampled_step_ns, sampled_done_ns),
                         "sample_every": SAMPLED,
                         "chosen": {str(k): v for k, v in policy.stats()["chosen"].items()}}
        out["parts"] = _parts(layouts, steps, device)
    return out
