"""Reliability on a real GPU: leaks over many cycles, threads, lifetime at exit and fork, CUDA
graphs. Figures go to $TGC_REPORT_DIR/reliability.json when that variable is set (the `figures`
fixture)."""

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

from torch_green_contexts import GreenContext, SMPartition, _C, observed_sm_ids
from torch_green_contexts._probe import _SPIN_NS, _THREADS

from .conftest import gemm_check

def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _memory(device) -> tuple[int, int]:
    torch.cuda.synchronize(device)
    gc.collect()
    return torch.cuda.mem_get_info(device)[0], _rss()


MIB = 1 << 20
# After the first cycle every cycle reuses the same idle context and stream, so nothing should
# grow; the band allows for PyTorch's caching allocator and Python's own allocator settling.
DEVICE_BAND_MIB = 16
HOST_BAND_MIB = 32


def test_dropped_context_is_reused_on_this_driver(device, granularity, live):
    first = GreenContext(num_sms=2 * granularity)
    handle = first._native.handle
    stream = first.Stream().cuda_stream
    del first
    gc.collect()
    assert live()["idle_contexts"] == 1
    again = GreenContext(num_sms=2 * granularity)
    assert again._native.handle == handle  # the driver describes the same SMs with the same bytes
    assert again.Stream().cuda_stream == stream
    a, b = GreenContext.split(num_sms=(granularity, 0), backfill=(False, True))
    handles = {a._native.handle, b._native.handle}
    del a, b
    gc.collect()
    c, d = GreenContext.split(num_sms=(granularity, 0), backfill=(False, True))
    assert {c._native.handle, d._native.handle} == handles
    assert len(set(observed_sm_ids(c.Stream())) & set(observed_sm_ids(d.Stream()))) == 0


def _cycles(device, n, cycle, live) -> dict:
    cycle()  # the first cycle creates what later ones reuse
    free0, rss0 = _memory(device)
    start = time.perf_counter()
    for _ in range(n):
        cycle()
    elapsed = time.perf_counter() - start
    free1, rss1 = _memory(device)
    counts = live()
    return {
        "cycles": n,
        "seconds": round(elapsed, 2),
        "device_mib_change": (free0 - free1) / MIB,
        "host_mib_change": (rss1 - rss0) / MIB,
        "live_counts_after": counts,
    }


def test_ten_thousand_create_stream_kernel_destroy_cycles(device, granularity, live, figures):
    x = torch.ones(1 << 16, device=device)

    def cycle():
        ctx = GreenContext(num_sms=granularity)
        stream = ctx.Stream()
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            y = x + 1
        torch.cuda.current_stream(device).wait_stream(stream)
        if cycle.count % 1000 == 0:
            assert y[-1].item() == 2.0
        cycle.count += 1

    cycle.count = 0
    cycles = _cycles(device, 10_000, cycle, live)
    figures["create_stream_kernel_destroy"] = cycles
    counts = cycles["live_counts_after"]
    assert (counts["contexts"], counts["internal_contexts"], counts["streams"]) == (0, 0, 0)
    assert counts["idle_contexts"] <= _C.idle_context_limit()
    assert abs(cycles["device_mib_change"]) <= DEVICE_BAND_MIB, cycles
    assert abs(cycles["host_mib_change"]) <= HOST_BAND_MIB, cycles


def test_thousand_three_way_split_cycles(device, granularity, live, figures):
    g = granularity
    x = torch.ones(1 << 16, device=device)

    def cycle():
        contexts = GreenContext.split(num_sms=(2 * g, 3 * g, 4 * g))
        for ctx in contexts:
            stream = ctx.Stream()
            with torch.cuda.stream(stream):
                x.add_(0)
        del contexts

    cycles = _cycles(device, 1000, cycle, live)
    figures["three_way_split"] = cycles
    counts = cycles["live_counts_after"]
    assert (counts["contexts"], counts["internal_contexts"], counts["streams"]) == (0, 0, 0)
    assert abs(cycles["device_mib_change"]) <= DEVICE_BAND_MIB, cycles
    assert abs(cycles["host_mib_change"]) <= HOST_BAND_MIB, cycles


