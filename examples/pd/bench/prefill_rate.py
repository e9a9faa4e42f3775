"""The prefill rate each overloaded run of a sweep delivered, read from what the run measured:
the constant rate (prompt tokens/s) at which a first-come-first-served queue of the run's own
trace has the run's TTFT p99. Only runs whose TTFT p99 exceeds ``--above-ms`` (a queue that
grows, whose p99 the prefill rate sets rather than the step that happens to be running). Under
shortest-prompt-first admission the figure is approximate. Plain Python, no GPU:

    python -m examples.pd.prefill_rate RESULTS.json [--above-ms 1500]

The trace is rebuilt from the results file's settings (workload, seeds, lengths, arrivals)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from . import cli
from torch_green_contexts.sizing import percentile

from ..engine.request import Request
from .traces import trace_for


def p99_ttft_ms(trace: Sequence[Request], tokens_per_s: float) -> float:
    """TTFT p99 of ``trace`` served first come first served by one prefill of constant rate."""
    free, ttft = 0.0, []
    for request in sorted(trace, key=lambda r: r.arrival):
        free = max(free, request.arrival) + request.prompt / tokens_per_s
        ttft.append(free - request.arrival)
    return percentile(ttft, 99) * 1000


def fitted_rate(trace: Sequence[Request], measured_ms: float) -> float:
    """The prefill rate at which :func:`p99_ttft_ms` equals ``measured_ms`` (bisection on a log
    scale between 100 and 10^8 tokens/s)."""
    if not measured_ms > 0:
        raise ValueError(f"a measured TTFT p99 must be positive, got {measured_ms}")
    low, high = 1e2, 1e8
    for _ in range(100):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if p99_ttft_ms(trace, mid) > measured_ms else (low, mid)
    return float((low * high) ** 0.5)


TRACE_SETTINGS = ("workload", "requests", "arrival_s", "min_prompt", "max_prompt", "prompt_median", "prompt_sigma",
                  "min_output", "max_output", "output_median", "output_sigma")


def settings_of(results: dict[str, Any]) -> cli.Settings:
    """The settings that shape a sweep's traces, from its results file."""
    saved = results["settings"]
    argv = []
    for key in TRACE_SETTINGS:
        if saved.get(key) is not None:
            argv += [f"--{key.replace('_', '-')}", str(saved[key])]
    settings = cli.parse(argv)
    rebuilt = cli.settings_dict(settings)
    differ = [k for k in TRACE_SETTINGS if k in saved and rebuilt.get(k) != saved[k]]
    if differ:
        raise ValueError(f"its {', '.join(differ)} cannot be given again: its traces cannot be rebuilt")
    return settings


def table(results: dict[str, Any], above_ms: float) -> str:
    settings = settings_of(results)
    lines = ["| scheduler | configuration | seed | rate (req/s) | requests | prompt tokens/s arriving "
             "| TTFT p99 (ms) | prefill delivered (tokens/s) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for run in results["runs"]:
        summary = run["summary"]
        if summary is None or (summary["p99_ttft_ms"] or 0) <= above_ms:
            continue
        trace = trace_for(settings, run["rate"], run["seed"])
        arriving = sum(r.prompt for r in trace) / max(max(r.arrival for r in trace), 1e-9)
        lines.append(f"| {run['scheduler']} | {run['config']} | {run['seed']} | {run['rate']:g} | {len(trace)} "
                     f"| {arriving:,.0f} | {summary['p99_ttft_ms']:,.0f} "
                     f"| {fitted_rate(trace, summary['p99_ttft_ms']):,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.pd.prefill_rate", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a sweep's results file")
    parser.add_argument("--above-ms", type=float, default=1500.0,
                        help="only runs whose TTFT p99 exceeds this (default 1500)")
    args = parser.parse_args(argv)
    try:
        with open(args.results) as f:
            results = json.load(f)
        print(table(results, args.above_ms))
    except (OSError, ValueError, KeyError) as error:
        parser.error(f"{args.results}: {error!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
