"""The simulator's validation figures: per (scheduler, configuration, metric, seed) cell the GPU's
goodput and the simulated one read from the same rates, per run the SLO attainment and the P99
decode step, the order of the best green-context scheduler, chunked prefill and plain streams,
and the summary against the targets. Plain Python."""

from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence

TOLERANCE = 0.15  # goodput and P99 step: relative; attainment: its share of requests, absolute
GREEN = ("static", "static-overlap", "pd", "pd-overlap")
NAMES = {"chunked": "chunked prefill", "streams": "plain streams", "static": "static split",
         "static-overlap": "static overlapped", "pd": "policy", "pd-overlap": "policy, overlapped"}


def cells(records: Sequence[dict[str, Any]], metrics: Sequence[str],
          goodput: Callable[..., Any]) -> list[dict[str, Any]]:
    """One cell per (scheduler, configuration, metric, seed) with the GPU's and the simulated
    goodput over the GPU's measured rates, and the GPU's spread over its seeds."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["scheduler"], r["config"], r["seed"]), []).append(r)
    out = []
    for (scheduler, config, seed), runs in sorted(groups.items()):
        for metric in metrics:
            gpu = goodput([(r["rate"], r["summary"]) for r in runs], metric)
            sim = goodput([(r["rate"], r["simulated"]) for r in runs], metric)
            out.append({"scheduler": scheduler, "config": config, "seed": seed, "metric": metric, "rates": len(runs),
                        "gpu": gpu.rate, "gpu_how": gpu.how, "sim": sim.rate, "sim_how": sim.how})
    by_config: dict[tuple[str, str, str], list[float]] = {}
    for c in out:
        by_config.setdefault((c["scheduler"], c["config"], c["metric"]), []).append(c["gpu"])
    for c in out:
        values = by_config[(c["scheduler"], c["config"], c["metric"])]
        c["spread"] = max(values) - min(values) if len(values) > 1 else None
        c["ratio"] = c["sim"] / c["gpu"] if c["gpu"] > 0 else None
        within = (c["gpu"] == c["sim"] == 0) or (c["ratio"] is not None and abs(c["ratio"] - 1) <= TOLERANCE)
        c["within"] = within or (c["spread"] is not None and abs(c["sim"] - c["gpu"]) <= c["spread"])
    return out


def run_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per run: attainment and P99 decode step, GPU and simulated, and whether each is within
    the tolerance."""
    rows = []
    for r in records:
        g, s = r["summary"], r["simulated"]
        gpu_step, sim_step = g["step_ms"]["p99"], s["step_ms"]["p99"]
        step_ratio = sim_step / gpu_step if gpu_step and sim_step is not None else None
        rows.append({"scheduler": r["scheduler"], "config": r["config"], "seed": r["seed"], "rate": r["rate"],
                     "attainment": [g["attainment"], s["attainment"]], "p99_margin": [g["p99_margin"], s["p99_margin"]],
                     "step_p99_ms": [gpu_step, sim_step], "itl_p99_ms": [g["itl_ms"]["p99"], s["itl_ms"]["p99"]],
                     "ttft_p99_ms": [g["ttft_ms"]["p99"], s["ttft_ms"]["p99"]],
                     "attainment_within": abs(s["attainment"] - g["attainment"]) <= TOLERANCE,
                     "step_within": step_ratio is not None and abs(step_ratio - 1) <= TOLERANCE})
    return rows


def _best(table: Sequence[dict[str, Any]], scheduler: str, metric: str, side: str) -> tuple[str, float] | None:
    """The configuration of ``scheduler`` with the best mean GPU goodput under ``metric`` (over
    the seeds it ran), and its mean ``side`` ("gpu" or "sim") goodput."""
    configs: dict[str, list[dict[str, Any]]] = {}
    for c in table:
        if c["scheduler"] == scheduler and c["metric"] == metric:
            configs.setdefault(c["config"], []).append(c)
    if not configs:
        return None
    seeds = max(len(v) for v in configs.values())
    full = {k: v for k, v in configs.items() if len(v) == seeds}
    config = max(full, key=lambda k: statistics.fmean(c["gpu"] for c in full[k]))
    return config, statistics.fmean(c[side] for c in full[config])


