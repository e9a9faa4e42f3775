"""torch_green_contexts.compat.flashinfer: FlashInfer's green_ctx API. Without a GPU: the
signatures, the constraint table, rounding and argument checks here, the whole API against the
simulated driver in tests/sim/test_compat_flashinfer.py (streams stand in for
torch.cuda.Streams, which need a GPU; tests/gpu/test_gpu_compat.py runs the real thing)."""

import inspect

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


# Its locality-domain functions, as FlashInfer documents them: (name, parameters with defaults,
# return annotation).
FLASHINFER_LOCALITY = [
    ("split_device_green_ctx_by_locality_domain", [("dev", EMPTY), ("backfill", True)],
     "tuple[list[torch.cuda.Stream], list[CUdevResource]]"),
    ("empty_per_locality_domain", [("part_shape", EMPTY), ("dtype", EMPTY), ("dev", EMPTY)], "torch.Tensor"),
]


@pytest.mark.parametrize("name, parameters", FLASHINFER, ids=[n for n, _ in FLASHINFER])
def test_signatures_are_flashinfers(name, parameters):
    function = getattr(green_ctx, name)
    got = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
    assert got == [(p, POS, EMPTY) for p in parameters]
    assert function.__doc__ and name in green_ctx.__all__


@pytest.mark.parametrize("name, parameters, returns", FLASHINFER_LOCALITY, ids=[n for n, _, _ in FLASHINFER_LOCALITY])
def test_locality_domain_signatures_are_flashinfers(name, parameters, returns):
    function = getattr(green_ctx, name)
    got = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
    assert got == [(p, POS, default) for p, default in parameters]
    assert inspect.signature(function).return_annotation == returns
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


@pytest.mark.parametrize("call, error, match", [
    (lambda: green_ctx.split_device_green_ctx_by_locality_domain("cuda:0"), TypeError,
     "^dev must be a torch.device, got str$"),
    (lambda: green_ctx.split_device_green_ctx_by_locality_domain(torch.device("cpu")), ValueError,
     "^dev must be a CUDA device, got cpu$"),
    (lambda: green_ctx.split_device_green_ctx_by_locality_domain(torch.device("cuda:0"), backfill="yes"), TypeError,
     "^backfill must be a bool, got str$"),
    (lambda: green_ctx.split_device_green_ctx_by_locality_domain(torch.device("cuda:0"), backfill=1), TypeError,
     "^backfill must be a bool, got int$"),
    (lambda: green_ctx.empty_per_locality_domain((4, 8), torch.float32, "cuda:0"), TypeError,
     "^dev must be a torch.device, got str$"),
    (lambda: green_ctx.empty_per_locality_domain((4, 8), torch.float32, torch.device("cpu")), ValueError,
     "^dev must be a CUDA device, got cpu$"),
    (lambda: green_ctx.empty_per_locality_domain((4, 8), "float32", torch.device("cuda:0")), TypeError,
     r"^dtype must be a torch.dtype, got str \('float32'\)$"),
    (lambda: green_ctx.empty_per_locality_domain(8, torch.float32, torch.device("cuda:0")), TypeError,
     "^part_shape must be a tuple of ints, got int$"),
    (lambda: green_ctx.empty_per_locality_domain("8", torch.float32, torch.device("cuda:0")), TypeError,
     "^part_shape must be a tuple of ints, got str$"),
    (lambda: green_ctx.empty_per_locality_domain((4, 2.0), torch.float32, torch.device("cuda:0")), TypeError,
     "^part_shape entries must be an int, got float"),
    (lambda: green_ctx.empty_per_locality_domain((4, -1), torch.float32, torch.device("cuda:0")), ValueError,
     "^part_shape entries must be 0 or more, got -1$"),
    (lambda: green_ctx.empty_per_locality_domain((2**40, 2**40), torch.float32, torch.device("cuda:0")), ValueError,
     r"^part_shape \(1099511627776, 1099511627776\) of torch.float32 is 4835703278458516698824704 bytes, more "
     "than one address range holds$"),
], ids=["dev str", "dev cpu", "backfill str", "backfill int", "memory dev str", "memory dev cpu", "dtype str",
        "shape int", "shape str", "shape float", "shape negative", "shape huge"])
