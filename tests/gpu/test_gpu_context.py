"""GreenContext and SMPartition on a real GPU and driver (everything but split)."""

import gc
import warnings

import pytest
import torch

from torch_green_contexts import GreenContext, SMPartition, observed_sm_ids

from .conftest import gemm_check


def test_from_device_matches_torch(device, whole):
    props = torch.cuda.get_device_properties(device)
    assert whole.sm_count == props.multi_processor_count
    assert whole.device_id == device
    assert whole.coscheduled_sm_count >= 2
    assert SMPartition.from_device().sm_count == whole.sm_count
    assert SMPartition.from_device(device).device_id == device


def test_num_sms_every_count(whole, granularity):
    total = whole.sm_count
    for n in range(1, total + 1):
        ctx = GreenContext(num_sms=n)
        got = ctx.sm_count
        assert got >= n, (n, got)
        # the smallest count the granularity allows, or the whole device when no aligned
        # group that large exists
        assert got == total or (got % granularity == 0 and got - n < granularity), (n, got)
        del ctx


def test_create_staticmethod_and_device_id(device):
    ctx = GreenContext.create(num_sms=16, device_id=device)
    assert isinstance(ctx, GreenContext)
    assert ctx.device_id == device
    assert ctx.sm_count >= 16


def test_sm_partition_round_trip(granularity):
    ctx = GreenContext(num_sms=3 * granularity)
    part = ctx.sm_partition
    assert isinstance(part, SMPartition)
    assert part.sm_count == ctx.sm_count
    assert part.device_id == ctx.device_id
    again = GreenContext(sm_partition=part)
    assert again.sm_count == ctx.sm_count
    assert again.sm_partition.sm_count == ctx.sm_count


def test_partition_keeps_context_alive(granularity, live):
    ctx = GreenContext(num_sms=2 * granularity)
    part = ctx.sm_partition
    count = ctx.sm_count
    del ctx
    gc.collect()
    assert live()["contexts"] == 1  # held by the partition
    assert GreenContext(sm_partition=part).sm_count == count
    del part


def test_two_contexts_from_one_partition_share_sms(granularity):
    group = GreenContext(num_sms=2 * granularity).sm_partition
    a = GreenContext(sm_partition=group)
    b = GreenContext(sm_partition=group)
    assert a.sm_count == b.sm_count == group.sm_count
    sa, sb = observed_sm_ids(a.Stream()), observed_sm_ids(b.Stream())
    assert len(sa) == a.sm_count
    assert sa == sb


def test_observed_sms_equal_sm_count(granularity):
    ctx = GreenContext(num_sms=2 * granularity)
    assert len(observed_sm_ids(ctx.Stream())) == ctx.sm_count
    assert len(observed_sm_ids(torch.cuda.current_stream())) == SMPartition.from_device().sm_count


def test_stream_type_and_results(device, granularity):
    ctx = GreenContext(num_sms=granularity)
    stream = ctx.Stream()
    assert isinstance(stream, torch.cuda.Stream)
    assert type(stream).__name__ == "GreenContextStream" and stream._green_context is ctx._native
    assert stream.device_index == device
    assert stream != ctx.Stream()  # a new stream each call
    gemm_check(stream)
    with torch.cuda.stream(stream):
        assert torch.cuda.current_stream() == stream
        x = torch.arange(1 << 20, device=device, dtype=torch.float32)
        y = (x * 2).sum()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    with torch.cuda.stream(stream):
        z = x.square().sum()
    end.record(stream)
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    torch.cuda.current_stream().wait_stream(stream)
    assert y.item() == pytest.approx(float((1 << 20) * ((1 << 20) - 1)))
    assert z.item() == pytest.approx(float(x.double().square().sum().item()), rel=1e-4)


def test_streams_come_from_a_bounded_pool(device, granularity, live):
    ctx = GreenContext(num_sms=granularity)
    streams = [ctx.Stream() for _ in range(80)]
    ids = [s.cuda_stream for s in streams]
    assert len(set(ids[:32])) == 32  # distinct streams first, like torch.cuda.Stream()'s pool
    assert ids[32:64] == ids[:32] and ids[64:] == ids[:16]  # then handed out again in turn
    assert ctx._native.stream_count == 32 and live()["streams"] == 32
    for s in streams[:3] + streams[40:42]:
        gemm_check(s)
        assert len(observed_sm_ids(s)) == ctx.sm_count


def test_stream_outlives_green_context_object(device, granularity, live):
    ctx = GreenContext(num_sms=granularity)
    stream = ctx.Stream()
    del ctx
    gc.collect()
    assert live()["contexts"] == 1
    gemm_check(stream)
    assert len(observed_sm_ids(stream)) >= granularity
    del stream
    gc.collect()
    assert live()["contexts"] == 0


def test_destroy_with_work_queued(device, granularity, live):
    ctx = GreenContext(num_sms=granularity)
    stream = ctx.Stream()
    a = torch.randn(2048, 2048, device=device)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        acc = torch.zeros_like(a)
        for _ in range(50):
            acc += a @ a
    expected = (a @ a) * 50
    del stream, ctx
    gc.collect()  # the context synchronises its streams before it goes
    assert live()["streams"] == 0
    torch.testing.assert_close(acc, expected, rtol=1e-3, atol=1e-2)


def test_set_and_pop_context_order_work(device, granularity):
    ctx = GreenContext(num_sms=granularity)
    base = torch.cuda.current_stream()
    x = torch.zeros(1 << 22, device=device)
    x += 1  # queued on the base stream before the switch
    with pytest.warns(FutureWarning):
        ctx.set_context()
    try:
        inner = torch.cuda.current_stream()
        assert inner != base
        assert len(observed_sm_ids(inner)) == ctx.sm_count
        x *= 3  # must see the +1
    finally:
        with pytest.warns(FutureWarning):
            ctx.pop_context()
    assert torch.cuda.current_stream() == base
    x -= 1  # must see the *3
    assert torch.all(x == 2).item()


