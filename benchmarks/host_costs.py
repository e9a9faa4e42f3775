"""Host-side costs: Stream(), GreenContext(num_sms=16), GreenContext.split, sm_count(stream), and
the host and device memory that contexts and streams hold. Variants are interleaved round by
round."""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

import torch

from torch_green_contexts import GreenContext, _C, sm_count
from torch_green_contexts._device import resolve_device
from torch_green_contexts._validation import as_count

from .environment import Builtin, driver_baselines, host_rss_bytes, timed
from .stats import interleaved, summarize

NS_PER_US = 1000.0


def _collect(times: dict[str, list[int]], scale: float = NS_PER_US) -> dict[str, dict[str, float]]:
    return {name: summarize([t / scale for t in values]) for name, values in times.items() if values}


def stream_cost(device: int, builtin: Builtin, rounds: int = 2000, warmup: int = 100) -> dict[str, Any]:
    """Microseconds per Stream() call: ours (steady state: from the context's stream pool), a
    plain torch.cuda.Stream() (PyTorch's pool), PyTorch's own green-context Stream(), and the
    bare driver call cuGreenCtxStreamCreate (timed in C++)."""
    ours = GreenContext(num_sms=16, device_id=device)
    handle = ours._native.handle
    calls: dict[str, Callable[[], Any]] = {
        "ours: GreenContext.Stream()": ours.Stream,
        "torch.cuda.Stream()": torch.cuda.Stream,
    }
    reference = None
    if builtin.available:
        reference = builtin.create(16, device)
        calls["torch built-in: GreenContext.Stream()"] = reference.Stream
    raw_name = "driver: cuGreenCtxStreamCreate"
    for fn in calls.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[int]] = {name: [] for name in [*calls, raw_name]}
    gc.collect()
    gc.disable()
    try:
        for _, name in interleaved([*calls, raw_name], rounds):
            if name == raw_name:
                times[name].append(driver_baselines().raw_stream_create(handle, 0)[0])
            else:
                elapsed, stream = timed(calls[name])
                times[name].append(elapsed)
                del stream
    finally:
        gc.enable()
    return {"unit": "us", "rounds": rounds, "results": _collect(times)}


def sm_count_cost(device: int, builtin: Builtin, rounds: int = 2000, batch: int = 50,
                  warmup: int = 200) -> dict[str, Any]:
    """Microseconds per sm_count() call, as a kernel launcher would make it before every launch,
    for each kind of stream it answers differently: a stream of GreenContext.Stream() (answered
    from its context), the same stream wrapped by PyTorch as an ExternalStream (asked of the
    driver, then looked up), a plain torch.cuda.Stream() and the current (default) stream (the
    driver says: no green context), and a stream of PyTorch's own green contexts (the driver is
    asked for the stream's context and its SMs). Beside them, what code calls today to size a
    grid: torch.cuda.get_device_properties(device).multi_processor_count. Each sample is the mean
    of `batch` consecutive calls (one call is near the clock's resolution)."""
    ours = GreenContext(num_sms=16, device_id=device)
    green = ours.Stream()
    external = torch.cuda.ExternalStream(green.cuda_stream, device=torch.device("cuda", device))
    plain = torch.cuda.Stream(device=device)
    calls: dict[str, Callable[[], Any]] = {
        "ours: sm_count(GreenContext.Stream())": lambda: sm_count(green),
        "ours: sm_count(the same stream as an ExternalStream)": lambda: sm_count(external),
        "ours: sm_count(torch.cuda.Stream())": lambda: sm_count(plain),
        "ours: sm_count() on the default stream": sm_count,
        "torch.cuda.get_device_properties(device).multi_processor_count":
            lambda: torch.cuda.get_device_properties(device).multi_processor_count,
    }
    reference = None
    if builtin.available:
        reference = builtin.create(16, device)
        foreign = reference.Stream()
        calls["ours: sm_count(stream of torch's built-in GreenContext)"] = lambda: sm_count(foreign)
    answers = {name: fn() for name, fn in calls.items()}
    for fn in calls.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in calls}
    gc.collect()
    gc.disable()
    try:
        for _, name in interleaved(list(calls), rounds):
            fn = calls[name]
            start = time.perf_counter_ns()
            for _ in range(batch):
                fn()
            times[name].append((time.perf_counter_ns() - start) / batch)
    finally:
        gc.enable()
    del reference
    return {"unit": "us", "rounds": rounds, "batch": batch, "answers": answers,
            "results": {name: summarize([t / NS_PER_US for t in values]) for name, values in times.items()}}