def test_sixteen_threads(device, granularity, whole, figures):
    g = granularity
    threads, rounds = 16, 100
    a = torch.randn(256, 256, device=device)
    b = torch.randn(256, 256, device=device)
    expected = (a @ b).cpu()
    errors: list = []
    done = [0] * threads

    def work(t: int) -> None:
        torch.cuda.set_device(device)
        try:
            for r in range(rounds):
                kind = (t + r) % 3
                if kind == 0:
                    contexts = [GreenContext(num_sms=g * (1 + t % 4))]
                elif kind == 1:
                    contexts = list(GreenContext.split(num_sms=(g, 2 * g)))
                else:
                    groups, _ = SMPartition.from_device(device).split(num_sms=(g * (1 + r % 2),))
                    contexts = [GreenContext(sm_partition=groups[0])]
                for ctx in contexts:
                    stream = ctx.Stream()
                    stream.wait_stream(torch.cuda.current_stream(device))
                    with torch.cuda.stream(stream):
                        c = a @ b
                    stream.synchronize()
                    if not torch.allclose(c.cpu(), expected, rtol=1e-3, atol=1e-3):
                        errors.append(f"thread {t} round {r}: wrong result")
                del contexts
                done[t] += 1
        except Exception as error:  # noqa: BLE001 - collected and reported below
            errors.append(f"thread {t}: {type(error).__name__}: {error}")

    start = time.perf_counter()
    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert not any(w.is_alive() for w in workers), "a thread hung"
    figures["threads"] = {"threads": threads, "rounds_each": rounds, "rounds_done": sum(done),
                          "seconds": round(time.perf_counter() - start, 2), "errors": errors[:5]}
    assert errors == []
    assert sum(done) == threads * rounds


def test_gil_released_while_a_dropped_context_waits_for_its_work(device, granularity, figures):
    ctx = GreenContext(num_sms=granularity)
    stream = ctx.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(1_000_000_000)  # about half a second of GPU time
    holder = [ctx, stream]
    del ctx, stream
    dropper = threading.Thread(target=holder.clear)
    spins = 0
    start = time.perf_counter()
    dropper.start()
    while dropper.is_alive():
        spins += 1
    waited = time.perf_counter() - start
    figures["gil"] = {"drop_waited_s": round(waited, 3), "main_thread_iterations": spins}
    assert waited > 0.1, "the drop did not wait for the queued work"
    assert spins > 10_000, "the main thread could not run while the drop waited"