def test_set_context_errors(granularity):
    ctx = GreenContext(num_sms=granularity)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(RuntimeError, match="pop_context"):
            ctx.pop_context()
        ctx.set_context()
        with pytest.raises(RuntimeError, match="already"):
            ctx.set_context()
        ctx.pop_context()
        with pytest.raises(RuntimeError):
            ctx.pop_context()


@pytest.mark.parametrize("value", [0, -1, 10**6])
def test_num_sms_out_of_range(value, whole):
    with pytest.raises(RuntimeError, match=str(whole.sm_count)):
        GreenContext(num_sms=value)


def test_num_sms_one_past_device(whole):
    with pytest.raises(RuntimeError, match=str(whole.sm_count)):
        GreenContext(num_sms=whole.sm_count + 1)


@pytest.mark.parametrize("value", [True, False, 1.5, "8", 8.0, [8]])
def test_num_sms_wrong_type(value):
    with pytest.raises(TypeError, match="num_sms"):
        GreenContext(num_sms=value)


def test_nothing_given():
    with pytest.raises(RuntimeError, match="num_sms"):
        GreenContext()
    with pytest.raises(RuntimeError):
        GreenContext(num_sms=None, sm_partition=None, workqueue_scope=None,
                     workqueue_concurrency_limit=None, device_id=None)


def test_argument_combinations(whole, device):
    with pytest.raises(ValueError, match="mutually exclusive"):
        GreenContext(num_sms=8, sm_partition=whole)
    with pytest.raises(TypeError, match="SMPartition"):
        GreenContext(sm_partition="all")
    with pytest.raises(TypeError):
        GreenContext(8)
    with pytest.raises(RuntimeError, match="workqueue_scope"):
        GreenContext(num_sms=8, workqueue_concurrency_limit=4)
    with pytest.raises(ValueError, match="balanced"):
        GreenContext(num_sms=8, workqueue_scope="shared")
    with pytest.raises(ValueError):
        GreenContext(num_sms=8, workqueue_scope=1)


def test_device_id_errors(whole):
    count = torch.cuda.device_count()
    for bad in (count, 99):
        with pytest.raises(RuntimeError, match="out of range"):
            GreenContext(num_sms=8, device_id=bad)
        with pytest.raises(RuntimeError, match="out of range"):
            SMPartition.from_device(bad)
        with pytest.raises(RuntimeError):
            GreenContext.split(num_sms=8, device_id=bad)
    with pytest.raises(RuntimeError):
        GreenContext(num_sms=8, device_id=-1)
    with pytest.raises(TypeError):
        GreenContext(num_sms=8, device_id=1.0)
    if count == 1:
        with pytest.raises(ValueError, match="disagrees"):
            GreenContext(sm_partition=whole, device_id=whole.device_id + 1)


def test_whole_device_partition_context(whole):
    ctx = GreenContext(sm_partition=whole)
    assert ctx.sm_count == whole.sm_count
    gemm_check(ctx.Stream())


def test_workqueue_and_locality_gated_by_driver(driver_version, device, granularity):
    ctx = GreenContext(num_sms=granularity)
    if driver_version < 13010:
        for call in (
            lambda: GreenContext(num_sms=8, workqueue_scope="balanced"),
            lambda: GreenContext(workqueue_scope="device_ctx"),
            lambda: GreenContext(num_sms=8, workqueue_scope="balanced", workqueue_concurrency_limit=2),
            lambda: GreenContext.max_workqueue_concurrency(),
            lambda: GreenContext.max_workqueue_concurrency(device),
            lambda: GreenContext.split(num_sms=(8, 8), workqueue_scope="balanced"),
        ):
            with pytest.raises(RuntimeError, match=r"13\.1.*installed driver is \d+\.\d"):
                call()
    else:
        assert GreenContext.max_workqueue_concurrency() >= 1
    if driver_version < 13040:
        with pytest.raises(RuntimeError, match=r"13\.4"):
            ctx.locality_domain_id
        with pytest.raises(RuntimeError, match=r"13\.4"):
            ctx.sm_partition.locality_domain_id
        with pytest.raises(RuntimeError, match=r"13\.4"):
            SMPartition.from_device().locality_domain_id
    # the failures left CUDA usable
    gemm_check(ctx.Stream())


def test_gpu_usable_after_errors(granularity):
    for bad in (0, -1, 10**6, True, 1.5, "8", None):
        with pytest.raises((RuntimeError, TypeError, ValueError)):
            GreenContext(num_sms=bad)
    gemm_check(GreenContext(num_sms=granularity).Stream())
    gemm_check(torch.cuda.current_stream())


def test_stream_priority(device, granularity):
    lowest, highest = torch.cuda.Stream.priority_range()
    ctx = GreenContext(num_sms=granularity)
    high = ctx.Stream(priority=highest)
    assert high.priority == highest
    assert ctx.Stream().priority == lowest == ctx.Stream(priority=0).priority
    assert ctx.Stream(priority=highest - 100).priority == highest  # clamped, as torch does
    assert ctx.Stream(priority=lowest + 100).priority == lowest
    assert high.cuda_stream not in {ctx.Stream().cuda_stream for _ in range(40)}
    gemm_check(high)
    assert len(observed_sm_ids(high)) == ctx.sm_count
    for bad in (1.0, "high", True, None):
        with pytest.raises(TypeError, match="priority must be an int"):
            ctx.Stream(priority=bad)
    with pytest.raises(TypeError):
        ctx.Stream(-1)  # keyword only, beside upstream's Stream()
