"""When requests arrive: a Poisson process, bursty Gamma-distributed gaps, or a rate that steps
between a low and a high level, each with a given mean rate. Plain Python.

- ``poisson``: gaps exponential (a coefficient of variation of 1).
- ``gamma:CV``: gaps Gamma-distributed with a coefficient of variation of CV (2 or 4: bursts
  of requests close together and long quiet gaps).
- ``rate-step`` or ``rate-step:LOW,HIGH,PERIOD``: a Poisson process whose rate is LOW times the
  rate for PERIOD seconds, then HIGH times it for PERIOD seconds, and so on (default 0.4, 1.6
  and 10, whose mean is the rate: at 75% of the capacity it steps between 30% and 120% of it).

Poisson and Gamma gaps are drawn once per seed at a mean of one and scaled by the rate, so that
every rate sees the same requests in the same order; a step's period is in seconds, so its
arrivals move with the rate.
"""

from __future__ import annotations

import dataclasses
import math
import random

KINDS = ("poisson", "gamma", "rate-step")


@dataclasses.dataclass(frozen=True)
class Arrivals:
    kind: str = "poisson"
    cv: float = 1.0
    low: float = 0.4
    high: float = 1.6
    period_s: float = 10.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"arrivals must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not (math.isfinite(self.cv) and self.cv > 0):
            raise ValueError(f"a Gamma arrival process needs a positive coefficient of variation, got {self.cv}")
        if not (0 < self.low <= self.high and math.isfinite(self.high) and self.period_s > 0):
            raise ValueError(f"a rate step needs 0 < low <= high and a positive period, got {self.low}, {self.high}, "
                             f"{self.period_s}")

    @classmethod
    def parse(cls, text: str) -> Arrivals:
        """``poisson``, ``gamma:CV`` or ``rate-step[:LOW,HIGH,PERIOD]``; ValueError otherwise."""
        kind, _, args = text.strip().partition(":")
        try:
            values = [float(v) for v in args.split(",")] if args else []
        except ValueError:
            raise ValueError(f"arrivals {text!r}: the numbers after ':' must be numbers") from None
        if kind == "poisson" and not values:
            return cls()
        if kind == "gamma" and len(values) == 1:
            return cls("gamma", cv=values[0])
        if kind == "rate-step" and len(values) in (0, 3):
            return cls("rate-step", 1.0, *values) if values else cls("rate-step")
        raise ValueError(f"arrivals must be poisson, gamma:CV or rate-step[:LOW,HIGH,PERIOD], got {text!r}")

    @property
    def label(self) -> str:
        """``poisson``, ``gamma cv 4``, ``rate-step 0.4x/1.6x every 10 s``."""
        if self.kind == "gamma":
            return f"gamma cv {self.cv:g}"
        if self.kind == "rate-step":
            return f"rate-step {self.low:g}x/{self.high:g}x every {self.period_s:g} s"
        return "poisson"

    def times(self, n: int, rate: float, seed: int) -> list[float]:
        """The arrival times of ``n`` requests at a mean of ``rate`` per second, the first at 0."""
        gaps = random.Random(f"{seed}/gaps")
        if self.kind == "gamma":
            shape, scale = 1.0 / self.cv ** 2, self.cv ** 2
            units = [0.0] + [gaps.gammavariate(shape, scale) for _ in range(n - 1)]
        else:
            units = [0.0] + [gaps.expovariate(1.0) for _ in range(n - 1)]
        out, work = [], 0.0
        for u in units:
            work += u
            out.append(work / rate if self.kind != "rate-step" else self._stepped(work, rate))
        return out

    def _stepped(self, work: float, rate: float) -> float:
        """When a process of ``low * rate`` for a period, then ``high * rate`` for a period,
        and so on, reaches ``work`` arrivals' worth of unit-rate time."""
        low, high, period = self.low * rate, self.high * rate, self.period_s
        cycles, left = divmod(work, (low + high) * period)
        if left <= low * period:
            return cycles * 2 * period + left / low
        return cycles * 2 * period + period + (left - low * period) / high