def test_locality_domain_arguments_are_checked_before_the_driver_is_asked(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_cudevice_is_an_int_like_handle():
    cu_dev = green_ctx.CUdevice(1)
    assert int(cu_dev) == 1 and [10, 11][cu_dev] == 11
    assert cu_dev == green_ctx.CUdevice(1) and cu_dev != green_ctx.CUdevice(0) and cu_dev != 1
    assert len({cu_dev, green_ctx.CUdevice(1)}) == 1 and repr(cu_dev) == "<CUdevice 1>"


# tests/sim/test_compat_flashinfer.py: FlashInfer's usage on the H200-like default. Another
# architecture and two devices need a process of their own (the driver reads them once).
@needs_sim
def test_another_architecture_and_two_devices():
    """Compute capability 8.x (minimum 4, alignment 2), 108 SMs, and resources kept to their device."""
    out = run_on_sim(
        """
        import torch
        from tests.sim.stand_ins import check_streams as check, stream_of
        from torch_green_contexts.compat import _streams
        _streams._stream_of = stream_of  # streams stand in for torch.cuda.Streams
        import torch_green_contexts.compat.flashinfer as green_ctx

        DEV = torch.device("cuda:0")
        assert green_ctx.get_compute_capability(DEV) == (8, 0)
        check(*green_ctx.split_device_green_ctx_by_sm_count(DEV, [1, 5, 64]), [4, 6, 64, 34])
        check(*green_ctx.split_device_green_ctx(DEV, 3, 3), [4, 4, 4, 96])
        on_one = green_ctx.get_device_resource(green_ctx.get_cudevice(torch.device("cuda:1")))
        cu_zero = green_ctx.get_cudevice(DEV)
        assert type(raised(lambda: green_ctx.split_resource_by_sm_count(cu_zero, on_one, [8]))) is ValueError
        assert type(raised(lambda: green_ctx.create_green_ctx_streams(cu_zero, [on_one]))) is ValueError
        print("ok")
        """,
        13000, TGC_SIM_CC_MAJOR="8", TGC_SIM_SM_COUNT="108", TGC_SIM_DEVICE_COUNT="2",
    )
    assert out.strip() == "ok"


# tests/sim/test_compat_locality.py: the locality-domain functions on the default two domains.
# One domain or four need a process of their own.
@needs_sim
@pytest.mark.parametrize("domains, sms", [(1, 132), (4, 128), (4, 132)])
def test_locality_domain_functions_on_one_domain_and_on_four(domains, sms):
    out = run_on_sim(
        f"""
        import torch
        from tests.sim.stand_ins import skip_cuda_init, stream_of
        from torch_green_contexts.compat import _streams
        _streams._stream_of = stream_of  # streams stand in for torch.cuda.Streams
        torch.cuda._lazy_init = skip_cuda_init  # no CUDA runtime under the simulated driver
        import torch_green_contexts.compat.flashinfer as green_ctx

        DEV = torch.device("cuda:0")
        if {domains} == 1:
            for call, name in ((lambda: green_ctx.split_device_green_ctx_by_locality_domain(DEV),
                                "split_device_green_ctx_by_locality_domain"),
                               (lambda: green_ctx.empty_per_locality_domain((8,), torch.float32, DEV),
                                "empty_per_locality_domain")):
                error = raised(call)
                assert type(error) is RuntimeError, repr(error)
                assert str(error) == name + " needs a device with at least two locality domains; device 0 has 1"
        elif {sms} == 128:
            streams, resources = green_ctx.split_device_green_ctx_by_locality_domain(DEV)
            assert [r.sm.smCount for r in resources] == [32] * 4
            assert [r.sm_partition.locality_domain_id for r in resources] == [0, 1, 2, 3]
            memory = green_ctx.empty_per_locality_domain((8,), torch.int64, DEV)
            assert memory.shape == (4, 8) and memory.stride() == (2 << 20 >> 3, 1)
            start = memory.data_ptr()
            assert [mapping_at(start + i * (2 << 20))[0] for i in range(4)] == [0, 1, 2, 3]
            del memory, streams, resources
        else:  # 132 // 4 = 33 SMs each: an odd count, which the driver does not give
            error = raised(lambda: green_ctx.split_device_green_ctx_by_locality_domain(DEV))
            assert type(error) is RuntimeError and str(error).startswith(
                "Insufficient SMs: one group per locality domain of device 0 (backfilled to 33 SMs each) cannot "
                "be made of its 132 SMs ("), error
            assert "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" in str(error)
            streams, resources = green_ctx.split_device_green_ctx_by_locality_domain(DEV, backfill=False)
            assert [r.sm_partition.locality_domain_id for r in resources] == [0, 1, 2, 3]
            assert [r.sm.smCount for r in resources] == [32, 32, 32, 24]  # each domain's own, in 8s
            del streams, resources
        assert_nothing_in_use()
        print("ok")
        """,
        13040, TGC_SIM_LOCALITY_DOMAINS=str(domains), TGC_SIM_SM_COUNT=str(sms),
    )
    assert out.strip() == "ok"
