"""Profiles, per-role layout switches, end layouts and the split policy on a real GPU."""

import gc
import time

import pytest
import torch

from torch_green_contexts import observed_sm_ids, sizing
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.policy import SplitPolicy

from .conftest import warm_up

SLEEP_CYCLES = 200_000_000  # about 0.1 s


def gemm_of(device, n):
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    out = torch.empty_like(a)
    return lambda: torch.mm(a, b, out=out)


def test_profile_measures_each_parameter_on_shared_contexts(device, whole, granularity, capfd):
    counts = [granularity, 4 * granularity, whole.sm_count]
    made = []

    def make_step(n):
        made.append(n)
        return gemm_of(device, n)

    warm_up(device)  # the timings compared below are taken at working clocks
    prof = sizing.profile(make_step, [2048, 512], load=gemm_of(device, 4096), counts=counts, rounds=1,
                          samples=4, warmup=1, graph=True, device_id=device)
    assert made == [512, 2048] and prof.params == (512, 2048) and prof.counts == tuple(counts)
    assert "profile: " in capfd.readouterr().err, "a progress line on standard error"
    for p in prof.params:
        result = prof.result(p)
        assert result.settings["graph"] is True and [r.sm_count for r in result.rows] == counts
        assert result.plain.load_alone_rate > 0
    # A 2048^3 GEMM takes longer than a 512^3 one on the same SMs; fewer SMs take longer.
    assert prof.latency(2048, granularity) > prof.latency(512, granularity)
    assert prof.latency(2048, granularity) > prof.latency(2048, 4 * granularity)
    assert prof.latency(1000, granularity) == prof.latency(2048, granularity), "read at the larger"
    assert prof.latency(4096, granularity) is None
    assert prof.latency(2048, whole.sm_count) is None and prof.latency(2048, whole.sm_count, under_load=False) > 0
    assert sizing.LatencyProfile.from_json(prof.to_json()) == prof
    sizing.profile(make_step, [256], counts=[granularity], rounds=1, samples=1, progress=False)
    assert capfd.readouterr().err == "", "progress=False prints nothing"


def test_per_role_switch_lets_the_latency_side_run_past_the_batch_work_in_flight(device, granularity):
    counts = (2 * granularity, 4 * granularity)
    x = torch.zeros(1 << 20, device=device)
    y = torch.empty_like(x)
    with Layouts(counts, device_id=device, ordering="per_role") as layouts:
        # Every kernel used below is loaded in each context first: the first launch of a kernel in
        # a context loads it there, and that load waits for work running on the device (in a fresh
        # process the add below would otherwise hold the host until the batch sleep ends).
        def every_kernel():
            torch.cuda._sleep(1000)
            torch.mul(x, 2, out=y)
            x.fill_(0.0)
            x.add_(1.0)

        layouts.warm_up(every_kernel)
        x.zero_()
        torch.cuda.synchronize(device)
        first = layouts.switch(counts[0])
        with torch.cuda.stream(first.batch_stream):
            torch.cuda._sleep(SLEEP_CYCLES)
            x.fill_(1.0)
        ready = layouts.handoff()
        assert not ready.ready()
        second = layouts.switch(counts[1])
        with torch.cuda.stream(second.latency_stream):
            torch.mul(x, 0, out=y)
        latency_done = torch.cuda.Event()
        latency_done.record(second.latency_stream)
        with torch.cuda.stream(second.batch_stream):
            x.add_(1.0)  # after the fill, on the old batch stream: per-role orders batch after batch
        t0 = time.perf_counter()
        while not latency_done.query() and time.perf_counter() - t0 < 5:
            time.sleep(1e-4)
        assert latency_done.query() and not ready.ready(), "the latency step waited for the batch work"
        # What crosses roles is ordered by the handoff: the latency stream reads the batch result.
        ready.wait(second.latency_stream)
        with torch.cuda.stream(second.latency_stream):
            torch.mul(x, 3, out=y)
        ready.synchronize()
        torch.cuda.synchronize(device)
        assert ready.ready()
        assert torch.equal(x, torch.full_like(x, 2.0)), "the batch streams ran in order"
        assert torch.all(y >= 3.0), "the latency stream read after the handoff"
        del first, second


