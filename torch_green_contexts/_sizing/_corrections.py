"""Online corrections of profiled step latencies, per layout, that cannot lock up.

Each layout's correction comes from the steps measured on that layout alone: the median of its
last few ratios (measured latency over the profile's figure for the same step), the profile
standing in for the ratios not yet measured at first, so neither one outlier nor a first, cold
step moves anything, while a slowdown does within a few steps. A slowdown seen on a layout is at least as large on layouts with fewer latency
SMs, so a *change* there (its recent ratio over its own slow-moving baseline) raises the
estimates of those layouts too; a steady bias never does, because the baseline catches up with
it. Everything measured decays towards the profile once a layout is no longer measured, with a
half-life in steps, so a layout that was slow once is tried again later. Plain Python.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Hashable, Iterable


class Corrections:
    """Per-layout factors (1 or more) that multiply a profile's latency estimates.

    ``layouts`` pairs each layout's key with its latency SM count (the order of propagation:
    a change seen on ``k`` SMs raises the factors of layouts with fewer). ``window`` ratios per
    layout make its own estimate (their median); the baseline follows the own estimate with a
    half-life of ``half_life_steps`` observations, and unobserved figures decay towards 1 with
    the same half-life in steps (:meth:`tick` counts them). The factors are worked out again
    after an observation, and otherwise every ``half_life_steps / 64`` steps: in between they
    would decay by about one percent of their excess over 1.
    """

    def __init__(self, layouts: Iterable[tuple[Hashable, int]], *, half_life_steps: int, window: int = 5) -> None:
        self._sms = dict(layouts)
        self._half_life = float(half_life_steps)
        self._alpha = 1.0 - 0.5 ** (1.0 / half_life_steps)
        self._window = window
        self._recent: dict[Hashable, deque[float]] = {k: self._prior() for k in self._sms}
        self._own = dict.fromkeys(self._sms, 1.0)
        self._baseline = dict.fromkeys(self._sms, 1.0)
        self._seen_at = dict.fromkeys(self._sms, 0)
        self._observed = dict.fromkeys(self._sms, 0)
        self._now = 0
        # Most latency SMs first: the order in which changes propagate.
        self._by_sms = sorted(self._sms, key=lambda k: -self._sms[k])
        self._factors: dict[Hashable, float] | None = None  # None once out of date
        self._computed_at = 0
        self._refresh_steps = max(1, half_life_steps // 64)

    def tick(self, steps: int = 1) -> None:
        """Count ``steps`` more steps (the clock of the decay)."""
        self._now += steps
        if self._now - self._computed_at >= self._refresh_steps:
            self._factors = None

    def observe(self, key: Hashable, ratio: float) -> None:
        """One measured step on ``key``: its latency over the profile's figure for that step (a
        finite number of 0 or more; the policies check the latency they are given)."""
        if not 0 <= ratio < math.inf:
            raise ValueError(f"a step's latency ratio must be a finite number of 0 or more, got {ratio!r}")
        recent = self._recent[key]
        if self._now - self._seen_at[key] > self._half_life:
            # What was seen over a half-life ago says nothing of now: a layout tried again after
            # its correction decayed (a probe) is judged by its new steps alone.
            recent = self._recent[key] = deque(maxlen=self._window)
        recent.append(ratio)
        ordered = sorted(recent)
        self._own[key] = ordered[len(ordered) // 2]
        self._baseline[key] += self._alpha * (self._own[key] - self._baseline[key])
        self._seen_at[key] = self._now
        self._observed[key] += 1
        self._factors = None

    def factor(self, key: Hashable) -> float:
        """The factor for ``key`` now: its own (decayed) estimate, raised by any change seen
        on a layout with more latency SMs, and never below 1."""
        return self.factors()[key]

    def factors(self) -> dict[Hashable, float]:
        """Every layout's factor now (do not change the dictionary)."""
        if self._factors is None:
            self._factors = self._compute_factors()
            self._computed_at = self._now
        return self._factors

    def _compute_factors(self) -> dict[Hashable, float]:
        """Every factor in one pass from the most latency SMs down, carrying the largest change
        seen on layouts with more SMs than the current one."""
        factors: dict[Hashable, float] = {}
        carried = pending = 1.0  # changes of layouts with more SMs / with as many as the last
        last_sms = None
        for key in self._by_sms:
            sms = self._sms[key]
            if sms != last_sms:
                carried, pending, last_sms = max(carried, pending), 1.0, sms
            factors[key] = max(carried, self._decayed(key, self._own[key]))
            if self._observed[key] and self._baseline[key] > 0:
                pending = max(pending, self._decayed(key, self._own[key] / self._baseline[key]))
        return factors

    def _prior(self) -> deque[float]:
        return deque([1.0] * self._window, maxlen=self._window)

    def observed(self) -> dict[Any, int]:
        return dict(self._observed)

    def _decayed(self, key: Hashable, value: float) -> float:
        if value <= 1.0:
            return value
        age = self._now - self._seen_at[key]
        return float(1.0 + (value - 1.0) * 0.5 ** (age / self._half_life))
