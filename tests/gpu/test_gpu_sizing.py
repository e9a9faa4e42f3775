"""The sizing API on a real GPU: what it measures, what it leaves behind, and its choices."""

import gc
import threading

import pytest
import torch

import torch_green_contexts as tgc
from torch_green_contexts import sizing

from .conftest import warm_up


def gemm_step(device, n=1024):
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    out = torch.empty_like(a)
    return lambda: torch.mm(a, b, out=out)


def test_available_counts_are_exact_splits(device, whole):
    counts = sizing.available_counts(device)
    assert counts == sorted(set(counts))
    assert counts[-1] == whole.sm_count
    assert counts[0] >= 1
    for k in counts[:-1]:
        groups, _ = whole.split(num_sms=(k, 0), backfill=(False, True))
        assert [g.sm_count for g in groups] == [k, whole.sm_count - k]
    # The granularity the driver reports divides every count but the whole device's.
    g = whole.coscheduled_sm_count
    assert all(k % g == 0 for k in counts[:-1]), (g, counts)


def test_measure_times_every_count_and_the_plain_streams(device, whole, granularity):
    counts = [granularity, 4 * granularity, whole.sm_count]
    before = tgc._C.current_context()
    warm_up(device)  # the timings compared below are taken at working clocks
    result = sizing.measure(gemm_step(device), load=gemm_step(device, 4096), device_id=device, counts=counts,
                            rounds=2, samples=6, warmup=1)
    assert tgc._C.current_context() == before  # no green context left current
    assert [r.sm_count for r in result.rows] == counts
    assert [r.rest_sm_count for r in result.rows] == [whole.sm_count - k for k in counts]
    for row in result.rows[:-1]:
        assert row.idle.samples == 12 and row.loaded is not None and row.loaded.samples == 12
        assert 0 < row.idle.p50 <= row.idle.p99
        assert row.load_rate is not None and row.load_rate > 0
    assert result.rows[-1].loaded is None and result.rows[-1].load_rate is None
    # A 1024^3 GEMM is slower on 8 SMs than on 32, and slower on 32 than on the whole device.
    small, mid, full = (r.idle.p50 for r in result.rows)
    assert small > mid > full * 0.9
    assert result.plain.idle.samples == 12 and result.plain.loaded is not None
    assert result.plain.load_alone_rate > 0 and result.plain.load_rate > 0
    assert result.settings["counts"] == counts and result.settings["seconds"] > 0
    assert result.device["sm_count"] == whole.sm_count
    # Smallest meeting: a deadline met by the 4-granule row but not the smallest picks it.
    deadline = result.rows[1].loaded.p99
    if result.rows[0].loaded.p99 > deadline:
        assert result.smallest_meeting(deadline) == counts[1]
    assert result.smallest_meeting(result.rows[0].loaded.p99) == counts[0]
    assert result.smallest_meeting(min(r.idle.p50 for r in result.rows) / 10) is None
    assert sizing.SizingResult.from_json(result.to_json()) == result


def test_graph_replays_run_on_each_partition(device, whole, granularity):
    """With graph=True the step is captured once per partition: its replays on the smallest
    partition are slower than on the whole device, as the eager step's are."""
    warm_up(device)  # the timings compared below are taken at working clocks
    result = sizing.measure(gemm_step(device, 2048), device_id=device, counts=[granularity, whole.sm_count],
                            rounds=2, samples=5, graph=True)
    assert result.settings["graph"] is True
    small, full = result.rows
    assert small.idle.p50 > 3 * full.idle.p50, (small.idle, full.idle)
    assert result.plain.idle.p50 < small.idle.p50


def test_a_step_that_cannot_be_captured_is_a_clear_error(device, granularity):
    x = torch.ones(8, device=device)
    stream = torch.cuda.current_stream(device)

    def syncs():
        return (x * 2).sum().item()  # a host synchronisation: not capturable

    with pytest.raises(RuntimeError, match="could not be captured into a CUDA graph"):
        sizing.measure(syncs, device_id=device, counts=[granularity], rounds=1, samples=1, graph=True)
    with pytest.raises(TypeError, match="graph must be a bool"):
        sizing.measure(syncs, device_id=device, graph=1)
    gc.collect()
    torch.cuda.synchronize(device)
    assert (x + 1).sum().item() == 16
    # PyTorch's own state is restored too: the current stream, and random numbers on the GPU.
    assert torch.cuda.current_stream(device) == stream
    assert torch.randn(4, device=device).isfinite().all()


def test_measure_frees_what_it_made(device, granularity, live):
    sizing.measure(gemm_step(device), device_id=device, counts=[granularity], rounds=1, samples=2)
    counts = live()
    assert (counts["contexts"], counts["internal_contexts"]) == (0, 0), counts


def test_measure_without_load_and_its_plot(device, granularity, tmp_path):
    pytest.importorskip("matplotlib")
    result = sizing.measure(gemm_step(device), device_id=device, counts=[granularity, 2 * granularity],
                            rounds=1, samples=3)
    assert not result.has_load()
    assert all(r.loaded is None and r.load_rate is None for r in result.rows)
    assert result.plain.loaded is None and result.plain.load_alone_rate is None
    path = tmp_path / "sizing.png"
    result.plot(str(path), deadline_us=result.rows[0].idle.p99)
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_measure_releases_the_gil_while_waiting(device, granularity):
    """A step that keeps the GPU busy for milliseconds: another Python thread runs meanwhile."""
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    def slow_step():
        torch.cuda._sleep(20_000_000)  # about 10 ms

    thread = threading.Thread(target=count)
    thread.start()
    try:
        sizing.measure(slow_step, device_id=device, counts=[granularity], rounds=1, samples=5, warmup=0)
    finally:
        stop.set()
        thread.join()
    assert ticks > 100_000, ticks


def test_measure_errors_leave_the_gpu_usable(device, whole, live):
    with pytest.raises(ValueError, match="allowed counts"):
        sizing.measure(gemm_step(device), device_id=device, counts=[whole.sm_count + 1])
    with pytest.raises(RuntimeError, match="device_id"):
        sizing.measure(gemm_step(device), device_id=torch.cuda.device_count())

    def failing():
        raise KeyError("the step failed")

    with pytest.raises(KeyError, match="the step failed"):
        sizing.measure(failing, device_id=device, counts=[whole.coscheduled_sm_count], rounds=1, samples=1)
    gc.collect()  # the traceback held the failed run's frames
    assert live()["contexts"] == 0
    x = torch.ones(4, device=device)
    assert (x + 1).sum().item() == 8
