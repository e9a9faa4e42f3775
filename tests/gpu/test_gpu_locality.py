"""compat.flashinfer's locality-domain functions on a real GPU. Drivers before 13.4 (the H100 and
H200 of 2026 run 13.0) name the feature and both versions; a 13.4+ device of one domain is a
RuntimeError; on a device of several domains, a stream per domain runs its own SMs and the
memory of each part lives in its domain (cuPointerGetAttribute, through cuda-python where it is
installed)."""

import gc

import pytest
import torch

import torch_green_contexts as tgc
import torch_green_contexts.compat.flashinfer as green_ctx
from torch_green_contexts import observed_sm_ids

from .conftest import gemm_check

LOCALITY_DOMAINS = 13040
CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL = 22  # cuda.h 13.4


@pytest.fixture(scope="module")
def dev(device) -> torch.device:
    return torch.device("cuda", device)


def calls(dev):
    return [("split", lambda: green_ctx.split_device_green_ctx_by_locality_domain(dev)),
            ("split without backfill", lambda: green_ctx.split_device_green_ctx_by_locality_domain(dev, False)),
            ("memory", lambda: green_ctx.empty_per_locality_domain((1024,), torch.float32, dev))]


def test_drivers_before_13_4_name_the_feature_and_both_versions(dev, driver_version):
    if driver_version >= LOCALITY_DOMAINS:
        pytest.skip(f"driver {driver_version} has locality domains")
    allocated = torch.cuda.memory_allocated(dev)
    for name, call in calls(dev):
        with pytest.raises(tgc.FeatureUnavailableError) as raised:
            call()
        error = raised.value
        assert (error.feature, error.needed_version, error.found_version) == (
            "locality domains", LOCALITY_DOMAINS, driver_version), name
        assert "locality domains needs CUDA driver 13.4 or newer; the installed driver is" in str(error), name
    assert torch.cuda.memory_allocated(dev) == allocated
    assert tgc.live_counts()["contexts"] == 0


def test_a_device_of_one_domain_is_a_runtime_error(dev, device, driver_version):
    if driver_version < LOCALITY_DOMAINS or tgc.get_num_locality_domains(device) != 1:
        pytest.skip("needs driver 13.4+ and a device of one locality domain")
    for name, call in calls(dev):
        with pytest.raises(RuntimeError, match="needs a device with at least two locality domains; device"):
            call()


def test_a_stream_and_memory_per_domain(dev, device, driver_version):
    if driver_version < LOCALITY_DOMAINS or tgc.get_num_locality_domains(device) < 2:
        pytest.skip("needs driver 13.4+ and a device of several locality domains")
    domains = tgc.get_num_locality_domains(device)
    for backfill in (True, False):
        streams, resources = green_ctx.split_device_green_ctx_by_locality_domain(dev, backfill)
        assert len(streams) == len(resources) == domains
        assert [r.sm_partition.locality_domain_id for r in resources] == list(range(domains))
        seen = [set(observed_sm_ids(s)) for s in streams]
        for i in range(domains):
            assert len(seen[i]) == resources[i].sm.smCount
            assert all(not (seen[i] & seen[j]) for j in range(i + 1, domains))
            gemm_check(streams[i])
        del streams, resources
    allocated = torch.cuda.memory_allocated(dev)
    parts = green_ctx.empty_per_locality_domain((256, 1024), torch.bfloat16, dev)
    assert parts.shape == (domains, 256, 1024) and parts.stride()[1:] == (1024, 1)
    assert torch.cuda.memory_allocated(dev) == allocated, "not from PyTorch's allocator"
    for i in range(domains):
        parts[i].fill_(i)
    torch.cuda.synchronize(dev)
    assert [parts[i].float().mean().item() for i in range(domains)] == [float(i) for i in range(domains)]
    try:
        from cuda.bindings import driver as cuda
    except ImportError:
        cuda = None
    if cuda is not None:
        for i in range(domains):
            status, ordinal = cuda.cuPointerGetAttribute(
                CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL, parts[i].data_ptr())
            assert int(status) == 0 and int(ordinal) == i
    view = parts[1]
    del parts
    gc.collect()
    view.zero_()  # the view keeps the memory
    torch.cuda.synchronize(dev)
    del view
    gc.collect()
    assert tgc._C.deferred_localized_releases() == 0
