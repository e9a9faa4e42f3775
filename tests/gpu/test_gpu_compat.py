"""The compat modules and the queries added beside them, on a real GPU: FlashInfer's and
SGLang's documented usage runs unchanged but for the import line; counts, disjointness
(%smid probe), kernels on the returned streams, "Insufficient SMs", no leaks in a loop, and
sm_count(stream) on green and plain streams."""

import gc
import itertools
import threading
import time

import pytest
import torch

import torch_green_contexts as tgc
import torch_green_contexts.compat.flashinfer as green_ctx
from torch_green_contexts import GreenContext, observed_sm_ids, sm_count
from torch_green_contexts.compat import sglang as spatial
from torch_green_contexts.compat._sm_counts import round_up

from .conftest import gemm_check

MIB = 1 << 20


@pytest.fixture(scope="module")
def dev(device) -> torch.device:
    return torch.device("cuda", device)


@pytest.fixture(scope="module")
def minimum(dev) -> int:
    """The smallest group FlashInfer rounds to on this GPU (its table; 8 on Hopper)."""
    return green_ctx.get_sm_count_constraint(*green_ctx.get_compute_capability(dev))[0]


def flashinfer_would_skip(error: Exception) -> bool:
    """The except clause of FlashInfer's own tests, which skip on a request that does not fit."""
    text = str(error)
    return any(token in text for token in ("CUDA error code=914", "CUDA_ERROR_INVALID_RESOURCE_TYPE",
                                           "CUDA error code=915", "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"))


def check_partitions(streams, counts, run_gemm=True):
    """Each stream is a torch.cuda.Stream whose work ran on exactly its count of SMs (probe),
    sm_count says so, no SM is in two of them, and a GEMM on it gives the right result."""
    assert len(streams) == len(counts)
    observed = []
    for i, (stream, count) in enumerate(zip(streams, counts)):
        assert isinstance(stream, torch.cuda.Stream), type(stream)
        assert sm_count(stream) == count, (i, sm_count(stream), count)
        ids = set(observed_sm_ids(stream))
        assert len(ids) == count, (i, len(ids), count)
        if run_gemm:
            gemm_check(stream)
        observed.append(ids)
    for (i, a), (j, b) in itertools.combinations(enumerate(observed), 2):
        assert not (a & b), f"partitions {i} and {j} share SMs {sorted(a & b)}"


# ---- FlashInfer: flashinfer.green_ctx's documented usage ----------------------------------


@pytest.mark.parametrize("num_groups", [1, 2, 3])
@pytest.mark.parametrize("min_count", [16, 32])
def test_split_device_green_ctx(dev, whole, granularity, minimum, num_groups, min_count):
    size = round_up(min_count, minimum, granularity)
    try:
        streams, resources = green_ctx.split_device_green_ctx(dev, num_groups, min_count)
    except RuntimeError as error:  # as FlashInfer's tests do: skip where the GPU is too small
        assert num_groups * size >= whole.sm_count and flashinfer_would_skip(error), error
        pytest.skip(f"Insufficient SMs on device: {error}")
    assert len(streams) == len(resources) == num_groups + 1
    counts = [r.sm.smCount for r in resources]
    assert counts == [size] * num_groups + [whole.sm_count - num_groups * size]
    assert all(c >= min_count for c in counts[:-1])
    check_partitions(streams, counts)


def test_flashinfer_docstring_examples(dev, whole, granularity, minimum):
    # split_device_green_ctx(dev, 2, 16): [16, 16, 100] on an H200.
    streams, resources = green_ctx.split_device_green_ctx(dev, 2, 16)
    size = round_up(16, minimum, granularity)
    assert [r.sm.smCount for r in resources] == [size, size, whole.sm_count - 2 * size]
    with torch.cuda.stream(streams[0]):
        x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        y = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        z = x @ y
    streams[0].synchronize()
    assert z.shape == torch.Size([8192, 8192])
    # split_device_green_ctx_by_sm_count(dev, [8, 16, 24]): [8, 16, 24, 84] on an H200.
    streams, resources = green_ctx.split_device_green_ctx_by_sm_count(dev, [8, 16, 24])
    sizes = [round_up(c, minimum, granularity) for c in (8, 16, 24)]
    assert [r.sm.smCount for r in resources] == sizes + [whole.sm_count - sum(sizes)]
    for i, stream in enumerate(streams[:2]):
        with torch.cuda.stream(stream):
            a = torch.randn(4096 >> i, 4096 >> i, device=dev, dtype=torch.bfloat16)
            b = torch.randn(4096 >> i, 4096 >> i, device=dev, dtype=torch.bfloat16)
            c = a @ b
        stream.synchronize()
        assert c.shape == (4096 >> i, 4096 >> i)
    check_partitions(streams, [r.sm.smCount for r in resources])


@pytest.mark.parametrize("sm_counts", [[16, 16, 16], [8, 16, 24], [32], [8, 8, 8, 8],
                                       [1, 2, 3, 4], [7, 8, 9, 10], [15, 16, 17, 18]])
