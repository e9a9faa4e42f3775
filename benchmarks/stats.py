"""Summary statistics, interleaving and targets: plain Python, no GPU needed. The statistics
are the package's own (torch_green_contexts._sizing._stats), shared with its sizing API."""

from __future__ import annotations

from torch_green_contexts._sizing._stats import interleaved, percentile, summarize

__all__ = ["interleaved", "percentile", "summarize", "target"]


def target(name: str, measured: float | None, goal: float, *, unit: str, detail: str = "",
           higher_is_better: bool = False) -> dict[str, object]:
    """A target line for the report: met when `measured` is on the right side of `goal`."""
    if measured is None:
        met = None
    else:
        met = measured >= goal if higher_is_better else measured <= goal
    return {
        "name": name,
        "measured": measured,
        "goal": goal,
        "unit": unit,
        "comparison": ">=" if higher_is_better else "<=",
        "met": met,
        "detail": detail,
    }
