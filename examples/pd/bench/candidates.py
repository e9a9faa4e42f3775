"""Which static splits a sweep runs: the candidates from a latency profile and both SLOs, and
the SM counts the device gives. Plain Python (no torch)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Sequence


def bucket_reached(summaries: Iterable[dict[str, Any]], target: float, default: int) -> int:
    """The largest decode bucket reached in the runs whose attainment reached ``target`` (the
    load a static split must carry while the SLOs hold); in all runs when none did, and
    ``default`` when there were none."""
    runs = list(summaries)
    meeting = [s["largest_bucket"] for s in runs if s["attainment"] >= target and s["largest_bucket"]]
    reached = meeting or [s["largest_bucket"] for s in runs if s["largest_bucket"]]
    return max(reached, default=default)


@dataclasses.dataclass(frozen=True)
class SplitOption:
    """A static split to choose from: a layout's key and its two sides' SM counts."""

    key: Any
    latency_sms: int
    batch_sms: int


def static_candidates(options: Sequence[SplitOption], decode_us: Callable[[Any], "float | None"],
                      prefill_fits: Callable[[int], bool], slo_us: float, n: int = 3) -> list[Any]:
    """Keys of ``options`` to run as static splits, chosen from both SLOs: the split with the
    fewest latency SMs whose modelled decode step (``decode_us``, None where unknown) meets
    ``slo_us`` (TPOT), and the split with the most latency SMs whose batch side still prefills
    in time (``prefill_fits(batch_sms)``, TTFT), then their neighbours in latency SMs, ``n`` in
    all. Where the two disagree both run, so that neither SLO is given up unseen."""
    ordered = sorted(options, key=lambda o: (o.latency_sms, -o.batch_sms))
    if not ordered:
        raise ValueError("no split to choose a static one from")
    meeting = [i for i, o in enumerate(ordered) if (lat := decode_us(o.key)) is not None and lat <= slo_us]
    fitting = [i for i, o in enumerate(ordered) if prefill_fits(o.batch_sms)]
    anchors = list(dict.fromkeys([meeting[0] if meeting else len(ordered) - 1, fitting[-1] if fitting else 0]))
    chosen = anchors[:n]
    for step in range(1, len(ordered)):
        for anchor in anchors:
            for i in (anchor - step, anchor + step):
                if 0 <= i < len(ordered) and i not in chosen and len(chosen) < n:
                    chosen.append(i)
    return [ordered[i].key for i in chosen]


def layout_counts(wanted: Iterable[int], available: Sequence[int], total: int) -> tuple[list[int], list[int]]:
    """The wanted latency-side SM counts the device gives (``available``, as
    ``sizing.available_counts`` lists them), keeping 0 (all SMs to prefill) and ``total`` (all
    SMs to decode); returns (kept, dropped)."""
    kept: list[int] = []
    dropped: list[int] = []
    for k in sorted(set(wanted)):
        (kept if k in (0, total) or k in available else dropped).append(k)
    return kept, dropped
