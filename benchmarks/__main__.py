"""python -m benchmarks [--out DIR] [--only SUITES] [--quick]: run the benchmarks on a GPU."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

SUITES = ("memory", "stream", "sm_count", "create", "churn", "isolation", "fidelity", "layouts", "membound", "pd")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--out", default="benchmark-results", help="directory for the results")
    parser.add_argument("--only", default=",".join(SUITES),
                        help=f"comma-separated suites to run (default: all of {', '.join(SUITES)})")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for a smoke run")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--replot", metavar="RESULTS_JSON",
                        help="only redraw the table and plots of a saved results.json into --out")
    args = parser.parse_args(argv)
    if args.replot:
        from . import report

        with open(args.replot) as f:
            saved = json.load(f)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "table.md"), "w") as f:
            f.write(report.markdown(saved) + "\n")
        print("wrote", ", ".join([os.path.join(args.out, "table.md"), *report.plots(saved, args.out)]))
        return 0
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SUITES))
    if unknown:
        parser.error(f"unknown suites {unknown}; choose from {', '.join(SUITES)}")

    import torch

    if not torch.cuda.is_available():
        print("benchmarks need a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    from . import churn, fidelity, host_costs, isolation, layouts, membound, pd, report
    from .environment import Builtin, describe

    os.makedirs(args.out, exist_ok=True)
    device = args.device
    torch.cuda.set_device(device)
    torch.cuda.init()
    torch.empty(1, device=device)  # the primary context, before anything is timed
    builtin = Builtin()
    builtin.check(device)
    results: dict[str, Any] = {"environment": describe(device)}
    results["environment"]["torch_builtin_green_contexts"] = (
        "available" if builtin.available else f"unavailable ({builtin.reason})")
    q = args.quick
    runs: dict[str, Callable[[], Any]] = {
        "memory": lambda: host_costs.memory_cost(device, builtin, contexts=4 if q else 16),
        "stream": lambda: host_costs.stream_cost(device, builtin, rounds=200 if q else 2000),
        "sm_count": lambda: host_costs.sm_count_cost(device, builtin, rounds=200 if q else 2000),
        "create": lambda: host_costs.create_cost(device, builtin, rounds=8 if q else 300,
                                                 split_sms=(16, results["environment"]["sm_count"] - 16)),
        "churn": lambda: churn.run(device, builtin, cycles=20 if q else 200),
        "isolation": lambda: isolation.run(device, builtin, rounds=2 if q else 10, samples=30 if q else 100),
        "fidelity": lambda: fidelity.run(device, rounds=2 if q else 5),
        "layouts": lambda: layouts.run(device, switches=2000 if q else 20000),
        "membound": lambda: membound.run(device, rounds=2 if q else 4, samples=10 if q else 40),
        "pd": lambda: pd.run(device, rounds=2 if q else 3, samples=5 if q else 20, policy_steps=2000 if q else 20000,
                             switch_steps=50 if q else 200, progress=not args.quiet),
    }

    def save() -> None:
        results["targets"] = report.targets(results)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        with open(os.path.join(args.out, "table.md"), "w") as f:
            f.write(report.markdown(results) + "\n")

    for suite in SUITES:
        if suite not in chosen:
            continue
        began = time.perf_counter()
        if not args.quiet:
            print(f"[benchmarks] {suite} ...", flush=True)
        results[suite] = runs[suite]()
        if not args.quiet:
            print(f"[benchmarks] {suite} done in {time.perf_counter() - began:.1f} s", flush=True)
        save()  # after each suite, so a later failure keeps what was measured
    written = report.plots(results, args.out)
    print(report.markdown(results))
    print("wrote", ", ".join([os.path.join(args.out, "results.json"), os.path.join(args.out, "table.md"),
                              *written]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