def create_cost(device: int, builtin: Builtin, num_sms: int = 16, rounds: int = 60,
                split_sms: tuple[int, int] | None = None) -> dict[str, Any]:
    """Microseconds to create (and, separately, destroy) a context of `num_sms` SMs: ours, the
    same driver calls made bare from C++, and PyTorch's own. With `split_sms` (a, b) also
    GreenContext.split(num_sms=(a, b)) against the bare split-and-create calls, made one after
    the other and on two threads at once. Also the first Stream() of a fresh context (which
    creates its driver stream) and where GreenContext(num_sms) spends its time, step by step."""
    ours_name, raw_name = "ours: GreenContext(num_sms)", "driver: the same calls"
    steps_name = "ours: the same, step by step"
    recycled_name = "ours: GreenContext(num_sms), reusing a dropped context"
    split_name, builtin_name = "ours: GreenContext.split", "torch built-in: GreenContext.create"
    raw_split, raw_split_threads = "driver: split + 2 creates", "driver: split + 2 creates on 2 threads"
    first_stream_name = "ours: first Stream() of a fresh context"
    variants = [ours_name, raw_name, steps_name, recycled_name, first_stream_name]
    if split_sms is not None:
        variants += [split_name, raw_split, raw_split_threads]
    if builtin.available:
        variants.append(builtin_name)
    create: dict[str, list[int]] = {name: [] for name in variants}
    destroy: dict[str, list[int]] = {name: [] for name in variants}
    steps: dict[str, list[int]] = {
        "device and argument checks": [], "_C.partition_with_at_least (split)": [],
        "_C._GreenContext.create": [], "driver: split part": [], "driver: create part": []}
    first_stream: list[int] = []
    granted: dict[str, list[int]] = {}

    def ours_single() -> None:
        elapsed, ctx = timed(lambda: GreenContext(num_sms=num_sms, device_id=device))
        create[ours_name].append(elapsed)
        granted[ours_name] = [ctx.sm_count]
        start = time.perf_counter_ns()
        del ctx
        destroy[ours_name].append(time.perf_counter_ns() - start)

    def ours_first_stream() -> None:
        ctx = GreenContext(num_sms=num_sms, device_id=device)
        stream_ns, stream = timed(ctx.Stream)
        first_stream.append(stream_ns)
        del stream, ctx

    def ours_recycled() -> None:
        _C.set_idle_context_limit(1)
        GreenContext(num_sms=num_sms, device_id=device)  # dropped at once: kept idle
        elapsed, ctx = timed(lambda: GreenContext(num_sms=num_sms, device_id=device))
        create[recycled_name].append(elapsed)
        start = time.perf_counter_ns()
        del ctx
        destroy[recycled_name].append(time.perf_counter_ns() - start)
        _C.set_idle_context_limit(0)

    def ours_steps() -> None:
        t0 = time.perf_counter_ns()
        dev = resolve_device(device)
        as_count("num_sms", num_sms)
        _C.device_sm_count(dev)
        t1 = time.perf_counter_ns()
        partition = _C.partition_with_at_least(dev, num_sms)
        t2 = time.perf_counter_ns()
        native = _C._GreenContext.create(dev, partition, None, None)
        t3 = time.perf_counter_ns()
        steps["device and argument checks"].append(t1 - t0)
        steps["_C.partition_with_at_least (split)"].append(t2 - t1)
        steps["_C._GreenContext.create"].append(t3 - t2)
        create[steps_name].append(t3 - t0)
        start = time.perf_counter_ns()
        del native, partition
        destroy[steps_name].append(time.perf_counter_ns() - start)

    def ours_split() -> None:
        assert split_sms is not None
        elapsed, contexts = timed(lambda: GreenContext.split(num_sms=split_sms, device_id=device))
        create[split_name].append(elapsed)
        granted[split_name] = [c.sm_count for c in contexts]
        start = time.perf_counter_ns()
        del contexts
        destroy[split_name].append(time.perf_counter_ns() - start)

    def raw(name: str, fn: Callable[[], tuple[int, int, int]]) -> Callable[[], None]:
        def run() -> None:
            created, destroyed, split_part = fn()
            create[name].append(created)
            destroy[name].append(destroyed)
            if name == raw_name:
                steps["driver: split part"].append(split_part)
                steps["driver: create part"].append(created - split_part)
        return run

    def reference() -> None:
        elapsed, ctx = timed(lambda: builtin.create(num_sms, device))
        create[builtin_name].append(elapsed)
        start = time.perf_counter_ns()
        del ctx
        destroy[builtin_name].append(time.perf_counter_ns() - start)

    runs: dict[str, Callable[[], None]] = {
        ours_name: ours_single,
        raw_name: raw(raw_name, lambda: driver_baselines().raw_create(device, num_sms)),
        steps_name: ours_steps,
        recycled_name: ours_recycled,
        first_stream_name: ours_first_stream,
        builtin_name: reference,
    }
    if split_sms is not None:
        runs[split_name] = ours_split
        runs[raw_split] = raw(raw_split, lambda: driver_baselines().raw_split_create(device, split_sms[0], False))
        runs[raw_split_threads] = raw(
            raw_split_threads, lambda: driver_baselines().raw_split_create(device, split_sms[0], True))
    # Every variant but the recycled one measures real creations and destructions.
    previous_limit = _C.idle_context_limit()
    _C.set_idle_context_limit(0)
    for name in variants:  # warm-up: first creations load modules and settle the driver
        for _ in range(3):
            runs[name]()
    for series in (*create.values(), *destroy.values(), *steps.values(), first_stream):
        series.clear()
    gc.collect()
    free_before = torch.cuda.mem_get_info(device)[0]
    gc.disable()
    try:
        for _, name in interleaved(variants, rounds):
            runs[name]()
    finally:
        gc.enable()
    gc.collect()
    _C.set_idle_context_limit(previous_limit)
    free_after = torch.cuda.mem_get_info(device)[0]
    return {
        "unit": "us",
        "rounds": rounds,
        "device_free_mib_change_over_all_rounds": (free_after - free_before) / float(1 << 20),
        "num_sms": num_sms,
        "split_sms": list(split_sms) if split_sms else None,
        "granted_sm_counts": granted,
        "create": _collect({k: v for k, v in create.items() if v}),
        "destroy": _collect({k: v for k, v in destroy.items() if v}),
        "steps": _collect(steps),
        "first_stream_of_fresh_context": summarize([t / NS_PER_US for t in first_stream]),
        "samples_create_us": {name: [round(t / NS_PER_US, 1) for t in values]
                              for name, values in create.items() if values},
    }


