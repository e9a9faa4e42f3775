"""The prefill rate each overloaded run delivered, read from what it measured: the constant rate
(prompt tokens/s) at which a first-come-first-served queue of the run's own trace has the TTFT p99
the run measured. Runs with a TTFT p99 above 1.5 s only (a queue that grows: its p99 is set by the
prefill rate, not by the step that happens to be running). No GPU:

    python benchmarks/results/2026-12-04-h200-pd-sweep/prefill_rate_fit.py today-32-layers \
        --layers 32 --workload today --ttft-slo-ms 1000 --tpot-slo-ms 20 --rates 5,10,15 --seeds 1,2

The arguments after the point are the sweep's, checked against its results file."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

from examples.pd import cli  # noqa: E402
from examples.pd.__main__ import SAME_SETTINGS_EXCEPT  # noqa: E402
from examples.pd.metrics import percentile  # noqa: E402
from examples.pd.workload import Request, make_trace  # noqa: E402


def p99_ttft_ms(trace: list[Request], tokens_per_s: float) -> float:
    free, ttft = 0.0, []
    for request in sorted(trace, key=lambda r: r.arrival):
        free = max(free, request.arrival) + request.prompt / tokens_per_s
        ttft.append(free - request.arrival)
    return percentile(ttft, 99) * 1000


def fitted_rate(trace: list[Request], measured_ms: float) -> float:
    low, high = 1e2, 1e7
    for _ in range(80):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if p99_ttft_ms(trace, mid) > measured_ms else (low, mid)
    return mid


def main(argv: list[str]) -> int:
    point, args = argv[0], argv[1:]
    folder = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(folder, f"{point}-results.json")) as f:
        results = json.load(f)
    s = cli.parse(args)
    mine = {k: v for k, v in cli.settings_dict(s).items() if k not in SAME_SETTINGS_EXCEPT}
    theirs = {k: v for k, v in results["settings"].items() if k not in SAME_SETTINGS_EXCEPT}
    if mine != theirs:
        raise SystemExit(f"settings differ from {point}-results.json in "
                         f"{sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))}")
    print("| scheduler | configuration | seed | rate (req/s) | requests | prompt tokens/s arriving "
          "| TTFT p99 (ms) | prefill delivered (tokens/s) |\n|---|---|---:|---:|---:|---:|---:|---:|")
    for run in results["runs"]:
        summary = run["summary"]
        if summary is None or (summary["p99_ttft_ms"] or 0) < 1500:
            continue
        trace = make_trace(s.requests, run["rate"], seed=run["seed"], prompts=s.prompts, outputs=s.outputs)
        trace = [r for r in trace if r.arrival <= s.arrival_s] or trace[:1]
        arriving = sum(r.prompt for r in trace) / max(r.arrival for r in trace)
        print(f"| {run['scheduler']} | {run['config']} | {run['seed']} | {run['rate']:g} | {len(trace)} "
              f"| {arriving:,.0f} | {summary['p99_ttft_ms']:,.0f} | {fitted_rate(trace, summary['p99_ttft_ms']):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
