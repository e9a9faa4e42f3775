"""torch_green_contexts.compat.flashinfer: FlashInfer's green_ctx API. Without a GPU: the
signatures, the constraint table, rounding, argument checks, and the whole API against the
simulated driver (streams stand in for torch.cuda.Streams, which need a GPU;
tests/gpu/test_gpu_compat.py runs the real thing)."""

import inspect
import textwrap

import pytest
import torch

import torch_green_contexts.compat.flashinfer as green_ctx
from torch_green_contexts.compat._sm_counts import round_up

from ._sim import needs_sim, run_on_sim

POS = inspect.Parameter.POSITIONAL_OR_KEYWORD
EMPTY = inspect.Parameter.empty

# flashinfer/green_ctx.py's functions: (name, parameters), all positional-or-keyword, no defaults.
FLASHINFER = [
    ("get_compute_capability", ["device"]),
    ("get_sm_count_constraint", ["major", "minor"]),
    ("get_cudevice", ["dev"]),
    ("get_device_resource", ["cu_dev"]),
    ("split_resource", ["resource", "num_groups", "min_count"]),
    ("split_resource_by_sm_count", ["cu_dev", "resource", "sm_counts"]),
    ("create_green_ctx_streams", ["cu_dev", "resources"]),
    ("split_device_green_ctx", ["dev", "num_groups", "min_count"]),
    ("split_device_green_ctx_by_sm_count", ["dev", "sm_counts"]),
]


@pytest.mark.parametrize("name, parameters", FLASHINFER, ids=[n for n, _ in FLASHINFER])
def test_signatures_are_flashinfers(name, parameters):
    function = getattr(green_ctx, name)
    got = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
    assert got == [(p, POS, EMPTY) for p in parameters]
    assert function.__doc__ and name in green_ctx.__all__


@pytest.mark.parametrize(
    "capability, expected",
    [((6, 0), (1, 1)), ((6, 1), (1, 1)), ((7, 0), (2, 2)), ((7, 5), (2, 2)), ((8, 0), (4, 2)),
     ((8, 9), (4, 2)), ((9, 0), (8, 8)), ((10, 0), (8, 8)), ((12, 0), (8, 8))],
)
def test_sm_count_constraint(capability, expected):
    assert green_ctx.get_sm_count_constraint(*capability) == expected


def test_older_capabilities_are_unsupported():
    with pytest.raises(ValueError, match=r"Unsupported CUDA capability: 5\.2"):
        green_ctx.get_sm_count_constraint(5, 2)


@pytest.mark.parametrize(
    "count, constraint, expected",
    # FlashInfer's documented examples on 9.0+ (7 -> 8, 10 -> 16, 16 -> 16, 17 -> 24), then 8.x and 7.x.
    [(7, (8, 8), 8), (10, (8, 8), 16), (16, (8, 8), 16), (17, (8, 8), 24), (0, (8, 8), 8), (1, (4, 2), 4),
     (5, (4, 2), 6), (3, (2, 2), 4), (1, (1, 1), 1)],
)
def test_rounding(count, constraint, expected):
    assert round_up(count, *constraint) == expected


def test_arguments_checked_before_the_driver_is_asked():
    with pytest.raises(ValueError, match="device must be a cuda device"):
        green_ctx.get_compute_capability(torch.device("cpu"))
    with pytest.raises(TypeError, match="device must be a torch.device"):
        green_ctx.get_compute_capability("cuda:0")
    with pytest.raises(ValueError, match="dev must be a CUDA device"):
        green_ctx.get_cudevice(torch.device("cpu"))
    with pytest.raises(TypeError, match="dev must be a torch.device"):
        green_ctx.get_cudevice(0)
    with pytest.raises(TypeError, match="resource must be a CUdevResource"):
        green_ctx.split_resource(None, 1, 8)
    with pytest.raises(TypeError, match="cu_dev must be a CUdevice"):
        green_ctx.create_green_ctx_streams("cuda:0", [])
    with pytest.raises(TypeError, match="cu_dev must be a CUdevice"):
        green_ctx.get_device_resource(True)
    with pytest.raises(ValueError, match="dev must be a CUDA device"):
        green_ctx.split_device_green_ctx(torch.device("cpu"), 2, 16)


