"""compat.flashinfer's locality-domain functions against the simulated driver (two domains by
default; one and four in tests/test_compat_flashinfer.py): a stream per domain, memory placed per
domain, and FeatureUnavailableError on drivers before 13.4. Streams stand in for
torch.cuda.Streams (and nothing for the CUDA runtime's initialisation), and the tensors are only
looked at (the simulated driver runs no kernel)."""

import gc

import pytest
import torch

import torch_green_contexts as tgc
import torch_green_contexts.compat.flashinfer as green_ctx
from torch_green_contexts.compat import _streams

from .controls import mapping_at
from .stand_ins import check_streams as check
from .stand_ins import skip_cuda_init, stream_of

DEV = torch.device("cuda:0")
GRANULE = 2 << 20  # the simulated driver's allocation granularity
BEFORE_13_4 = (12040, 12050, 13000, 13010)


@pytest.fixture(autouse=True)
def streams_stand_in(monkeypatch):
    monkeypatch.setattr(_streams, "_stream_of", stream_of)
    monkeypatch.setattr(torch.cuda, "_lazy_init", skip_cuda_init)


def domains_of(tensor):
    """The locality domain of each part of a [domains, ...] tensor, at its first and last byte."""
    parts = []  # from the addresses: indexing the tensor would need a GPU
    base = tensor.untyped_storage().data_ptr()  # data_ptr() is 0 for a tensor of no element
    for i in range(tensor.shape[0]):
        start = base + i * tensor.stride(0) * tensor.element_size()
        end = start + max(1, tensor.stride(0) * tensor.element_size()) - 1
        parts.append((mapping_at(start), mapping_at(end)))
    return parts


@pytest.mark.driver_versions(13040)
def test_a_stream_per_domain(calls):
    streams, resources = green_ctx.split_device_green_ctx_by_locality_domain(DEV)
    check(streams, resources, [66, 66])  # 132 SMs // 2 domains, backfilled
    assert [r.sm_partition.locality_domain_id for r in resources] == [0, 1]
    assert [r.type for r in resources] == [1, 1]
    streams, resources = green_ctx.split_device_green_ctx_by_locality_domain(DEV, backfill=False)
    check(streams, resources, [64, 56])  # each domain's own SMs, as the driver groups them (70 and 62)
    assert [r.sm_partition.locality_domain_id for r in resources] == [0, 1]
    streams, resources = green_ctx.split_device_green_ctx_by_locality_domain(dev=DEV, backfill=True)
    check(streams, resources, [66, 66])


@pytest.mark.driver_versions(13040)
@pytest.mark.parametrize("shape, dtype", [((3, 5), torch.float32), ((1024, 1024), torch.bfloat16),
                                          ((4096, 1024), torch.int8), ((2, 0, 7), torch.float16), ((), torch.int64)])