def _run_python(code: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


def test_interpreter_exit_with_live_and_idle_contexts(device, figures):
    result = _run_python(f"""
        import torch
        from torch_green_contexts import GreenContext, SMPartition
        torch.cuda.set_device({device})
        ctx = GreenContext(num_sms=16)
        stream = ctx.Stream()
        a, b = GreenContext.split(num_sms=(16, 0), backfill=(False, True))
        groups, remainder = SMPartition.from_device().split(num_sms=(8, 8))
        part = a.sm_partition
        dropped = GreenContext(num_sms=24); dropped.Stream(); del dropped  # idle at exit
        x = torch.randn(4096, 4096, device="cuda")
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(20):
                y = x @ x                     # still queued at exit
        print("exiting")
    """)
    figures["exit"] = {"returncode": result.returncode, "stderr": result.stderr[-500:]}
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"
    assert result.stderr == ""


def test_fork_after_cuda_init_gives_the_child_a_clear_error(device, figures):
    result = _run_python(f"""
        import gc, os, torch
        from torch_green_contexts import GreenContext
        torch.cuda.set_device({device})
        ctx = GreenContext(num_sms=8)
        ctx.Stream()
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                GreenContext(num_sms=8, device_id={device})
            except RuntimeError as error:
                code = 0 if "spawn" in str(error) else 4
                print("child:", error, flush=True)
            del ctx
            gc.collect()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        print("parent still works", GreenContext(num_sms=8).sm_count)
    """, timeout=60)
    figures["fork"] = {"stdout": result.stdout[-500:], "stderr": result.stderr[-500:]}
    assert result.returncode == 0, result.stderr
    assert "child exit 0" in result.stdout, result.stdout
    assert "parent still works 8" in result.stdout


def _probe_into(stream, ids):
    _C.launch_sm_probe(stream.cuda_stream, ids.data_ptr(), ids.numel(), _THREADS, _SPIN_NS)


def test_graph_captured_on_a_partition_replays_there(device, granularity, whole, figures):
    small, rest = GreenContext.split(num_sms=(2 * granularity, 0), backfill=(False, True))
    stream = small.Stream()
    partition_sms = set(observed_sm_ids(stream))
    x = torch.randn(512, 512, device=device)
    w = torch.randn(512, 512, device=device)
    ids = torch.full((4 * whole.sm_count,), -1, dtype=torch.int32, device=device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):  # warm-up outside capture (cuBLAS workspace)
        x @ w
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = x @ w
        _probe_into(stream, ids)
    results = {}
    for where in ("partition stream", "plain stream"):
        replay_stream = small.Stream() if where == "partition stream" else torch.cuda.Stream()
        x.copy_(torch.randn(512, 512, device=device))
        ids.fill_(-1)
        replay_stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(replay_stream):
            graph.replay()
        replay_stream.synchronize()
        seen = set(ids.tolist())
        assert -1 not in seen
        results[where] = sorted(seen)
        torch.testing.assert_close(y, x @ w, rtol=1e-3, atol=1e-3)
    figures["graph_replay_sms"] = {k: len(v) for k, v in results.items()}
    figures["graph_partition_sms"] = len(partition_sms)
    assert set(results["partition stream"]) <= partition_sms
    assert set(results["plain stream"]) <= partition_sms  # the kernel nodes keep their context


def test_graphs_on_two_disjoint_partitions_replay_concurrently(device, granularity, whole):
    left, right = GreenContext.split(num_sms=(2 * granularity, 0), backfill=(False, True))
    graphs, outputs, ids, streams, inputs = [], [], [], [], []
    for ctx in (left, right):
        stream = ctx.Stream()
        observed_sm_ids(stream)  # loads the probe into this context before the capture
        x = torch.randn(1024, 1024, device=device)
        sm_ids = torch.full((4 * whole.sm_count,), -1, dtype=torch.int32, device=device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            x @ x
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            y = x @ x
            _probe_into(stream, sm_ids)
        graphs.append(graph), outputs.append(y), ids.append(sm_ids), streams.append(stream)
        inputs.append(x)
    for _ in range(3):
        for sm_ids in ids:
            sm_ids.fill_(-1)
        for stream in streams:
            stream.wait_stream(torch.cuda.current_stream(device))
        for graph, stream in zip(graphs, streams):
            with torch.cuda.stream(stream):
                graph.replay()
        # Each stream on its own: a green context is a context of its own, and no document says
        # that a device-wide synchronize of the primary context waits for its work.
        for stream in streams:
            stream.synchronize()
        seen = [set(t.tolist()) for t in ids]
        assert all(-1 not in s for s in seen)
        assert seen[0].isdisjoint(seen[1])
        assert len(seen[0]) == left.sm_count and len(seen[1]) == right.sm_count
        for x, y in zip(inputs, outputs):
            torch.testing.assert_close(y, x @ x, rtol=1e-3, atol=1e-3)


def test_set_context_inside_a_capture_is_refused(device, granularity):
    ctx = GreenContext(num_sms=granularity)
    stream = ctx.Stream()
    x = torch.randn(64, 64, device=device)
    stream.wait_stream(torch.cuda.current_stream(device))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = x * 2
        with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="graph is being captured"):
            ctx.set_context()
    graph.replay()
    torch.cuda.synchronize(device)
    torch.testing.assert_close(y, x * 2)
    gemm_check(stream)


def test_what_a_device_synchronize_waits_for(device, granularity, figures):
    """Records whether torch.cuda.synchronize() waits for work on a green-context stream (the
    README tells users to synchronize such streams themselves); the stream's own synchronize
    must wait."""
    ctx = GreenContext(num_sms=granularity)
    stream = ctx.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(400_000_000)  # a few hundred milliseconds
    torch.cuda.synchronize(device)
    figures["device_synchronize_waits_for_green_streams"] = bool(stream.query())
    stream.synchronize()
    assert stream.query()
