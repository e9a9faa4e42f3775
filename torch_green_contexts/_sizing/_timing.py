"""Timing primitives of the sizing tools: batch work kept queued on a stream, a step timed call
by call with CUDA events, and a step captured into a CUDA graph on a partition's stream."""

from __future__ import annotations

import time
import warnings
from collections import deque
from typing import Any, Callable

import torch

POLL_S = 50e-6  # how often the host tops the load up while it waits for a timed call


def event(timing: bool = False) -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=timing)  # type: ignore[no-untyped-call]


class QueuedLoad:
    """Keeps batch work queued on a stream: ``load()`` launches one piece of it, and every
    :meth:`top_up` launches more until ``depth`` calls are in flight. :meth:`stop` waits for
    them and returns the calls per second of device time (CUDA events around the calls)."""

    def __init__(self, load: Callable[[], Any], stream: torch.cuda.Stream, depth: int) -> None:
        self.load, self.stream, self.depth = load, stream, depth
        self.pending: deque[torch.cuda.Event] = deque()
        self.calls = 0
        self.seconds = 0.0  # device time of the calls, after stop()
        self.first = event(timing=True)
        self.last = event(timing=True)

    def start(self) -> None:
        self.calls = 0
        self.first.record(self.stream)
        self.top_up()

    def top_up(self) -> None:
        while self.pending and self.pending[0].query():  # type: ignore[no-untyped-call]
            self.pending.popleft()
        while len(self.pending) < self.depth:
            with torch.cuda.stream(self.stream):
                self.load()
            done = event()
            done.record(self.stream)
            self.pending.append(done)
            self.calls += 1

    def stop(self) -> float:
        """Waits for the queued calls; returns the calls per second of device time."""
        self.last.record(self.stream)
        self.last.synchronize()
        self.pending.clear()
        self.seconds = float(self.first.elapsed_time(self.last)) / 1e3
        return self.calls / self.seconds


def time_calls(fn: Callable[[], Any], stream: torch.cuda.Stream, calls: int,
               load: QueuedLoad | None = None) -> list[float]:
    """Device time in microseconds (CUDA events) of each of ``calls`` calls of ``fn`` on
    ``stream``, one at a time, each waited for before the next (with the GIL released), keeping
    ``load`` (already started) topped up before each call and while waiting for it."""
    start, end = event(timing=True), event(timing=True)
    times = []
    for _ in range(calls):
        if load is not None:
            load.top_up()
        with torch.cuda.stream(stream):
            start.record(stream)
            fn()
            end.record(stream)
        if load is None:
            end.synchronize()  # releases the GIL
        else:
            while not end.query():  # type: ignore[no-untyped-call]
                load.top_up()
                time.sleep(POLL_S)  # releases the GIL
        times.append(start.elapsed_time(end) * 1e3)
    return times


def graphed(fn: Callable[[], Any], stream: torch.cuda.Stream, *, warmup: int = 2) -> Callable[[], None]:
    """``fn`` captured into a CUDA graph on ``stream`` (after ``warmup`` calls there), as servers
    run their decode steps; returns the graph's replay, which launches on the current stream.

    A graph keeps the context it was captured in: its kernels run on the SMs of ``stream``'s
    green context wherever the replay is launched, so capture once per partition.
    """
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    stream.synchronize()
    previous = torch.cuda.current_stream(stream.device)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=stream):
            fn()
    except Exception as error:
        _recover_from_failed_capture(stream, previous)
        raise RuntimeError(f"fn could not be captured into a CUDA graph: {error}") from error
    replay: Callable[[], None] = graph.replay
    return replay


def _recover_from_failed_capture(stream: torch.cuda.Stream, previous: torch.cuda.Stream) -> None:
    """PyTorch leaves two things behind when a capture fails (torch.cuda.graph's exit raises
    before it restores them): the capture stream stays current, and its CUDA random generator
    stays marked as capturing, so that every later random op fails. Restore the stream, and
    let an empty capture on the same stream end the generator's capture."""
    torch.cuda.set_stream(previous)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "the CUDA graph is empty"
            with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=stream):
                pass
    except Exception:  # noqa: BLE001 - best effort; the capture error is what the caller sees
        pass
    finally:
        torch.cuda.set_stream(previous)
