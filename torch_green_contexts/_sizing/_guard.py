"""A worst-case contention guard, learned online, that cannot lock a layout out.

Per layout and class of prefill load beside it, the largest slowdown seen (a step's measured
latency over the profile's figure for it), decaying towards no slowdown with a half-life in steps
from when it was seen, so that a layout avoided after one slow step is tried again later. A
slowdown seen on a split is at least as large on splits with fewer latency SMs: their guard is
never below it. (An end layout, all SMs to one side, runs the other side's work on the same SMs:
what it sees says nothing of a split.) Plain Python.
"""

from __future__ import annotations

import bisect
import itertools
import math
from typing import Hashable, Iterable, Sequence


# A class's guards are worked out again after this many steps, or at once when a slowdown above
# a layout's guard is seen: in between they decay by less than one part in a hundred at any
# half-life of 2000 steps or more, and a guard that stays a little high errs on the safe side.
REFRESH_STEPS = 16


class ContentionGuard:
    """``layouts`` gives each layout's key, its latency SM count and whether it is a split (both
    sides have SMs of their own); ``classes`` are the ascending upper bounds of prefill tokens
    beside a step that end each load class (the last class is everything above)."""

    def __init__(self, layouts: Iterable[tuple[Hashable, int, bool]], classes: Sequence[int], *,
                 half_life_steps: int) -> None:
        entries = list(layouts)
        self._sms = {k: sms for k, sms, _ in entries}
        self._splits = {k for k, _, split in entries if split}
        self._splits_by_sms = sorted(self._splits, key=lambda k: -self._sms[k])
        self._cached: dict[int, tuple[int, dict[Hashable, float]]] = {}  # class -> (step computed, guards)
        self.classes = tuple(classes)
        self._half_life = float(half_life_steps)
        self._now = 0
        self._seen: dict[tuple[Hashable, int], tuple[float, int]] = {}  # (key, class) -> (largest, step seen)

    def load_class(self, prefill_tokens: float) -> int:
        """The class of a step beside ``prefill_tokens`` waiting prompt tokens."""
        return bisect.bisect_left(self.classes, prefill_tokens)

    def tick(self, steps: int = 1) -> None:
        self._now += steps

    def observe(self, key: Hashable, load_class: int, slowdown: float) -> None:
        """A step on ``key`` in ``load_class`` took ``slowdown`` times the profile's figure;
        ValueError for a slowdown that is not a finite number above 0."""
        if not (isinstance(slowdown, (int, float)) and math.isfinite(slowdown) and slowdown > 0):
            raise ValueError(f"a slowdown must be a finite number above 0, got {slowdown!r}")
        if key not in self._sms:
            raise ValueError(f"no layout {key!r} to guard; have {list(self._sms)}")
        now = self._decayed(key, load_class)
        if slowdown >= now:
            self._seen[(key, load_class)] = (slowdown, self._now)
            cached = self._cached.get(load_class)
            if cached is not None and slowdown > cached[1][key]:  # a guard rises: at once
                del self._cached[load_class]

    def factor(self, key: Hashable, load_class: int) -> float:
        """The guard of ``key`` in ``load_class`` now: at least 1, at least its own decayed
        largest slowdown, and for a split at least that of every split with more latency SMs."""
        return self.factors(load_class)[key]

    def factors(self, load_class: int) -> dict[Hashable, float]:
        """Every layout's guard in ``load_class`` now (do not change the dictionary)."""
        cached = self._cached.get(load_class)
        if cached is None or self._now - cached[0] >= REFRESH_STEPS:
            cached = self._cached[load_class] = (self._now, self._factors(load_class))
        return cached[1]

    def _factors(self, load_class: int) -> dict[Hashable, float]:
        """Every layout's guard in one pass over the splits from the most latency SMs down."""
        out = {k: max(1.0, self._decayed(k, load_class)) for k in self._sms if k not in self._splits}
        carried = 1.0
        for sms, keys in itertools.groupby(self._splits_by_sms, key=lambda k: self._sms[k]):
            group = list(keys)
            carried = max([carried] + [self._decayed(k, load_class) for k in group])
            for k in group:
                out[k] = carried
        return out

    def _decayed(self, key: Hashable, load_class: int) -> float:
        largest, seen = self._seen.get((key, load_class), (1.0, self._now))
        if largest <= 1.0:
            return 1.0
        return float(1.0 + (largest - 1.0) * 0.5 ** ((self._now - seen) / self._half_life))

    def table(self) -> dict[str, list[float]]:
        """Every layout's guard per class now (JSON keys)."""
        return {str(k): [round(self.factor(k, c), 4) for c in range(len(self.classes) + 1)] for k in self._sms}