def test_memory_per_domain(shape, dtype, live, calls):
    tensor = green_ctx.empty_per_locality_domain(shape, dtype, DEV)
    part_bytes = torch.Size(shape).numel() * dtype.itemsize
    stride = max(1, -(-part_bytes // GRANULE)) * GRANULE // dtype.itemsize
    contiguous = torch.empty(shape, dtype=dtype).stride()
    assert tensor.shape == (2, *shape) and tensor.dtype == dtype and tensor.device == DEV
    assert tensor.stride() == (stride, *contiguous)
    assert domains_of(tensor) == [((0, True), (0, True)), ((1, True), (1, True))]
    assert mapping_at(tensor.untyped_storage().data_ptr() + 2 * stride * dtype.itemsize) is None, "nothing past"
    assert live("memory") == 2 and live("reservation") == 1 and live("primary_retain") == 1
    assert not torch.cuda.is_initialized() or torch.cuda.memory_allocated() == 0
    synchronized = calls("cuCtxSynchronize")
    del tensor
    gc.collect()
    assert live("memory") == live("reservation") == live("primary_retain") == 0
    assert calls("cuCtxSynchronize") == synchronized + 1, "the device's work is waited for before the free"


@pytest.mark.driver_versions(13040)
def test_a_view_keeps_the_memory(live):
    tensor = green_ctx.empty_per_locality_domain([8, 8], torch.float32, DEV)
    view = tensor.view(torch.int32)  # a view of the same memory (no kernel)
    del tensor
    gc.collect()
    assert live("memory") == 2
    del view
    gc.collect()
    assert live("memory") == 0


@pytest.mark.driver_versions(13040)
def test_a_capsule_nobody_takes_releases_the_memory(live):
    memory = tgc._C._LocalizedMemory(0, 100)
    capsule = tgc._C.bytes_capsule(memory)
    del memory
    gc.collect()
    assert live("memory") == 2, "the capsule holds the memory"
    del capsule
    gc.collect()
    assert live("memory") == 0


@pytest.mark.driver_versions(13040)
def test_a_release_during_a_capture_waits_for_the_next(live, fail_next):
    first = green_ctx.empty_per_locality_domain((16,), torch.float32, DEV)
    fail_next("cuCtxSynchronize", 900)  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: a capture is underway
    del first
    gc.collect()
    assert tgc._C.deferred_localized_releases() == 1 and live("memory") == 2
    second = green_ctx.empty_per_locality_domain((16,), torch.float32, DEV)  # frees the first
    assert tgc._C.deferred_localized_releases() == 0 and live("memory") == 2
    del second
    gc.collect()
    assert live("memory") == 0


@pytest.mark.driver_versions(13040)
@pytest.mark.parametrize("call, count", [("cuMemCreate", 2), ("cuMemMap", 2), ("cuMemAddressReserve", 1),
                                         ("cuMemSetAccess", 1), ("cuMemGetAllocationGranularity", 1)])
def test_a_failed_driver_call_is_a_driver_error_and_leaves_nothing(call, count, fail_next, raised, live):
    for skip in range(count):
        fail_next(call, 2, skip)  # CUDA_ERROR_OUT_OF_MEMORY
        error = raised(lambda: green_ctx.empty_per_locality_domain((16,), torch.float32, DEV))
        assert type(error) is tgc.DriverError and (error.call, error.name) == (call, "CUDA_ERROR_OUT_OF_MEMORY")
        assert live("memory") == live("reservation") == live("primary_retain") == 0


@pytest.mark.driver_versions(13040)
def test_bad_devices(raised):
    for call in (lambda: green_ctx.split_device_green_ctx_by_locality_domain(torch.device("cuda:3")),
                 lambda: green_ctx.empty_per_locality_domain((8,), torch.float32, torch.device("cuda:3"))):
        error = raised(call)
        assert type(error) is RuntimeError and "device_id 3 is out of range" in str(error), error


@pytest.mark.driver_versions(*BEFORE_13_4)
@pytest.mark.parametrize("call", [
    lambda: green_ctx.split_device_green_ctx_by_locality_domain(DEV),
    lambda: green_ctx.split_device_green_ctx_by_locality_domain(DEV, backfill=False),
    lambda: green_ctx.empty_per_locality_domain((8,), torch.float32, DEV),
], ids=["split", "split without backfill", "memory"])
def test_drivers_before_13_4_name_the_feature_and_both_versions(call, raised, live, calls):
    import os

    found = int(os.environ.get("TGC_SIM_DRIVER_VERSION", "13040"))
    reserved = calls("cuMemAddressReserve")
    error = raised(call)
    assert type(error) is tgc.FeatureUnavailableError, repr(error)
    assert (error.feature, error.needed_version, error.found_version) == ("locality domains", 13040, found)
    assert str(error) == (f"locality domains needs CUDA driver 13.4 or newer; the installed driver is "
                          f"{found // 1000}.{found % 1000 // 10}")
    assert isinstance(error, RuntimeError)
    assert live("green_ctx") == 0 and calls("cuMemAddressReserve") == reserved