def order_checks(table: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per metric: the best green-context scheduler (by the GPU), chunked prefill and plain
    streams, ordered by the GPU's goodput and by the simulated goodput of the same
    configurations."""
    out = {}
    for metric in sorted({c["metric"] for c in table}):
        entries = {}
        greens = [(g, b) for g in GREEN if (b := _best(table, g, metric, "gpu")) is not None]
        if greens:
            green, (config, _) = max(greens, key=lambda gb: gb[1][1])
            entries["best green-context: " + NAMES[green]] = (green, config)
        for name in ("chunked", "streams"):
            if (b := _best(table, name, metric, "gpu")) is not None:
                entries[NAMES[name]] = (name, b[0])
        figures = {label: {side: statistics.fmean(c[side] for c in table if c["scheduler"] == s and c["config"] == k
                                                  and c["metric"] == metric) for side in ("gpu", "sim")}
                   for label, (s, k) in entries.items()}
        gpu_order = sorted(figures, key=lambda k: -figures[k]["gpu"])
        sim_order = sorted(figures, key=lambda k: -figures[k]["sim"])
        out[metric] = {"figures": figures, "configs": {k: v[1] for k, v in entries.items()}, "gpu_order": gpu_order,
                       "sim_order": sim_order, "same": gpu_order == sim_order}
    return out


def summary(table: Sequence[dict[str, Any]], runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    within = sum(1 for c in table if c["within"])
    return {"cells": len(table), "cells_within": within, "cells_within_share": within / len(table) if table else None,
            "runs": len(runs), "attainment_within_share": sum(r["attainment_within"] for r in runs) / len(runs)
            if runs else None, "step_p99_within_share": sum(r["step_within"] for r in runs) / len(runs) if runs else None}


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def markdown(result: dict[str, Any]) -> str:
    """The validation as Markdown: the summary, the order per metric, the goodput cells."""
    s = result["summary"]
    lines = [f"Simulated against {result['gpu_results']} ({result['device']['name']}, {result['workload']}), "
             f"calibration {result['calibration']}: {result['simulated_runs']} runs simulated in "
             f"{result['simulation_s']:.0f} s.", "",
             f"- goodput cells within {TOLERANCE:.0%} or the GPU's seed spread: {s['cells_within']}/{s['cells']} "
             f"({s['cells_within_share']:.0%}; target 80%)",
             f"- runs with attainment within {TOLERANCE * 100:.0f} points: {s['attainment_within_share']:.0%}; with the "
             f"P99 decode step within {TOLERANCE:.0%}: {s['step_p99_within_share']:.0%}"]
    for metric, o in result["order"].items():
        verdict = "same order" if o["same"] else "different order"
        figures = ", ".join(f"{k} {o['figures'][k]['gpu']:.2f}/{o['figures'][k]['sim']:.2f}" for k in o["gpu_order"])
        lines.append(f"- {metric}: {verdict} (GPU/simulated goodput, req/s: {figures})")
    lines += ["", "| scheduler | configuration | metric | seed | rates | GPU goodput | simulated | ratio | GPU seed spread "
              "| within |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in result["cells"]:
        lines.append(f"| {NAMES.get(c['scheduler'], c['scheduler'])} | {c['config']} | {c['metric']} | {c['seed']} "
                     f"| {c['rates']} | {_g(c['gpu'])} | {_g(c['sim'])} | {_g(c['ratio'])} | {_g(c['spread'])} "
                     f"| {'yes' if c['within'] else 'no'} |")
    return "\n".join(lines) + "\n"
