"""Rates, SLOs, time caps and run-time estimates derived from what one prefill and one decode
step cost on the device (measured at start-up). Plain Python (no torch)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ..engine.request import Request, Slo
from .workload import mean_lengths

WARMUP_S = 0.5  # per run: warm-up replays and synchronisation, roughly


@dataclasses.dataclass(frozen=True)
class Costs:
    """Measured alone on the whole GPU: one decode step of ``decode_batch`` requests at the
    reference context length, and the prefill of one prompt of ``prefill_tokens`` tokens."""

    decode_step_s: float
    decode_batch: int
    prefill_s: float
    prefill_tokens: int

    @property
    def prefill_s_per_token(self) -> float:
        return self.prefill_s / self.prefill_tokens


def default_slo(costs: Costs, ttft_x: float, tpot_x: float) -> Slo:
    """TTFT SLO: ``ttft_x`` times the prefill of the longest prompt; TPOT SLO: ``tpot_x``
    times the reference decode step (both alone on the whole GPU)."""
    return Slo(ttft=ttft_x * costs.prefill_s, tpot=tpot_x * costs.decode_step_s)


def capacity(trace: Sequence[Request], costs: Costs) -> float:
    """Requests per second the whole GPU could serve if it did nothing but this trace's work
    back to back: the mean prompt's prefill plus the mean output's share of decode steps of
    ``decode_batch`` requests. An estimate, to place the arrival rates."""
    mean_prompt, mean_output = mean_lengths(trace)
    per_request = (mean_prompt * costs.prefill_s_per_token
                   + mean_output * costs.decode_step_s / costs.decode_batch)
    return 1.0 / per_request


def rates_from(capacity_rps: float, fractions: Sequence[float]) -> list[float]:
    """Arrival rates at ``fractions`` of the capacity, to three significant digits."""
    return sorted({float(f"{capacity_rps * f:.3g}") for f in fractions})


def run_cap(trace: Sequence[Request], slo: Slo, margin_s: float = 1.0) -> float:
    """When a run is cut off: after the last arrival, the time its longest request would need
    if it just met both SLOs, plus ``margin_s``. Every request meeting its SLOs has finished by
    then, so counting the unfinished ones as misses misjudges none."""
    longest = max(r.output for r in trace)
    return trace[-1].arrival + max(slo.ttft_for(r.prompt) for r in trace) + (longest - 1) * slo.tpot + margin_s


def expected_run_s(trace: Sequence[Request], costs: Costs, cap_s: float, step_factor: float = 2.0) -> float:
    """A rough run time: when the last request would finish if each got its prefill alone and
    decode steps ``step_factor`` times the reference step, capped at ``cap_s``; plus warm-up."""
    end = max(r.arrival + r.prompt * costs.prefill_s_per_token + r.output * step_factor * costs.decode_step_s
              for r in trace)
    return min(end, cap_s) + WARMUP_S


def setup_estimate_s(costs: Costs, captures: int, profile_variants: int, profile_calls: int) -> float:
    """Graph captures (warm-up calls and the capture itself, about 0.1 s each at 32 layers)
    and the profile's timed calls (a decode step each, beside prefill pieces)."""
    per_capture = 3 * costs.decode_step_s + 0.05
    return captures * per_capture + profile_variants * (profile_calls * 1.5 * costs.decode_step_s + per_capture)
