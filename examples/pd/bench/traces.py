"""A run's trace from the command line's settings: the requests of a seed at a rate."""

from __future__ import annotations

from ..engine.request import Request
from .cli import Settings
from .arrivals import Arrivals
from .workload import make_trace


def trace_for(s: Settings, rate: float, seed: int) -> list[Request]:
    """A run's trace: --requests requests or --arrival-s seconds of arrivals, whichever ends first."""
    trace = make_trace(s.requests, rate, seed=seed, prompts=s.prompts, outputs=s.outputs,
                       arrivals=Arrivals.parse(s.arrivals))
    return [r for r in trace if r.arrival <= s.arrival_s] or trace[:1]


def lengths_of(s: Settings, seed: int) -> list[Request]:
    """The first --requests requests of a seed's trace (at 1 request/s): its lengths, for
    estimates and the results file."""
    return make_trace(s.requests, 1.0, seed=seed, prompts=s.prompts, outputs=s.outputs)
