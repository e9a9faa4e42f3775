"""The request trace the engine replays: Poisson arrivals, log-normal prompt and output lengths.

Plain Python (no torch). One seed gives the same requests at every arrival rate: the lengths
and the unit-rate gaps between arrivals are drawn once, and a rate only scales the gaps, so
runs at different rates (and of different schedulers) see the same prompts and outputs. Each
quantity has its own random stream, so the first ``n`` requests of a longer trace are the
requests of a trace of ``n``.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Sequence

from ..engine.request import Request
from .arrivals import Arrivals

POISSON = Arrivals()


@dataclasses.dataclass(frozen=True)
class Lengths:
    """A log-normal length distribution (``median`` and ``sigma`` of the underlying normal),
    rounded to whole tokens and clipped to ``[low, high]``."""

    low: int
    high: int
    median: float
    sigma: float

    def __post_init__(self) -> None:
        if not 1 <= self.low <= self.high:
            raise ValueError(f"lengths need 1 <= low <= high, got low={self.low}, high={self.high}")
        if not self.median > 0 or not self.sigma >= 0:
            raise ValueError(f"lengths need median > 0 and sigma >= 0, got {self.median}, {self.sigma}")

    def draw(self, rng: random.Random) -> int:
        value = round(rng.lognormvariate(math.log(self.median), self.sigma))
        return min(self.high, max(self.low, value))


# Defaults: a chat-like spread. Prompts: median 1024 tokens, 5% below ~280 and 5% above
# ~3800 before clipping to 256..4096; outputs: median 128, 5% below ~35 and 5% above ~470
# before clipping to 32..512.
PROMPTS = Lengths(low=256, high=4096, median=1024, sigma=0.8)
OUTPUTS = Lengths(low=32, high=512, median=128, sigma=0.8)


@dataclasses.dataclass(frozen=True)
class Workload:
    """A named mix of prompt and output lengths."""

    name: str
    prompts: Lengths
    outputs: Lengths
    about: str


# By name (--workload). "today": the default spread above. "chat": short prompts (median 500,
# 5% below ~130 and 5% above ~1900 before clipping) and longer answers (median 200).
# "long-prompt": documents of 4k-16k tokens (median 8k) with short answers (median 48).
WORKLOADS = {w.name: w for w in (
    Workload("today", PROMPTS, OUTPUTS, "prompts median 1024 (256-4096), outputs median 128 (32-512)"),
    Workload("chat", Lengths(low=32, high=2048, median=500, sigma=0.8), Lengths(low=16, high=768, median=200, sigma=0.8),
             "prompts median 500 (32-2048), outputs median 200 (16-768)"),
    Workload("long-prompt", Lengths(low=4096, high=16384, median=8192, sigma=0.45),
             Lengths(low=8, high=256, median=48, sigma=0.7),
             "prompts median 8192 (4096-16384), outputs median 48 (8-256)"),
)}


def make_trace(n: int, rate: float, *, seed: int = 0, prompts: Lengths = PROMPTS, outputs: Lengths = OUTPUTS,
               arrivals: Arrivals = POISSON) -> list[Request]:
    """``n`` requests arriving at a mean of ``rate`` requests per second (the first at time 0;
    a Poisson process unless ``arrivals`` says otherwise), in arrival order, with lengths drawn
    from ``prompts`` and ``outputs``."""
    if n < 1:
        raise ValueError(f"a trace needs at least one request, got {n}")
    if not rate > 0 or math.isinf(rate):
        raise ValueError(f"rate must be a positive number of requests per second, got {rate}")
    prompt_rng = random.Random(f"{seed}/prompts")
    output_rng = random.Random(f"{seed}/outputs")
    return [Request(i, at, prompts.draw(prompt_rng), outputs.draw(output_rng))
            for i, at in enumerate(arrivals.times(n, rate, seed))]


def mean_lengths(trace: Sequence[Request]) -> tuple[float, float]:
    """Mean prompt and output lengths of ``trace``."""
    return (sum(r.prompt for r in trace) / len(trace), sum(r.output for r in trace) / len(trace))


def describe(trace: Sequence[Request]) -> dict[str, float]:
    """Summary figures of a trace, for the results file."""
    prompts = sorted(r.prompt for r in trace)
    outputs = sorted(r.output for r in trace)
    mean_prompt, mean_output = mean_lengths(trace)
    return {
        "requests": len(trace),
        "span_s": trace[-1].arrival - trace[0].arrival,
        "prompt_mean": mean_prompt, "prompt_median": float(prompts[len(prompts) // 2]),
        "prompt_min": float(prompts[0]), "prompt_max": float(prompts[-1]),
        "output_mean": mean_output, "output_median": float(outputs[len(outputs) // 2]),
        "output_min": float(outputs[0]), "output_max": float(outputs[-1]),
    }
