"""Unions of split pieces, overlapped layouts and SGLang's overlapped streams on a real GPU: the
SM ids each context's probe runs on."""

import gc

import pytest
import torch

from torch_green_contexts import GreenContext, SMPartition, observed_sm_ids
from torch_green_contexts._layout_build import OVERLAP_COSCHEDULING, granularity as layout_step
from torch_green_contexts.compat import sglang as spatial
from torch_green_contexts.layouts import Layouts

from .conftest import gemm_check


@pytest.fixture
def step(device):
    return layout_step(device)


def ids(stream):
    return set(observed_sm_ids(stream))


def test_a_union_runs_on_exactly_its_pieces_sms(device, whole, step):
    n = 3
    groups, _ = whole.split(num_sms=[step] * n + [0], coscheduled_sm_count=OVERLAP_COSCHEDULING,
                            backfill=[False] * n + [True])
    pieces = [ids(GreenContext(sm_partition=g).Stream()) for g in groups]
    assert [len(p) for p in pieces] == [g.sm_count for g in groups]
    for chosen in ((0, 3), (1, 2), (0, 1, 2, 3)):
        union = SMPartition.union(*(groups[i] for i in chosen))
        ctx = GreenContext(sm_partition=union)
        expected = set().union(*(pieces[i] for i in chosen))
        assert ctx.sm_count == union.sm_count == len(expected)
        stream = ctx.Stream()
        assert ids(stream) == expected, chosen
        gemm_check(stream)
    assert len(set().union(*pieces)) == whole.sm_count, "the pieces of one split cover the device"
    del ctx, stream


def test_pieces_the_driver_cannot_combine_are_value_errors_and_leave_cuda_usable(device, whole, step,
                                                                                driver_version):
    groups, remainder = whole.split(num_sms=(step, step))
    if driver_version < 13010:
        # Groups of two sizes come from two driver splits below 13.1 (the second of a context's
        # resource), which the driver refuses to combine.
        mixed, _ = whole.split(num_sms=(2 * step, step))
        with pytest.raises(ValueError, match="cannot combine"):
            SMPartition.union(*mixed)
    again, _ = whole.split(num_sms=(step, step))
    with pytest.raises(ValueError, match="different split"):
        SMPartition.union(groups[0], again[1])
    with pytest.raises(ValueError, match="overlap"):
        SMPartition.union(groups[0], groups[0])
    assert GreenContext(sm_partition=SMPartition.union(*groups)).sm_count == 2 * step
    gemm_check(torch.cuda.current_stream(device))


def test_overlapped_layouts_keep_each_side_off_the_other_sides_floor(device, whole, step, live):
    floors = [(2 * step, 8 * step), (4 * step, 4 * step)]
    with Layouts([0, 2 * step], overlapped=floors, device_id=device, ordering="per_role") as layouts:
        for latency_floor, batch_floor in floors:
            layout = layouts[(latency_floor, batch_floor)]
            shared = whole.sm_count - latency_floor - batch_floor
            assert (layout.latency_floor, layout.batch_floor, layout.shared_sm_count) == (
                latency_floor, batch_floor, shared)
            assert layout.latency_stream.priority == torch.cuda.Stream.priority_range()[1]
            lat, batch = ids(layout.latency_stream), ids(layout.batch_stream)
            assert (len(lat), len(batch)) == (layout.sm_count, layout.batch_sm_count)
            assert len(lat & batch) == shared, "both sides run on the shared SMs"
            assert len(lat - batch) == latency_floor and len(batch - lat) == batch_floor, \
                "neither side runs on the other side's floor"
            assert len(lat | batch) == whole.sm_count
            gemm_check(layout.latency_stream)
            gemm_check(layout.batch_stream)
        # Switching between disjoint and overlapped layouts, both orderings, keeps data in order.
        x = torch.zeros(1 << 16, device=device)
        layouts.warm_up(lambda: x.add_(0.0))
        for key in (2 * step, floors[0], 0, floors[1], floors[0]):
            layout = layouts.switch(key, ordering="full")
            with torch.cuda.stream(layout.batch_stream):
                x.add_(1.0)
            ready = layouts.handoff()
            ready.wait(layout.latency_stream)
            with torch.cuda.stream(layout.latency_stream):
                x.mul_(2.0)
        torch.cuda.synchronize(device)
        assert x[0].item() == 62.0, "x = (x + 1) * 2, five times in order from 0"
        del layout, ready
    gc.collect()
    assert live()["contexts"] == 0


def test_sglang_overlapped_streams_have_the_counts_they_report(device, whole, step):
    for prefill_floor, decode_floor in ((2 * step, 2 * step), (8 * step, 2 * step)):
        prefill, decode, counts = spatial.create_asymmetric_overlapped_greenctx_stream_by_value(
            prefill_floor, decode_floor, device)
        prefill_sms, decode_sms, prefill_only, decode_only, shared = counts
        assert (prefill_only, decode_only, shared) == (prefill_floor, decode_floor,
                                                       whole.sm_count - prefill_floor - decode_floor)
        p, d = ids(prefill), ids(decode)
        assert (len(p), len(d), len(p & d)) == (prefill_sms, decode_sms, shared)
        assert decode.priority == torch.cuda.Stream.priority_range()[1] and prefill.priority == 0
        gemm_check(decode)
    with pytest.raises(RuntimeError, match="multiples of"):
        spatial.create_overlapped_greenctx_stream_by_value(step + 1, device)
    for _ in range(20):
        spatial.create_overlapped_greenctx_stream_by_value(2 * step, device)
    del prefill, decode