def test_split_device_green_ctx_by_sm_count(dev, whole, granularity, minimum, sm_counts):
    streams, resources = green_ctx.split_device_green_ctx_by_sm_count(dev, sm_counts)
    assert len(streams) == len(resources) == len(sm_counts) + 1
    sizes = [round_up(c, minimum, granularity) for c in sm_counts]
    counts = [r.sm.smCount for r in resources]
    assert counts == sizes + [whole.sm_count - sum(sizes)]
    for count, asked in zip(counts, sm_counts):
        assert count >= max(asked, minimum) and count % granularity == 0
    check_partitions(streams, counts, run_gemm=len(sm_counts) <= 3)


def test_insufficient_sms(dev, whole, granularity):
    total = whole.sm_count
    for call in (
        lambda: green_ctx.split_device_green_ctx(dev, 3, total // 2),
        lambda: green_ctx.split_device_green_ctx(dev, total // granularity + 1, granularity),
        lambda: green_ctx.split_device_green_ctx(dev, 1, total),  # nothing left for the remainder
        lambda: green_ctx.split_device_green_ctx_by_sm_count(dev, [total]),
        lambda: green_ctx.split_device_green_ctx_by_sm_count(dev, [granularity, total - granularity]),
    ):
        with pytest.raises(RuntimeError, match="^Insufficient SMs") as caught:
            call()
        assert type(caught.value) is RuntimeError and flashinfer_would_skip(caught.value)
    with pytest.raises(ValueError, match="SM count must be positive, got 0"):
        green_ctx.split_device_green_ctx_by_sm_count(dev, [8, 0])


def test_the_pieces(dev, whole, granularity):
    cu_dev = green_ctx.get_cudevice(dev)
    assert int(cu_dev) == dev.index
    resource = green_ctx.get_device_resource(cu_dev)
    assert resource.sm.smCount == whole.sm_count
    results, remaining = green_ctx.split_resource(resource, 2, granularity)
    first, rest = green_ctx.split_resource_by_sm_count(cu_dev, remaining, [2 * granularity])  # a split's output
    resources = results + first + [rest]
    counts = [r.sm.smCount for r in resources]
    assert counts == [granularity, granularity, 2 * granularity, whole.sm_count - 4 * granularity]
    check_partitions(green_ctx.create_green_ctx_streams(cu_dev, resources), counts)


def test_streams_keep_their_contexts_alive(dev):
    streams, resources = green_ctx.split_device_green_ctx(dev, 2, 16)
    counts = [r.sm.smCount for r in resources]
    del resources
    gc.collect()
    check_partitions(streams, counts, run_gemm=False)


def test_no_leaks_in_a_loop(dev, device, live):
    def one_round():
        for streams, _ in (green_ctx.split_device_green_ctx(dev, 2, 16),
                           green_ctx.split_device_green_ctx_by_sm_count(dev, [8, 16, 24])):
            for stream in streams:
                with torch.cuda.stream(stream):
                    torch.ones(1024, device=dev).add_(1)  # work on every stream (no cuBLAS workspace)
            for stream in streams:
                stream.synchronize()

    one_round()  # the first round makes the contexts; every later one reuses them
    torch.cuda.synchronize(device)
    gc.collect()
    free_before = torch.cuda.mem_get_info(device)[0]
    for _ in range(200):
        one_round()
    torch.cuda.synchronize(device)
    gc.collect()
    free_after = torch.cuda.mem_get_info(device)[0]
    counts = live()
    assert counts["contexts"] + counts["internal_contexts"] + counts["streams"] == 0, counts
    assert counts["idle_contexts"] <= tgc._C.idle_context_limit()
    assert (free_before - free_after) / MIB <= 16, (free_before - free_after) / MIB
    tgc.release_idle_contexts()
    assert live()["remembered"] == 0


# ---- SGLang: sgl_kernel's create_greenctx_stream_by_value and get_sm_available -----------


def pd_divisions(total: int, granularity: int) -> list[tuple[int, int]]:
    """(prefill, decode) pairs as SGLang's PD multiplexing makes them: prefill in steps of the
    granularity, decode the rest; on an H200 (112, 20), (104, 28), (96, 36), (80, 52), (64, 68),
    (56, 76)."""
    return [(k * granularity, total - k * granularity) for k in (14, 13, 12, 10, 8, 7)
            if 2 * granularity <= total - k * granularity]


def test_sglang_pd_divisions(device, whole, granularity):
    assert spatial.get_sm_available(device) == torch.cuda.get_device_properties(device).multi_processor_count
    assert spatial.get_sm_available() == whole.sm_count
    divisions = pd_divisions(whole.sm_count, granularity)
    assert divisions
    for prefill, decode in divisions:
        stream_a, stream_b = spatial.create_greenctx_stream_by_value(prefill, decode, device)
        check_partitions([stream_a, stream_b], [prefill, decode], run_gemm=prefill == divisions[0][0])
    stream_a, stream_b = spatial.create_greenctx_stream_by_value(2 * granularity, 2 * granularity)  # SMs left over
    check_partitions([stream_a, stream_b], [2 * granularity, 2 * granularity])


def test_sglang_errors_and_loop(device, whole, granularity, live):
    total = whole.sm_count
    with pytest.raises(RuntimeError, match="SM counts must be positive"):
        spatial.create_greenctx_stream_by_value(0, granularity, device)
    with pytest.raises(RuntimeError, match="Not enough SMs available"):
        spatial.create_greenctx_stream_by_value(total, granularity, device)
    if granularity > 2:
        with pytest.raises(RuntimeError, match="not equal to the input SMs"):
            spatial.create_greenctx_stream_by_value(granularity + 2, 2 * granularity, device)
    prefill, decode = pd_divisions(total, granularity)[0]
    for _ in range(100):
        spatial.create_greenctx_stream_by_value(prefill, decode, device)
    gc.collect()
    counts = live()
    assert counts["contexts"] + counts["streams"] == 0, counts


# ---- sm_count(stream), is_available, locality ---------------------------------------------


def test_sm_count_of_green_and_plain_streams(device, whole, granularity):
    total = whole.sm_count
    ctx = GreenContext(num_sms=2 * granularity)
    green = ctx.Stream()
    assert sm_count(green) == ctx.sm_count == 2 * granularity
    external = torch.cuda.ExternalStream(green.cuda_stream, device=torch.device("cuda", device))
    assert sm_count(external) == ctx.sm_count  # asked of the driver
    assert sm_count(torch.cuda.Stream()) == total
    assert sm_count(torch.cuda.default_stream()) == total
    assert sm_count() == total
    with torch.cuda.stream(green):
        assert sm_count() == ctx.sm_count
    high = ctx.Stream(priority=-1)
    assert sm_count(high) == ctx.sm_count
    # A thread that has not touched CUDA: its default stream belongs to no green context.
    seen = []
    thread = threading.Thread(target=lambda: seen.append((sm_count(), sm_count(external))))
    thread.start()
    thread.join()
    assert seen == [(total, ctx.sm_count)]
    # Cheap enough per launch (the benchmark measures it precisely; this is a loose bound).
    for stream in (green, external, torch.cuda.current_stream()):
        start = time.perf_counter()
        for _ in range(10_000):
            sm_count(stream)
        assert (time.perf_counter() - start) / 10_000 < 5e-6


def test_sm_count_follows_a_reused_stream_handle(device, granularity):
    """A destroyed stream's handle may be handed out again for another context's stream: the
    answer is the new stream's, never a cached one."""
    previous = tgc.set_idle_context_limit(0)  # destroy contexts (and their streams) when dropped
    try:
        reused = 0
        for _ in range(20):
            small = GreenContext(num_sms=granularity)
            handle = small.Stream().cuda_stream
            external = torch.cuda.ExternalStream(handle, device=torch.device("cuda", device))
            assert sm_count(external) == small.sm_count
            del small, external
            gc.collect()
            big = GreenContext(num_sms=4 * granularity)
            streams = [big.Stream() for _ in range(4)]
            for stream in streams:
                if stream.cuda_stream == handle:
                    reused += 1
                    again = torch.cuda.ExternalStream(handle, device=torch.device("cuda", device))
                    assert sm_count(again) == big.sm_count
            del big, streams
            gc.collect()
        print(f"stream handles handed out again: {reused} of 20")
    finally:
        tgc.set_idle_context_limit(previous)


@pytest.fixture
def torchs_own_module():
    """torch.cuda.green_contexts as torch ships it, whether or not install() ran before."""
    installed = tgc.installed()
    if installed:
        tgc.uninstall()
    yield
    if installed:
        tgc.install()


def test_sm_count_of_torchs_own_green_contexts(device, granularity, torchs_own_module):
    try:
        from torch.cuda.green_contexts import GreenContext as Builtin
    except Exception as error:  # noqa: BLE001
        pytest.skip(f"this torch has no usable torch.cuda.green_contexts: {error}")
    if Builtin.__module__.startswith("torch_green_contexts"):
        pytest.skip("torch.cuda.green_contexts is replaced by torch_green_contexts here")
    try:
        try:
            theirs = Builtin.create(num_sms=2 * granularity, device_id=device)
        except TypeError:
            theirs = Builtin.create(2 * granularity, device)
        stream = theirs.Stream()
    except Exception as error:  # noqa: BLE001 - e.g. no cuda-python
        pytest.skip(f"torch's own green contexts cannot be used here: {error}")
    assert sm_count(stream) == len(set(observed_sm_ids(stream)))


def test_is_available_and_locality(device, driver_version):
    assert tgc.is_available() is True
    count = tgc.get_num_locality_domains(device)
    assert count >= 1 and tgc.get_num_locality_domains() == count
    assert tgc.is_localization_supported(device) is (count > 1)
    if driver_version < 13040:
        assert count == 1  # the driver cannot say
