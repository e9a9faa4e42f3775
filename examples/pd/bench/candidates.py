"""The SM counts of a sweep's disjoint layouts: those asked for that the device gives. Plain
Python (no torch)."""

from __future__ import annotations

from typing import Iterable, Sequence


def layout_counts(wanted: Iterable[int], available: Sequence[int], total: int) -> tuple[list[int], list[int]]:
    """The wanted latency-side SM counts the device gives (``available``, as
    ``sizing.available_counts`` lists them), keeping 0 (all SMs to prefill) and ``total`` (all
    SMs to decode); returns (kept, dropped)."""
    kept: list[int] = []
    dropped: list[int] = []
    for k in sorted(set(wanted)):
        (kept if k in (0, total) or k in available else dropped).append(k)
    return kept, dropped