def memory_cost(device: int, builtin: Builtin, contexts: int = 16) -> dict[str, Any]:
    """Device memory (cuMemGetInfo) and host RSS held per context, per first stream of a
    context, and per further stream, for ours and PyTorch's own contexts."""

    def snapshot() -> tuple[int, int]:
        torch.cuda.synchronize(device)
        gc.collect()
        return torch.cuda.mem_get_info(device)[0], host_rss_bytes()

    def measure(make: Callable[[], Any], pool_size: int) -> dict[str, float]:
        free0, rss0 = snapshot()
        made = [make() for _ in range(contexts)]
        free1, rss1 = snapshot()
        streams = [ctx.Stream() for ctx in made]
        free2, rss2 = snapshot()
        more = [made[0].Stream() for _ in range(pool_size - 1)]
        free3, rss3 = snapshot()
        del more, streams, made
        free4, rss4 = snapshot()
        mib = float(1 << 20)
        return {
            "contexts": contexts,
            "device_mib_per_context": (free0 - free1) / contexts / mib,
            "host_mib_per_context": (rss1 - rss0) / contexts / mib,
            "device_mib_per_first_stream": (free1 - free2) / contexts / mib,
            "host_kib_per_first_stream": (rss2 - rss1) / contexts / 1024.0,
            "further_streams": pool_size - 1,
            "device_mib_per_further_stream": (free2 - free3) / (pool_size - 1) / mib,
            "host_kib_per_further_stream": (rss3 - rss2) / (pool_size - 1) / 1024.0,
            "device_mib_not_returned": (free0 - free4) / mib,
        }

    previous_limit = _C.idle_context_limit()
    _C.set_idle_context_limit(0)  # what a context holds, destroyed when dropped
    try:
        result: dict[str, Any] = {
            "ours": measure(lambda: GreenContext(num_sms=16, device_id=device), 32),
        }
    finally:
        _C.set_idle_context_limit(previous_limit)
    if builtin.available:
        result["torch built-in"] = measure(lambda: builtin.create(16, device), 32)
    return result
