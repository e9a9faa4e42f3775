"""torch_green_contexts.compat.flashinfer, FlashInfer's green_ctx API, against the simulated
driver (streams stand in for torch.cuda.Streams; tests/gpu/test_gpu_compat.py runs the real
thing)."""

import gc
import itertools

import pytest
import torch

import torch_green_contexts as tgc
import torch_green_contexts.compat.flashinfer as green_ctx
from torch_green_contexts.compat import _streams

from .stand_ins import check_streams as check
from .stand_ins import stream_of

DEV = torch.device("cuda:0")


@pytest.fixture(autouse=True)
def streams_stand_in(monkeypatch):
    monkeypatch.setattr(_streams, "_stream_of", stream_of)


def flashinfer_would_skip(error):
    # The except clause of FlashInfer's own tests (tests/utils/test_green_ctx.py).
    e = error
    return ("CUDA error code=914" in str(e) or "CUDA_ERROR_INVALID_RESOURCE_TYPE" in str(e)
            or "CUDA error code=915" in str(e) or "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" in str(e))


def in_use():
    gc.collect()
    counts = tgc.live_counts()
    return counts["contexts"] + counts["internal_contexts"] + counts["streams"]


@pytest.mark.driver_versions(12040, 13000, 13040)
def test_flashinfers_usage_against_the_simulated_driver(fail_next, live, raised):
    assert green_ctx.get_compute_capability(DEV) == (9, 0)
    assert green_ctx.get_compute_capability(torch.device("cuda", 0)) == (9, 0)
    cu_dev = green_ctx.get_cudevice(DEV)
    assert int(cu_dev) == 0
    whole = green_ctx.get_device_resource(cu_dev)
    assert whole.sm.smCount == 132 and whole.type == 1

    # split_device_green_ctx: FlashInfer's docstring example and its tests' parameters.
    check(*green_ctx.split_device_green_ctx(DEV, 2, 16), [16, 16, 100])
    for num_groups, min_count in itertools.product([1, 2, 3], [16, 32]):
        check(*green_ctx.split_device_green_ctx(DEV, num_groups, min_count),
              [min_count] * num_groups + [132 - num_groups * min_count])
    check(*green_ctx.split_device_green_ctx(DEV, 2, 10), [16, 16, 100])  # rounded up to 8s
    check(*green_ctx.split_device_green_ctx(DEV, 15, 8), [8] * 15 + [12])

    # ... by SM count: the docstring example, FlashInfer's test cases and its alignment cases.
    check(*green_ctx.split_device_green_ctx_by_sm_count(DEV, [8, 16, 24]), [8, 16, 24, 84])
    for counts in ([16, 16, 16], [32], [8, 8, 8, 8]):
        check(*green_ctx.split_device_green_ctx_by_sm_count(DEV, counts), counts + [132 - sum(counts)])
    for counts, rounded in (([1, 2, 3, 4], [8, 8, 8, 8]), ([7, 8, 9, 10], [8, 8, 16, 16]),
                            ([15, 16, 17, 18], [16, 16, 24, 24])):
        check(*green_ctx.split_device_green_ctx_by_sm_count(DEV, counts), rounded + [132 - sum(rounded)])
    check(*green_ctx.split_device_green_ctx_by_sm_count(DEV, []), [132])  # FlashInfer's code does this too

    # Requests that do not fit: RuntimeError, "Insufficient SMs", and FlashInfer's tests skip on it.
    for call in (lambda: green_ctx.split_device_green_ctx(DEV, 3, 48),
                 lambda: green_ctx.split_device_green_ctx(DEV, 16, 8),  # the layout holds 15
                 lambda: green_ctx.split_device_green_ctx(DEV, 1, 132),  # nothing left for the rest
                 lambda: green_ctx.split_device_green_ctx(DEV, 1, 1000),
                 lambda: green_ctx.split_device_green_ctx_by_sm_count(DEV, [16, 116]),  # 116 -> 120
                 lambda: green_ctx.split_device_green_ctx_by_sm_count(DEV, [64, 64, 8]),
                 lambda: green_ctx.split_device_green_ctx_by_sm_count(DEV, [8] * 16)):
        error = raised(call)
        assert type(error) is RuntimeError, (type(error), error)
        assert str(error).startswith("Insufficient SMs") and flashinfer_would_skip(error), error
    error = raised(lambda: green_ctx.split_device_green_ctx_by_sm_count(DEV, [8, 0]))
    assert type(error) is ValueError and str(error) == "SM count must be positive, got 0"
    assert type(raised(lambda: green_ctx.split_device_green_ctx_by_sm_count(DEV, [8, 2.5]))) is TypeError
    assert type(raised(lambda: green_ctx.split_device_green_ctx(DEV, 0, 8))) is ValueError
    assert type(raised(lambda: green_ctx.split_device_green_ctx(DEV, 2, -1))) is ValueError
    assert type(raised(lambda: green_ctx.split_device_green_ctx(torch.device("cuda:3"), 2, 8))) is RuntimeError
    # Other driver failures are themselves, and leave nothing behind.
    tgc.release_idle_contexts()  # else the call reuses idle contexts and creates none
    fail_next("cuGreenCtxCreate", 2)
    error = raised(lambda: green_ctx.split_device_green_ctx(DEV, 2, 16))
    assert type(error) is tgc.DriverError and error.name == "CUDA_ERROR_OUT_OF_MEMORY", error
    assert in_use() == 0, tgc.live_counts()

    # The pieces: a split output splits again, an empty remainder makes no stream.
    groups, rest = green_ctx.split_resource_by_sm_count(cu_dev, whole, [16])
    inner, inner_rest = green_ctx.split_resource_by_sm_count(cu_dev, rest, [24, 8])
    check(green_ctx.create_green_ctx_streams(cu_dev, groups + inner + [inner_rest]), groups + inner + [inner_rest],
          [16, 24, 8, 84])
    assert green_ctx.split_resource_by_sm_count(cu_dev, whole, []) == ([], whole)
    (one,), empty = green_ctx.split_resource(whole, 1, 130)  # rounded past the device: all of it
    assert (one.sm.smCount, empty.sm.smCount, empty.type, empty.sm_partition) == (132, 0, 0, None)
    error = raised(lambda: green_ctx.create_green_ctx_streams(cu_dev, [one, empty]))
    assert str(error).startswith("Insufficient SMs: resources[1] is empty") and flashinfer_would_skip(error)
    assert type(raised(lambda: green_ctx.split_resource(empty, 1, 8))) is ValueError
    assert type(raised(lambda: green_ctx.create_green_ctx_streams(cu_dev, [one, "x"]))) is TypeError
    assert type(raised(lambda: green_ctx.create_green_ctx_streams(cu_dev, one))) is TypeError
    assert type(raised(lambda: green_ctx.split_resource_by_sm_count(cu_dev, whole, 16))) is TypeError
    del groups, rest, inner, inner_rest, one, empty

    # No leaks in a loop: dropped streams' contexts are reused, nothing else is kept.
    made = live("green_ctx")
    for _ in range(50):
        green_ctx.split_device_green_ctx_by_sm_count(DEV, [8, 16, 24])
        green_ctx.split_device_green_ctx(DEV, 2, 16)
    assert in_use() == 0, tgc.live_counts()
    assert live("green_ctx") <= made + 16, (live("green_ctx"), made)  # the idle limit
    tgc.release_idle_contexts()
    assert live("green_ctx") == live("stream") == 0 and tgc._C.remembered_green_contexts() == 0
