"""GPU tests: they run where a CUDA driver and GPU are present and skip elsewhere.

A test must leave the process as it found it: the current device, streams and CUDA context,
torch.cuda.green_contexts (install()), the idle-context limit and the environment. The autouse
`isolated` fixture puts these back after every test (and fails a test that left the device, a
stream, install() or the limit changed), releases the idle contexts before and after it, seeds
the random numbers from the test's name, and checks that nothing the test made is still in use.
Counts of what the native core holds are read from the test's start (`live`), so that a test
that leaks fails alone and the tests after it still see their own counts."""

import ctypes
import gc
import json
import os
import sys
import time
import zlib

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
    index = torch.cuda.current_device()
    # The primary context made and current before any test records the state it starts from.
    torch.zeros(1, device=index)
    torch.cuda.synchronize(index)
    return index


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


@pytest.fixture(scope="session")
def figures():
    """Figures of the reliability and fuzz tests, written together to
    $TGC_REPORT_DIR/reliability.json when the session ends, whichever of them ran and in
    whatever order."""
    collected: dict = {}
    yield collected
    directory = os.environ.get("TGC_REPORT_DIR")
    if directory and collected:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "reliability.json"), "w") as f:
            json.dump(collected, f, indent=1)


IN_USE = ("contexts", "internal_contexts", "streams")


class Live:
    """tgc.live_counts(), and the green contexts that sm_count() remembers (`remembered`), less
    what there was when the test began: after the idle contexts are released, nothing unless an
    earlier test leaked (which that test's teardown reports)."""

    def __init__(self) -> None:
        self.start = self._now()

    @staticmethod
    def _now() -> dict[str, int]:
        return {**tgc.live_counts(), "remembered": tgc._C.remembered_green_contexts()}

    def __call__(self) -> dict[str, int]:
        now = self._now()
        return {key: now[key] - self.start[key] for key in now}


@pytest.fixture
def live() -> Live:
    gc.collect()
    tgc.release_idle_contexts()  # no test sees another's idle contexts
    return Live()


def _drop_failure_frames() -> None:
    """A failed test's traceback, kept in sys.last_* for post-mortem debugging until the next
    test is called, holds the test's frames and so the contexts its locals referenced: dropped
    here, so that they are released now and not in the middle of the next test."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)


def _restore_current_context(expected: int) -> None:
    """Pops the calling thread's CUDA contexts (a green context pushed and never popped) until
    `expected` is current again."""
    if tgc._C.current_context() == expected:
        return
    lib = ctypes.CDLL(tgc._C.driver_library())
    popped = ctypes.c_void_p()
    for _ in range(64):
        if tgc._C.current_context() == expected or lib.cuCtxPopCurrent_v2(ctypes.byref(popped)) != 0:
            break
    if tgc._C.current_context() != expected:
        lib.cuCtxSetCurrent(ctypes.c_void_p(expected))


def _restore_environment(saved: dict[str, str]) -> None:
    for name in set(os.environ) - set(saved):
        del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def isolated(request, device, live):
    """Every GPU test must leave the native core holding nothing in use, and the process as it
    found it; the contexts kept idle for reuse are released before and after each test."""
    devices = range(torch.cuda.device_count())
    streams = [torch.cuda.current_stream(d) for d in devices]
    current_device = torch.cuda.current_device()
    context = tgc._C.current_context()
    installed = tgc.installed()
    limit = tgc._C.idle_context_limit()
    environment = dict(os.environ)
    seed = zlib.crc32(request.node.nodeid.encode())
    with torch.random.fork_rng(devices=[device]):
        torch.default_generator.manual_seed(seed)
        torch.cuda.manual_seed(seed)  # the current device: `device`
        yield
    _drop_failure_frames()
    # Everything is put back first, so that the tests after this one start as it did even when
    # the checks below fail it.
    _restore_current_context(context)  # put back, not reported: the stream check below reports set_context()
    changed = []
    if torch.cuda.current_device() != current_device:
        changed.append("the current device")
    for d, stream in zip(devices, streams):
        if torch.cuda.current_stream(d) != stream:
            changed.append(f"the current stream of device {d}")
            torch.cuda.set_stream(stream)  # which makes `d` the current device
    torch.cuda.set_device(current_device)
    if tgc.installed() != installed:
        changed.append("torch.cuda.green_contexts (install)")
        (tgc.install if installed else tgc.uninstall)()
    if tgc._C.idle_context_limit() != limit:
        changed.append("the idle-context limit")
        tgc.set_idle_context_limit(limit)
    _restore_environment(environment)  # libraries may set variables: put back, not reported
    gc.collect()
    torch.cuda.synchronize()
    counts = live()
    tgc.release_idle_contexts()
    released = live()
    assert not changed, f"the test left {', '.join(changed)} changed (now restored)"
    assert {k: counts[k] for k in IN_USE} == dict.fromkeys(IN_USE, 0), counts
    held = IN_USE + ("idle_contexts", "idle_streams")
    assert {k: released[k] for k in held} == dict.fromkeys(held, 0), released


def warm_up(device: int, seconds: float = 0.5) -> None:
    """Keeps the GPU busy for `seconds`, so that its clocks have left their idle state before a
    test compares timings: no test may rely on an earlier one having warmed the GPU."""
    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    out = torch.empty_like(a)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            torch.mm(a, a, out=out)
        torch.cuda.synchronize(device)


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
