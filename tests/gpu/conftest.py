"""GPU tests: they run where a CUDA driver and GPU are present and skip elsewhere."""

import gc

import pytest
import torch

import torch_green_contexts as tgc
from torch_green_contexts import SMPartition


def _gpu_present() -> bool:
    return tgc._C.installed_driver_version() > 0 and torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and driver")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> int:
    return torch.cuda.current_device()


@pytest.fixture(scope="session")
def whole(device) -> SMPartition:
    return SMPartition.from_device(device)


@pytest.fixture(scope="session")
def granularity(whole) -> int:
    """The co-scheduling granularity the driver reports (never assumed)."""
    return whole.coscheduled_sm_count


@pytest.fixture(scope="session")
def driver_version() -> int:
    return tgc.driver_version()


@pytest.fixture(autouse=True)
def no_leaks():
    """Every GPU test must leave the native core holding nothing."""
    yield
    gc.collect()
    torch.cuda.synchronize()
    assert tgc.live_counts() == {"contexts": 0, "internal_contexts": 0, "streams": 0}


def gemm_check(stream: torch.cuda.Stream, n: int = 512) -> None:
    """A GEMM on `stream` gives the default stream's result."""
    device = stream.device_index
    gen = torch.Generator(device=f"cuda:{device}").manual_seed(n)
    a = torch.randn(n, n, device=device, generator=gen)
    b = torch.randn(n, n, device=device, generator=gen)
    expected = a @ b
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        got = a @ b
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.testing.assert_close(got, expected)
