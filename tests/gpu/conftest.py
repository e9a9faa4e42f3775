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


IN_USE = ("contexts", "internal_contexts", "streams")


@pytest.fixture(autouse=True)
def no_leaks():
    """Every GPU test must leave the native core holding nothing in use; the contexts kept idle
    for reuse are released after each test, so that tests do not see each other's."""
    tgc.release_idle_contexts()
    yield
    gc.collect()
    torch.cuda.synchronize()
    counts = tgc.live_counts()
    assert {k: counts[k] for k in IN_USE} == dict.fromkeys(IN_USE, 0), counts
    tgc.release_idle_contexts()
    assert tgc.live_counts() == dict.fromkeys(IN_USE + ("idle_contexts", "idle_streams"), 0)


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