def test_full_switch_still_orders_everything_after_the_previous_layout(device, granularity):
    counts = (2 * granularity, 4 * granularity)
    with Layouts(counts, device_id=device, ordering="per_role") as layouts:
        x = torch.zeros(1 << 20, device=device)
        y = torch.empty_like(x)
        for layout in layouts:
            with torch.cuda.stream(layout.latency_stream):
                torch.mul(x, 2, out=y)
        torch.cuda.synchronize(device)
        first = layouts.switch(counts[0])
        with torch.cuda.stream(first.batch_stream):
            torch.cuda._sleep(SLEEP_CYCLES // 2)
            x.fill_(1.0)
        second = layouts.switch(counts[1], ordering="full")
        with torch.cuda.stream(second.latency_stream):
            torch.mul(x, 2, out=y)
        torch.cuda.synchronize(device)
        assert torch.equal(y, torch.full_like(x, 2.0))
        del first, second, layout


def test_end_layouts_run_both_roles_on_the_whole_device(device, whole, granularity, live):
    with Layouts([0, granularity, whole.sm_count], device_id=device) as layouts:
        none, all_sms = layouts[0], layouts[whole.sm_count]
        assert (none.sm_count, none.batch_sm_count) == (0, whole.sm_count)
        assert (all_sms.sm_count, all_sms.batch_sm_count) == (whole.sm_count, 0)
        for layout in (none, all_sms):
            assert layout.latency is layout.batch and layout.latency.sm_count == whole.sm_count
            assert len(set(observed_sm_ids(layout.latency_stream))) == whole.sm_count
            assert len(set(observed_sm_ids(layout.batch_stream))) == whole.sm_count
        x = torch.zeros(1024, device=device)
        torch.cuda.synchronize(device)
        for k in (0, granularity, whole.sm_count, 0):
            step = layouts.switch(k, ordering="full")
            with torch.cuda.stream(step.batch_stream):
                x.add_(1.0)
        torch.cuda.synchronize(device)
        assert x[0].item() == 4.0
        del none, all_sms, layout, step
    gc.collect()
    assert live()["contexts"] == 0


def test_policy_moves_to_more_sms_under_a_heavier_load_and_back(device, granularity):
    """Profiled idle, a memory-bound step then runs beside a memory-bound load on the rest of
    the GPU (DRAM bandwidth is shared): its steps take longer than the profile says, the
    policy moves it to more SMs, and back once the load is gone and the correction decayed."""
    src = torch.empty(64 << 20, device=device, dtype=torch.bfloat16)  # 128 MiB
    dst = torch.empty_like(src)
    load_src = torch.empty(512 << 20, device=device, dtype=torch.bfloat16)  # 1 GiB
    load_dst = torch.empty_like(load_src)
    small, large = 2 * granularity, 6 * granularity
    # The profile sets the deadline the loaded steps are held to: taken at working clocks, not
    # at the idle clocks a GPU left alone for a while starts from.
    warm_up(device)
    prof = sizing.profile(lambda p: (lambda: dst.copy_(src)), [1], counts=[small, large], rounds=2,
                          samples=10, device_id=device, progress=False)
    slo = 1.15 * prof.latency(1, small)
    assert prof.latency(1, large) < slo, prof.table()
    with Layouts([small, large], device_id=device, ordering="per_role") as layouts:
        for _ in range(10):  # as a server warms up: the copy loaded in every context, steady clocks
            layouts.warm_up(lambda: dst.copy_(src))
        policy = SplitPolicy(prof, layouts, slo_us=slo, headroom=0.0, half_life_steps=32, read_every=1)
        in_flight: list[torch.cuda.Event] = []

        peak = {small: 1.0}

        def run(steps, loaded):
            chosen = []
            for _ in range(steps):
                layout = policy.step(1)
                chosen.append(layout.sm_count)
                with torch.cuda.stream(layout.latency_stream):
                    dst.copy_(src)
                policy.done()
                in_flight[:] = [e for e in in_flight if not e.query()]
                while loaded and len(in_flight) < 4:
                    with torch.cuda.stream(layout.batch_stream):
                        load_dst.copy_(load_src)
                    done = torch.cuda.Event()
                    done.record(layout.batch_stream)
                    in_flight.append(done)
                layout.latency_stream.synchronize()  # as a server waits for each decode step
                peak[small] = max(peak[small], policy.correction(small))
            return chosen

        calm = run(40, loaded=False)
        assert calm[-10:] == [small] * 10, calm
        busy = run(60, loaded=True)
        assert busy[-20:].count(large) >= 15, (busy, policy.stats())
        assert peak[small] > 1.15, (peak, policy.stats())
        torch.cuda.synchronize(device)
        in_flight.clear()
        again = run(400, loaded=False)
        back = again.index(small) if small in again else None
        print(f"\nFIGURES calm {calm.count(small)}/{len(calm)} on {small}; busy {busy.count(large)}/{len(busy)} on "
              f"{large}, peak correction of {small} {peak[small]:.2f}; after the load back on {small} at step {back}, "
              f"last 100 steps {again[-100:].count(small)}/100 on {small}; corrections {policy.stats()['corrections']}")
        assert again[-10:] == [small] * 10, (again, policy.stats())
        torch.cuda.synchronize(device)


def test_layout_profile_and_the_prefill_decode_policy_on_disjoint_and_overlapped_layouts(device, whole):
    from torch_green_contexts._layout_build import granularity as layout_step
    from torch_green_contexts.pd_policy import PrefillDecodePolicy

    step = layout_step(device)
    src = torch.empty(64 << 20, device=device, dtype=torch.bfloat16)
    dst = torch.empty_like(src)

    def make_step(batch, context_tokens):  # a decode step reads KV in proportion to its context
        n = min(src.numel(), context_tokens * 512 + batch * 4096)
        return lambda: dst[:n].copy_(src[:n])

    points = [(1, 4096), (8, 65536)]
    with Layouts([0, 2 * step, whole.sm_count], overlapped=[(2 * step, 8 * step)], device_id=device,
                 ordering="per_role") as layouts:
        warm_up(device)  # the timings compared below are taken at working clocks
        prof = sizing.profile_layouts(make_step, points, layouts, load=gemm_of(device, 4096), rounds=1,
                                      samples=5, warmup=1, progress=False)
        assert set(prof.measured) == set(layouts.keys)
        assert prof.loaded[whole.sm_count] is False and prof.loaded[(2 * step, 8 * step)] is True
        assert prof.layouts[(2 * step, 8 * step)][2] == whole.sm_count - 10 * step
        for key in layouts.keys:  # beside the load on one context (layout 0) the wait can dominate
            assert prof.latency(key, 8, 65536) >= prof.latency(key, 1, 4096) > 0, key
        assert prof.latency(whole.sm_count, 8, 65536) > prof.latency(whole.sm_count, 1, 4096), "idle"
        assert sizing.LayoutProfile.from_json(prof.to_json()).measured == prof.measured
        slo = 2.0 * prof.latency(whole.sm_count, 8, 65536)
        policy = PrefillDecodePolicy(prof, layouts, tpot_slo_us=slo, read_every=1)
        assert policy.choose(8, 65536, prefill_tokens=0) == whole.sm_count, "no prefill: decode gets all"
        assert policy.choose(0, 0, prefill_tokens=512) == 0, "no decode: prefill gets all"
        for i in range(30):
            layout = policy.step(8, 65536, prefill_tokens=512 if i % 2 else 0)
            with torch.cuda.stream(layout.latency_stream):
                make_step(8, 65536)()
            policy.done()
            layout.latency_stream.synchronize()
        policy.update()
        stats = policy.stats()
        assert stats["steps"] == 30 and sum(stats["observed"].values()) >= 25, stats
        assert set(k for k, n in stats["chosen"].items() if n) <= set(layouts.keys)
        del layout
