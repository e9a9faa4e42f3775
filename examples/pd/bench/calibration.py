"""What a sweep measures before its runs (GPU): the reference costs its SLOs and rates derive
from, and the steps its profiles time. Device times come from ``sizing.time_calls``."""

from __future__ import annotations

import functools
import statistics
from typing import Callable

import torch

from torch_green_contexts import sizing

from ..engine.gpu import Engine
from ..engine.lanes import Lane
from ..engine.model import Part
from ..engine.planning import bucket_for
from .estimates import Costs


def median_s(fn: Callable[[], None], stream: torch.cuda.Stream, repeats: int) -> float:
    """The median device time (seconds) of ``repeats`` calls of ``fn`` on ``stream``, after one
    untimed call."""
    with torch.cuda.stream(stream):
        fn()
    return statistics.median(sizing.time_calls(fn, stream, repeats)) / 1e6


def measure_costs(engine: Engine, lane: Lane, decode_batch: int, context: int, prompt: int, chunk: int,
                  repeats: int = 5) -> Costs:
    """Alone on ``lane`` (plain streams of the whole GPU): the decode step of ``decode_batch``
    requests at ``context`` tokens (graph replay) and the prefill of one ``prompt``-token prompt
    in chunks of ``chunk`` (medians of ``repeats``)."""
    rows = [(i, context) for i in range(decode_batch)]
    bucket = bucket_for(decode_batch, engine.buckets)
    model = engine.model

    def decode() -> None:
        engine.decode(lane, rows, bucket)

    def prefill() -> None:
        h = None
        for start in range(0, prompt, chunk):
            job = engine.start([Part(0, 0, start, min(chunk, prompt - start))])
            h = model.run_layers(job.h, job.rows, 0, model.shape.layers)
        assert h is not None
        model.head(h[-1:])

    return Costs(median_s(decode, lane.latency, repeats), decode_batch, median_s(prefill, lane.latency, repeats), prompt)


def profile_steps(engine: Engine, context: int) -> Callable[[int], Callable[[], None]]:
    """``make_step`` for ``sizing.profile``: the decode step of ``p`` requests in slots 0..p-1 at
    ``context`` tokens each (static rows set now and left alone while profiling)."""
    top = engine.buckets[-1]
    engine.set_rows([(i % engine.model.slots, context) for i in range(top)], top)
    engine.meta.copy_(engine.meta_host)
    torch.cuda.synchronize(engine.model.device)
    return lambda p: functools.partial(engine.decode_body, p)


def layout_steps(engine: Engine) -> Callable[[int, int], Callable[[], None]]:
    """``make_step`` for ``sizing.profile_layouts``: the decode step of ``batch`` requests holding
    ``context_tokens`` in all (spread evenly over slots 0..batch-1). Each step writes its own rows
    into the static inputs first, so that its graph replays them."""
    m = engine.model

    def make(batch: int, context_tokens: int) -> Callable[[], None]:
        if batch > engine.buckets[-1]:
            raise ValueError(f"a profile point of {batch} requests exceeds the largest bucket, {engine.buckets[-1]}")
        each = max(1, min(m.max_len - 1, context_tokens // batch))
        rows = torch.tensor([[i % m.slots for i in range(batch)], [each] * batch], dtype=torch.int64, device=m.device)

        def step() -> None:
            engine.meta[:, :batch].copy_(rows)
            engine.decode_body(batch)

        return step

    return make
