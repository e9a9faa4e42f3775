"""Switching layouts between steps: the host cost of Layouts.switch, that it never waits for the
GPU, the device and host memory of holding N layouts, and that every layout's pair of
partitions stays disjoint while the others exist (%smid probe)."""

from __future__ import annotations

import gc
import time
from typing import Any

import torch

import torch_green_contexts as tgc
from torch_green_contexts import observed_sm_ids
from torch_green_contexts.layouts import Layouts

from .environment import host_rss_bytes
from .stats import summarize

_SPIN_CYCLES = 400_000_000  # about 0.2 s at the H200's clocks


def _switch_cost(layouts: Layouts, switches: int) -> dict[str, Any]:
    """Host time of each call, for real switches (a new layout each step) and for staying."""
    counts = layouts.counts
    real, same = [], []
    clock = time.perf_counter_ns
    for i in range(switches):
        k = counts[i % len(counts)]
        t0 = clock()
        layouts.switch(k)
        real.append((clock() - t0) / 1e3)
        t0 = clock()
        layouts.switch(k)
        same.append((clock() - t0) / 1e3)
        if i % 512 == 511:
            torch.cuda.synchronize()  # keep the streams' queues short (outside the timed calls)
    return {"switch_us": summarize(real), "same_layout_us": summarize(same)}


def _wait_stream_cost(layouts: Layouts, switches: int) -> dict[str, float]:
    """The same ordering written by hand with torch: each new stream waits for both old ones."""
    steps = list(layouts)
    times = []
    clock = time.perf_counter_ns
    for i in range(1, switches + 1):
        old, new = steps[(i - 1) % len(steps)], steps[i % len(steps)]
        t0 = clock()
        for stream in (new.latency_stream, new.batch_stream):
            stream.wait_stream(old.latency_stream)
            stream.wait_stream(old.batch_stream)
        times.append((clock() - t0) / 1e3)
        if i % 512 == 0:
            torch.cuda.synchronize()
    return summarize(times)


def _no_host_wait(layouts: Layouts) -> dict[str, Any]:
    """A long kernel on one layout, then switches to every other: the switches return at once
    while the kernel runs, and work queued after them waits for it on the device."""
    first, *others = layouts.counts
    torch.cuda.synchronize()
    step = layouts.switch(first)
    with torch.cuda.stream(step.batch_stream):
        torch.cuda._sleep(_SPIN_CYCLES)
    spin_done = torch.cuda.Event()
    spin_done.record(step.batch_stream)
    t0 = time.perf_counter()
    for k in others:
        step = layouts.switch(k)
    host_s = time.perf_counter() - t0
    after = torch.cuda.Event()
    after.record(step.latency_stream)
    still_running = not spin_done.query()
    ordered = not after.query()
    torch.cuda.synchronize()
    return {"switches": len(others), "host_us": host_s * 1e6,
            "kernel_still_running_after_switches": still_running,
            "later_work_waited_for_the_kernel": ordered}


def _disjoint(layouts: Layouts, total: int) -> dict[str, Any]:
    out = {}
    for layout in layouts:
        lat, batch = set(observed_sm_ids(layout.latency_stream)), set(observed_sm_ids(layout.batch_stream))
        out[str(layout.sm_count)] = {
            "latency_sms": len(lat), "batch_sms": len(batch), "shared_sms": len(lat & batch),
            "covers_device": len(lat | batch) == total,
            "counts_match": (len(lat), len(batch)) == (layout.latency.sm_count, layout.batch.sm_count),
        }
    return out


def _memory(device: int, granularity: int, holdings: tuple[int, ...]) -> list[dict[str, Any]]:
    rows = []
    for n in holdings:
        gc.collect()
        torch.cuda.synchronize(device)
        tgc.release_idle_contexts()
        free_before, _ = torch.cuda.mem_get_info(device)
        rss_before = host_rss_bytes()
        layouts = Layouts([granularity * (i + 1) for i in range(n)], device_id=device)
        torch.cuda.synchronize(device)
        free_after, _ = torch.cuda.mem_get_info(device)
        rss_after = host_rss_bytes()
        rows.append({
            "layouts": n, "contexts": 2 * n, "streams": 2 * n,
            "device_mib": (free_before - free_after) / 2**20,
            "host_mib": (rss_after - rss_before) / 2**20,
        })
        layouts.close()
        del layouts
    return rows


def run(device: int, latency_sms: tuple[int, ...] = (16, 32, 48, 64), switches: int = 20000,
        holdings: tuple[int, ...] = (1, 2, 4, 8)) -> dict[str, Any]:
    whole = tgc.SMPartition.from_device(device)
    granularity = whole.coscheduled_sm_count
    with Layouts(latency_sms, device_id=device) as layouts:
        disjoint = _disjoint(layouts, whole.sm_count)
        no_wait = _no_host_wait(layouts)
        _switch_cost(layouts, 1000)  # warm-up
        cost = _switch_cost(layouts, switches)
        by_hand = _wait_stream_cost(layouts, switches // 4)
        torch.cuda.synchronize(device)
    memory = _memory(device, granularity, holdings)
    return {
        "latency_sms": list(latency_sms),
        "switches_timed": switches,
        "switch": cost,
        "torch_wait_stream_by_hand_us": by_hand,
        "no_host_wait": no_wait,
        "disjoint_while_all_exist": disjoint,
        "memory": memory,
    }
