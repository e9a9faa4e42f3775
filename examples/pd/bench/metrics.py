"""What a run records and what is read from it: TTFT, TPOT, SLO attainment, goodput.

No GPU needed. Times are seconds since the run started (``perf_counter`` minus the
run's start); the summaries report milliseconds.

- TTFT of a request: its first token's time (when its prefill finished) minus its arrival.
- TPOT of a request: (finish - first token) / (output tokens - 1), the mean time between its
  later tokens.
- A request meets the SLOs when it finished within the run and both its TTFT and its TPOT are
  at most their SLOs; a request unfinished when the run was cut off is a miss.
- Attainment: the share of the trace's requests meeting the SLOs.
- Goodput (DistServe's): the highest arrival rate at which at least 90% of requests meet the
  SLOs, linearly interpolated between the highest measured rate that reaches 90% and the next
  measured rate (see :func:`goodput`).
- Time between tokens (ITL): for every output token after a request's first, the time since its
  previous token reached the host, over all tokens of all requests (as SGLang's benchmark
  reports ITL); a request cut off while decoding adds the time since its last token.
- P99 goodput (SGLang's PD multiplexing): the highest arrival rate at which the P99 of TTFT over
  the trace's requests (a request without a first token counts as infinitely late) and the P99
  of the time between tokens are both within their SLOs. Its figure of merit is the P99 margin,
  the larger of the two P99s over their SLOs; a rate passes at 1 or below, and the rate where the
  margin crosses 1 is interpolated as for attainment. Where the TTFT SLO grows with the prompt
  (:class:`Slo`), the TTFT part is the P99 of each request's TTFT over its own SLO.
- Decode steps: each step's latency from its launch on the host to the host holding its
  sampled tokens, and the share of steps within the TPOT SLO.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any, Iterable

from torch_green_contexts.sizing import percentile

from ..engine.request import Slo
from ..engine.steps import DecodeStep

TARGET_ATTAINMENT = 0.9
MARGIN_CAP = 100.0  # P99 margins above this (or infinite) are recorded as this
METRICS = {"distserve": ("attainment", TARGET_ATTAINMENT, True), "p99": ("p99_margin", 1.0, False)}
METRIC_NAMES = {"distserve": "DistServe goodput (90% of requests meet TTFT and TPOT)",
                "p99": "P99 goodput (P99 TTFT and P99 time between tokens within the SLOs)"}


def slo_json(slo: Slo) -> dict[str, float]:
    """The SLO figures a results file records (milliseconds)."""
    return {"ttft_ms": slo.ttft * 1e3, "tpot_ms": slo.tpot * 1e3, "ttft_ms_per_token": slo.ttft_per_token * 1e3}


def slo_from_json(figures: dict[str, Any]) -> Slo:
    """The SLOs of a results file (files older than ``ttft_ms_per_token`` have one TTFT SLO)."""
    return Slo(ttft=figures["ttft_ms"] / 1e3, tpot=figures["tpot_ms"] / 1e3,
               ttft_per_token=figures.get("ttft_ms_per_token", 0.0) / 1e3)


@dataclasses.dataclass(frozen=True)
class RequestRecord:
    """What happened to one request. ``first_token`` and ``finish`` are None when the run
    ended (cut off) before them; ``tokens`` is the output tokens produced by then."""

    id: int
    arrival: float
    prompt: int
    output: int
    first_token: float | None
    finish: float | None
    tokens: int

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.arrival

    @property
    def tpot(self) -> float | None:
        if self.finish is None or self.first_token is None:
            return None
        return 0.0 if self.output <= 1 else (self.finish - self.first_token) / (self.output - 1)

    def meets(self, slo: Slo) -> bool:
        ttft, tpot = self.ttft, self.tpot
        return ttft is not None and tpot is not None and ttft <= slo.ttft_for(self.prompt) and tpot <= slo.tpot


@dataclasses.dataclass
class RunLog:
    """One run of one scheduler over one trace."""

    requests: list[RequestRecord]
    steps: list[DecodeStep]
    duration: float
    cut_off: bool
    gaps: list[float] = dataclasses.field(default_factory=list)  # seconds between tokens (ITL)


def spread_ms(values_s: Iterable[float]) -> dict[str, Any]:
    """p50/p90/p99/max (milliseconds) and count of ``values_s`` (seconds); None when empty."""
    values = [v * 1e3 for v in values_s]
    if not values:
        return {"n": 0, "p50": None, "p90": None, "p99": None, "max": None}
    return {"n": len(values), "p50": percentile(values, 50), "p90": percentile(values, 90),
            "p99": percentile(values, 99), "max": max(values)}


def summarize(log: RunLog, slo: Slo) -> dict[str, Any]:
    """The figures of one run: attainment, TTFT and TPOT spreads (over the requests that got
    that far; ``n`` says how many), decode-step latencies and output throughput."""
    records = log.requests
    n = len(records)
    finished = [r for r in records if r.finish is not None]
    ttfts = [r.ttft for r in records if r.ttft is not None]
    tpots = [r.tpot for r in records if r.tpot is not None]
    steps = [s.seconds for s in log.steps]
    tokens = sum(r.tokens for r in records)
    ttft_p99 = percentile([math.inf if t is None else t for t in (r.ttft for r in records)], 99) if n else math.inf
    itl_p99 = percentile(log.gaps, 99) if log.gaps else 0.0
    if slo.ttft_per_token:  # the P99 of TTFT over each request's own SLO
        ttft_share = percentile([math.inf if r.ttft is None else r.ttft / slo.ttft_for(r.prompt)
                                 for r in records], 99) if n else math.inf
    else:
        ttft_share = ttft_p99 / slo.ttft
    margin = max(ttft_share, itl_p99 / slo.tpot)
    return {
        "requests": n,
        "finished": len(finished),
        "attainment": sum(r.meets(slo) for r in records) / n if n else 0.0,
        "ttft_met": sum(1 for r in records if r.ttft is not None and r.ttft <= slo.ttft_for(r.prompt)) / n
        if n else 0.0,
        "tpot_met": sum(1 for t in tpots if t <= slo.tpot) / n if n else 0.0,
        "ttft_ms": spread_ms(ttfts),
        "tpot_ms": spread_ms(tpots),
        "step_ms": spread_ms(steps),
        "steps_within_tpot": sum(1 for s in steps if s <= slo.tpot) / len(steps) if steps else None,
        "itl_ms": spread_ms(log.gaps),
        "p99_ttft_ms": ttft_p99 * 1e3 if math.isfinite(ttft_p99) else None,
        "p99_margin": min(margin, MARGIN_CAP) if math.isfinite(margin) else MARGIN_CAP,
        "output_tokens": tokens,
        "output_tokens_per_s": tokens / log.duration if log.duration > 0 else 0.0,
        "duration_s": log.duration,
        "cut_off": log.cut_off,
        "steps_per_lane": dict(sorted(Counter(s.lane for s in log.steps).items())),
        "largest_bucket": max((s.bucket for s in log.steps), default=0),
    }


@dataclasses.dataclass(frozen=True)
class Goodput:
    """The goodput read from (rate, attainment) points, and how it was read: ``"interpolated"``
    between two measured rates, ``"highest measured"`` (every rate up to the highest measured
    one reached the target: a lower bound), or ``"none met"`` (``rate`` 0: not even the lowest
    measured rate reached the target). ``between``: the two measured rates it was interpolated
    between."""

    rate: float
    how: str
    between: tuple[float, float] | None = None


def passes(value: float, target: float, higher: bool) -> bool:
    return value >= target if higher else value <= target


def goodput(points: Iterable[tuple[float, float]], target: float = TARGET_ATTAINMENT, higher: bool = True) -> Goodput:
    """The highest arrival rate whose figure reaches ``target`` (at least it when ``higher``,
    at most it otherwise): the highest measured rate that reaches it, ``r1``, and the next
    measured rate ``r2`` (which does not) give the rate where the line between their figures
    crosses ``target``. Measured rates below ``r1`` that fall short (noise) do not lower it."""
    ordered = sorted(points)
    if not ordered:
        raise ValueError("goodput of no measured rates")
    if len({rate for rate, _ in ordered}) != len(ordered):
        raise ValueError(f"goodput needs one attainment per rate, got {ordered}")
    meeting = [i for i, (_, value) in enumerate(ordered) if passes(value, target, higher)]
    if not meeting:
        return Goodput(0.0, "none met")
    i = meeting[-1]
    if i == len(ordered) - 1:
        return Goodput(ordered[i][0], "highest measured")
    (r1, a1), (r2, a2) = ordered[i], ordered[i + 1]
    return Goodput(r1 + (a1 - target) / (a1 - a2) * (r2 - r1), "interpolated", (r1, r2))


def metric_goodput(points: Iterable[tuple[float, dict[str, Any]]], metric: str) -> Goodput:
    """Goodput under ``metric`` (a key of :data:`METRICS`) from (rate, summary) pairs."""
    field, target, higher = METRICS[metric]
    return goodput([(rate, summary[field]) for rate, summary in points], target, higher)


def ratio(a: float, b: float) -> float | None:
    """a / b, or None when b is 0 (no goodput to compare against)."""
    return a / b if b > 0 else None
