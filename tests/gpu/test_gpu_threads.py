"""Several threads at once, each launching work on its own green-context stream, as a server's
worker threads do: no thread makes a context current or sets a device itself (a new thread has
no current context), each only enters `torch.cuda.stream(ctx.Stream())`. Results must be right,
the work must run on each context's own SMs (SM ids read with the probe kernel), and no thread
may be left with a green context current or another current stream."""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, observed_sm_ids

THREADS = 4
ROUNDS = 12


def _at_once(work: Callable[[int], Any], count: int) -> list[Any]:
    """``work(t)`` on ``count`` threads released together; what each returned. Fails with the
    first thread's error, and when a thread does not finish."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[tuple[int, BaseException]] = []

    def run(t: int) -> None:
        try:
            barrier.wait(timeout=120)
            results[t] = work(t)
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            errors.append((t, error))
            barrier.abort()

    threads = [threading.Thread(target=run, args=(t,), name=f"green-worker-{t}") for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a worker thread did not finish"
    if errors:
        t, error = errors[0]
        raise AssertionError(f"worker thread {t} failed: {type(error).__name__}: {error}") from error
    return results


def _operands(device: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device=f"cuda:{device}").manual_seed(7)
    a = torch.randn(512, 512, device=device, generator=generator)
    b = torch.randn(512, 512, device=device, generator=generator)
    expected = (a @ b).cpu()
    torch.cuda.synchronize(device)  # the operands are ready before any thread reads them
    return a, b, expected


def _work_on(ctx: GreenContext, device: int, a: torch.Tensor, b: torch.Tensor, expected: torch.Tensor,
             scale: float) -> dict[str, Any]:
    """ROUNDS rounds of a GEMM and the SM probe on a stream of ``ctx``, on the calling thread."""
    seen: dict[str, Any] = {"context_at_start": tgc._C.current_context()}
    before = torch.cuda.current_stream(device)
    stream = ctx.Stream()
    ids: set[int] = set()
    counts, right = [], []
    for _ in range(ROUNDS):
        with torch.cuda.stream(stream):
            c = (a @ b).mul_(scale)
        probed = observed_sm_ids(stream)  # also waits for the GEMM, queued before it
        ids.update(probed)
        counts.append(len(probed))
        right.append(torch.allclose(c.cpu(), expected * scale, rtol=1e-3, atol=1e-3))
    seen.update(ids=ids, counts=counts, right=right, sm_count=ctx.sm_count,
                stream_kept=torch.cuda.current_stream(device) == before,
                context_at_end=tgc._C.current_context())
    return seen


def _check_thread(t: int, seen: dict[str, Any], primary: int, green: set[int], *, sms_shared: bool = False) -> None:
    """``sms_shared``: the threads' contexts may hold the same SMs, so one round's probe can find
    some of them busy with another thread's work and land on fewer; over all rounds it must still
    reach every SM of the context and no other."""
    assert seen["context_at_start"] == 0, f"thread {t} began with a context current"
    assert all(seen["right"]), f"thread {t}: wrong results in rounds {seen['right']}"
    if sms_shared:
        assert all(0 < count <= seen["sm_count"] for count in seen["counts"]), (t, seen["counts"], seen["sm_count"])
    else:
        assert seen["counts"] == [seen["sm_count"]] * ROUNDS, (t, seen["counts"], seen["sm_count"])
    assert len(seen["ids"]) == seen["sm_count"], f"thread {t}: its rounds ran on different SMs"
    assert seen["stream_kept"], f"thread {t}: its current stream changed"
    assert seen["context_at_end"] not in green, f"thread {t} was left with a green context current"
    assert seen["context_at_end"] in (0, primary), (t, seen["context_at_end"], primary)


def test_threads_run_at_once_on_their_own_partitions_of_one_split(device, granularity):
    primary = tgc._C.current_context()
    a, b, expected = _operands(device)
    contexts = GreenContext.split(num_sms=(2 * granularity,) * THREADS, device_id=device)
    green = {ctx._native.context_handle for ctx in contexts}
    seen = _at_once(lambda t: _work_on(contexts[t], device, a, b, expected, float(t + 1)), THREADS)
    for t, result in enumerate(seen):
        _check_thread(t, result, primary, green)
    for t in range(THREADS):
        for u in range(t + 1, THREADS):
            assert not seen[t]["ids"] & seen[u]["ids"], f"threads {t} and {u} ran on the same SMs"
    assert tgc._C.current_context() == primary


def test_threads_make_their_own_contexts_at_once_and_run_on_them(device, granularity):
    primary = tgc._C.current_context()
    a, b, expected = _operands(device)
    made: list[int] = [0] * THREADS

    def work(t: int) -> dict[str, Any]:
        current = tgc._C.current_context()
        ctx = GreenContext(num_sms=granularity * (1 + t % 2), device_id=device)
        made[t] = ctx._native.context_handle
        seen = _work_on(ctx, device, a, b, expected, 0.5 * (t + 1))
        seen["context_at_start"] = current
        return seen

    seen = _at_once(work, THREADS)
    for t, result in enumerate(seen):
        _check_thread(t, result, primary, set(made), sms_shared=True)
        assert result["sm_count"] >= granularity * (1 + t % 2)
    assert tgc._C.current_context() == primary