def test_cudevice_is_an_int_like_handle():
    cu_dev = green_ctx.CUdevice(1)
    assert int(cu_dev) == 1 and [10, 11][cu_dev] == 11
    assert cu_dev == green_ctx.CUdevice(1) and cu_dev != green_ctx.CUdevice(0) and cu_dev != 1
    assert len({cu_dev, green_ctx.CUdevice(1)}) == 1 and repr(cu_dev) == "<CUdevice 1>"


# Streams stand in for torch.cuda.Streams: the native context, and its raw stream.
STAND_IN = """
import gc, itertools, types, torch
import torch_green_contexts as tgc
from torch_green_contexts.compat import _streams
_streams._stream_of = lambda native: types.SimpleNamespace(native=native, handle=native.stream(0)[0])
import torch_green_contexts.compat.flashinfer as green_ctx

DEV = torch.device("cuda:0")


def flashinfer_would_skip(error):
    # The except clause of FlashInfer's own tests (tests/utils/test_green_ctx.py).
    e = error
    return ("CUDA error code=914" in str(e) or "CUDA_ERROR_INVALID_RESOURCE_TYPE" in str(e)
            or "CUDA error code=915" in str(e) or "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" in str(e))

def check(streams, resources, counts):
    # Shapes, counts, one context per stream with those SMs, and no SM in two of them.
    assert len(streams) == len(resources) == len(counts), (len(streams), len(resources), counts)
    assert [r.sm.smCount for r in resources] == counts, ([r.sm.smCount for r in resources], counts)
    seen = [sms_of_handle(s.native.handle) for s in streams]
    assert [len(s) for s in seen] == counts
    for a, b in itertools.combinations(seen, 2):
        assert not (a & b)
    for s, r in zip(streams, resources):
        assert tgc._C.stream_sm_count(s.handle, 0) == r.sm.smCount

def in_use():
    gc.collect()
    counts = tgc.live_counts()
    return counts["contexts"] + counts["internal_contexts"] + counts["streams"]
"""


@needs_sim
@pytest.mark.parametrize("version", [12040, 13000, 13040])
def test_flashinfers_usage_against_the_simulated_driver(version):
    out = run_on_sim(
        STAND_IN + textwrap.dedent("""
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
        print("ok")
        """),
        version,
    )
    assert out.strip() == "ok"


@needs_sim
def test_another_architecture_and_two_devices():
    """Compute capability 8.x (minimum 4, alignment 2), 108 SMs, and resources kept to their device."""
    out = run_on_sim(
        STAND_IN + textwrap.dedent("""
        assert green_ctx.get_compute_capability(DEV) == (8, 0)
        check(*green_ctx.split_device_green_ctx_by_sm_count(DEV, [1, 5, 64]), [4, 6, 64, 34])
        check(*green_ctx.split_device_green_ctx(DEV, 3, 3), [4, 4, 4, 96])
        on_one = green_ctx.get_device_resource(green_ctx.get_cudevice(torch.device("cuda:1")))
        cu_zero = green_ctx.get_cudevice(DEV)
        assert type(raised(lambda: green_ctx.split_resource_by_sm_count(cu_zero, on_one, [8]))) is ValueError
        assert type(raised(lambda: green_ctx.create_green_ctx_streams(cu_zero, [on_one]))) is ValueError
        print("ok")
        """),
        13000, TGC_SIM_CC_MAJOR="8", TGC_SIM_SM_COUNT="108", TGC_SIM_DEVICE_COUNT="2",
    )
    assert out.strip() == "ok"
