"""Percentiles, summaries and the interleaved order of measured variants (plain Python)."""

from __future__ import annotations

import math
import random
from typing import Iterable, Iterator, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Iterable[float]) -> dict[str, float]:
    """Count, median, mean, p1/p10/p90/p99, min and max of `values`."""
    data = list(values)
    if not data:
        raise ValueError("summary of no values")
    return {
        "n": len(data),
        "median": percentile(data, 50),
        "mean": sum(data) / len(data),
        "p1": percentile(data, 1),
        "p10": percentile(data, 10),
        "p90": percentile(data, 90),
        "p99": percentile(data, 99),
        "min": min(data),
        "max": max(data),
    }


def interleaved(names: Sequence[str], rounds: int, seed: int = 0) -> Iterator[tuple[int, str]]:
    """(round, name) pairs: every name once per round, in a new order each round (seeded, so
    runs repeat), so that no variant always runs first while clocks settle, nor always right
    after the same other variant."""
    shuffle = random.Random(seed)
    for r in range(rounds):
        order = list(names)
        shuffle.shuffle(order)
        for name in order:
            yield r, name
