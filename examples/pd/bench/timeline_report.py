"""``python -m examples.pd.timeline_report TIMELINE.json --calibration C``: a run's device
timeline (``--trace-runs``) against the simulator's costs. For every decode step, prefill piece
and mixed iteration the GPU ran, the share of its time the other role also ran, and the duration
the calibration's costs give that work at that share (alone at its idle speed, beside the other
role at its loaded speed; a decode step beside a piece smaller than a chunk takes the share of
the slowdown its lane measured for that size, as in the simulator); the ratio of the measured to
the modelled duration, by kind and by share, and for decode steps by graph bucket and by how
uneven their rows are (the longest row over the mean row; timelines record the longest row since
2026-12-07). No GPU needed."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any, Sequence

from ..engine.mixed import token_buckets
from ..sim.calibration import CalibrationError, load_calibration
from ..sim.costs import LaneCosts, MixedCosts


def overlaps(work: dict[str, Any], others: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Each work of ``others`` (one role's, sorted by start) that ran beside ``work``, with the
    share of ``work``'s time it did."""
    start, end = work["start_ms"], work["end_ms"]
    beside = []
    for other in others:
        a, b = max(start, other["start_ms"]), min(end, other["end_ms"])
        if b > a:
            beside.append((other, (b - a) / (end - start)))
    return beside


def overlap_share(work: dict[str, Any], others: Sequence[dict[str, Any]]) -> float:
    """The share of ``work``'s time during which some work of ``others`` ran."""
    return sum(share for _, share in overlaps(work, others))


def modelled_ms(idle_us: float, loaded_us: float, share: float) -> float:
    """The duration of work that runs ``share`` of its time beside the other role, at its idle
    speed alone and its loaded speed beside it."""
    return 1e-3 / ((1 - share) / idle_us + share / loaded_us)


def decode_modelled_ms(costs: LaneCosts, idle_us: float, loaded_us: float,
                       beside: Sequence[tuple[dict[str, Any], float]]) -> float:
    """A decode step's duration beside the pieces ``beside`` (each with its share of the step's
    time): beside each, the share of the whole chunk's slowdown its lane measured for its size,
    as the simulator prices it."""
    rate = (1 - sum(share for _, share in beside)) / idle_us
    for piece, share in beside:
        rate += share / (idle_us + (loaded_us - idle_us) * costs.loaded_share(piece.get("tokens")))
    return 1e-3 / rate


def compare(timeline: dict[str, Any], calibration: dict[str, Any]) -> list[dict[str, Any]]:
    chunk = calibration["settings"].get("chunk")
    lanes = {name: LaneCosts.fit(lane, chunk) for name, lane in calibration["lanes"].items()}
    aliases = calibration.get("aliases", {})
    mixed = MixedCosts.of(calibration)
    budget = timeline.get("param") if timeline["scheduler"] == "chunked" else None
    buckets = token_buckets(budget, calibration["model"]["max_len"]) if budget else []
    works = sorted(timeline["works"], key=lambda w: w["start_ms"])
    by_role = {role: [w for w in works if w["role"] == role] for role in ("latency", "batch")}
    rows = []
    for w in works:
        beside = overlaps(w, by_role["batch" if w["role"] == "latency" else "latency"])
        share = sum(s for _, s in beside)
        costs = lanes[aliases.get(w["lane"], w["lane"])]
        if w["kind"] == "decode":
            idle, loaded = costs.decode_us(w["bucket"], w["context"] + w["bucket"] - w["rows"], w.get("longest"))
            modelled = decode_modelled_ms(costs, idle, loaded, beside)
        elif w["kind"] == "prefill":
            idle, loaded = costs.prefill_us(w["tokens"], w["pairs"], w["layers"])
            modelled = modelled_ms(idle, loaded, share)
        else:
            if mixed is None:
                continue
            tokens = next((t for t in buckets if t >= w["tokens"]), w["tokens"])
            modelled = mixed.us(tokens, w["context"], w["pairs"]) * 1e-3
        measured = w["end_ms"] - w["start_ms"]
        rows.append({"kind": w["kind"], "lane": w["lane"], "share": share, "measured_ms": measured,
                     "modelled_ms": modelled, "ratio": measured / modelled,
                     "bucket": w.get("bucket"), "unevenness": unevenness(w)})
    return rows


def unevenness(work: dict[str, Any]) -> float | None:
    """A decode step's longest row over its mean row (1: rows of one length); None where the
    timeline does not record the longest row (timelines before it did) or there are no rows."""
    if work.get("longest") is None or not work.get("rows") or not work.get("context"):
        return None
    return float(work["longest"] * work["rows"] / work["context"])


UNEVENNESS_CLASSES = ((1.0, 1.5), (1.5, 2.5), (2.5, float("inf")))


def report(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| kind | share beside the other role | works | measured ms (p50) | modelled ms (p50) | ratio p10 | p50 "
             "| p90 |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for kind in ("decode", "prefill", "mixed"):
        for low, high in ((0.0, 0.1), (0.1, 0.9), (0.9, 1.01)):
            chosen = [r for r in rows if r["kind"] == kind and low <= r["share"] < high]
            if not chosen:
                continue
            ratios = sorted(r["ratio"] for r in chosen)
            p10, p50, p90 = (ratios[min(len(ratios) - 1, int(q * len(ratios)))] for q in (0.1, 0.5, 0.9))
            lines.append(f"| {kind} | {low:.0%}-{min(high, 1):.0%} | {len(chosen)} "
                         f"| {statistics.median(r['measured_ms'] for r in chosen):.2f} "
                         f"| {statistics.median(r['modelled_ms'] for r in chosen):.2f} | {p10:.2f} | {p50:.2f} "
                         f"| {p90:.2f} |")
    uneven = [r for r in rows if r["kind"] == "decode" and r["unevenness"] is not None]
    if uneven:
        lines += ["", "| decode bucket | longest row over the mean row | steps | ratio p50 |", "|---:|---|---:|---:|"]
        for bucket in sorted({r["bucket"] for r in uneven}):
            for low, high in UNEVENNESS_CLASSES:
                in_class: list[float] = [r["ratio"] for r in uneven
                                         if r["bucket"] == bucket and low <= r["unevenness"] < high]
                if in_class:
                    lines.append(f"| {bucket} | {low:g}-{high:g} | {len(in_class)} | {statistics.median(in_class):.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m examples.pd.timeline_report", description=__doc__)
    p.add_argument("timelines", nargs="+", help="timeline files of --trace-runs")
    p.add_argument("--calibration", required=True, help="the calibration to hold them against")
    args = p.parse_args(argv)
    try:
        calibration = load_calibration(args.calibration)
    except CalibrationError as error:
        print(error, file=sys.stderr)
        return 2
    for path in args.timelines:
        with open(path) as f:
            timeline = json.load(f)
        rows = compare(timeline, calibration)
        print(f"{path}: {timeline['scheduler']} {timeline['config']} at {timeline['rate']:g} req/s, seed "
              f"{timeline['seed']}\n\n{report(rows)}\n")
    return 0
