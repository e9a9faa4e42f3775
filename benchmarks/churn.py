"""Churn: device memory (cuMemGetInfo) and host RSS across repeated create/destroy cycles,
per way of making a context, to see what a long-running process keeps paying."""

from __future__ import annotations

import gc
from typing import Any, Callable

import torch

from torch_green_contexts import GreenContext, _C

from .environment import Builtin, driver_baselines, host_rss_bytes

MIB = float(1 << 20)


def run(device: int, builtin: Builtin, cycles: int = 200, num_sms: int = 16) -> dict[str, Any]:
    x = torch.randn(256, 256, device=device)

    def ours_with_work(op: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], None]:
        def cycle() -> None:
            ctx = GreenContext(num_sms=num_sms, device_id=device)
            stream = ctx.Stream()
            stream.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(stream):
                y = op(x)
            torch.cuda.current_stream(device).wait_stream(stream)
            del y, stream, ctx
        return cycle

    ways: dict[str, Callable[[], Any]] = {
        "driver: create + destroy only": lambda: driver_baselines().raw_create(device, num_sms, True),
        "driver: the calls of GreenContext(num_sms)": lambda: driver_baselines().raw_create(device, num_sms),
        "ours, recycling off: GreenContext(num_sms)": lambda: GreenContext(num_sms=num_sms, device_id=device),
        "ours, recycling off: GreenContext, Stream(), a matmul": ours_with_work(lambda t: t @ t),
        "ours: GreenContext(num_sms)": lambda: GreenContext(num_sms=num_sms, device_id=device),
        "ours: GreenContext, Stream(), an add": ours_with_work(lambda t: t + 1),
        "ours: GreenContext, Stream(), a matmul": ours_with_work(lambda t: t @ t),
        "ours: GreenContext.split(num_sms=(16, 24, 32))":
            lambda: GreenContext.split(num_sms=(16, 24, 32), device_id=device),
    }
    if builtin.available:
        ways["torch built-in: GreenContext.create"] = lambda: builtin.create(num_sms, device)

    def snapshot() -> tuple[int, int]:
        torch.cuda.synchronize(device)
        gc.collect()
        return torch.cuda.mem_get_info(device)[0], host_rss_bytes()

    results: dict[str, Any] = {}
    start_free, _ = snapshot()
    default_limit = _C.idle_context_limit()
    for name, make in ways.items():
        _C.set_idle_context_limit(0 if "recycling off" in name else default_limit)
        make()  # first use loads what it needs once
        free0, rss0 = snapshot()
        for _ in range(cycles):
            make()
        free1, rss1 = snapshot()
        results[name] = {
            "cycles": cycles,
            "device_kib_per_cycle": (free0 - free1) / cycles / 1024.0,
            "host_kib_per_cycle": (rss1 - rss0) / cycles / 1024.0,
        }
    _C.set_idle_context_limit(default_limit)
    torch.cuda.empty_cache()
    free_end, _ = snapshot()
    recovery: dict[str, Any] = {"device_mib_lost_in_all": (start_free - free_end) / MIB}
    # Does the driver hand the memory back when it is needed? Ask for nearly all that is free.
    try:
        big = torch.empty(int(free_end - (1 << 30)), dtype=torch.uint8, device=device)
        recovery["allocate_all_but_1_gib"] = "ok"
        del big
    except torch.OutOfMemoryError as error:
        recovery["allocate_all_but_1_gib"] = f"failed: {error}"[:200]
    torch.cuda.empty_cache()
    free_after, _ = snapshot()
    recovery["device_mib_lost_after_allocating"] = (start_free - free_after) / MIB
    return {"results": results, "recovery": recovery}
