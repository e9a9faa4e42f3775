"""python -m benchmarks [--out DIR] [--only SUITES] [--quick]: run the benchmarks on a GPU."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

SUITES = ("memory", "stream", "sm_count", "create", "churn", "isolation", "fidelity", "layouts", "membound", "pd",
          "pd_policy")


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
        return replot(parser, args.replot, args.out)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SUITES))
    if unknown:
        parser.error(f"unknown suites {unknown}; choose from {', '.join(SUITES)}")

    import torch

    if not torch.cuda.is_available():
        print("benchmarks need a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    from . import churn, fidelity, host_costs, isolation, layouts, membound, pd, pd_policy, report
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
        "pd_policy": lambda: pd_policy.run(device, steps=2000 if q else 20000),
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


# What --replot reads: the results.json this command writes (its environment, then each suite's
# results under the suite's name, the table's targets beside them).
EXPECTED = (f"a results.json that python -m benchmarks writes (an 'environment' and the results of at least one "
            f"of the suites {', '.join(SUITES)})")

# Other JSON files of this repository, told apart by keys only they have at their top level.
OTHER_FILES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("sized_split_meets_deadline",), "the results of examples/serving.py (serving.json)"),
    (("per_rank_ms",), "the results of python -m benchmarks.distributed"),
    (("slo", "capacity_rps"), "the results of python -m examples.pd"),
    (("machine", "rows"), "the compatibility matrix of scripts/compat_matrix.sh (matrix.json)"),
    (("create_stream_kernel_destroy",), "the figures of the GPU reliability tests (tests/gpu, reliability.json)"),
    (("fuzz",), "the figures of the GPU reliability tests (tests/gpu, reliability.json)"),
)


def recognise(data: dict[str, Any]) -> str | None:
    """What another file of this repository ``data`` is, in words; None when it is none of them."""
    from torch_green_contexts._sizing._json_input import kind_of

    kind = kind_of(data)  # SizingResult, LatencyProfile, LayoutProfile: as their from_json tells them
    if kind is not None:
        return f"a {kind} (the JSON of torch_green_contexts.sizing's {kind}; its from_json reads it)"
    return next((what for keys, what in OTHER_FILES if all(k in data for k in keys)), None)


def not_results(data: Any) -> str | None:
    """Why ``data`` (a parsed JSON file) is not what --replot reads; None when it is."""
    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}"
    if isinstance(data.get("environment"), dict) and any(suite in data for suite in SUITES):
        return None
    other = recognise(data)
    if other is not None:
        return f"it is {other}"
    if not isinstance(data.get("environment"), dict):
        return "it has no 'environment'" if "environment" not in data else "its 'environment' is no JSON object"
    return f"it has the results of none of the suites {', '.join(SUITES)}"


def replot(parser: argparse.ArgumentParser, path: str, out: str) -> int:
    """--replot: table.md and the plots of the results.json at ``path``, into ``out``. An
    unusable file is a usage error (exit 2, one line) that writes nothing."""
    from . import report

    try:
        with open(path) as f:
            saved = json.load(f)
    except OSError as error:
        parser.error(f"--replot: cannot read {path}: {error.strerror or error}")
    except ValueError as error:  # json.JSONDecodeError, and UnicodeDecodeError of a binary file
        parser.error(f"--replot: {path} is not a JSON file ({error}); it takes {EXPECTED}")
    problem = not_results(saved)
    if problem is not None:
        parser.error(f"--replot: {path} is not {EXPECTED}: {problem}")
    damaged = (KeyError, TypeError, AttributeError, IndexError, ValueError)
    try:
        table = report.markdown(saved)
    except damaged as error:
        parser.error(f"--replot: {path} is a damaged results.json: its table cannot be made "
                     f"({type(error).__name__}: {error})")
    os.makedirs(out, exist_ok=True)
    try:
        written = report.plots(saved, out)
    except damaged as error:
        parser.error(f"--replot: {path} is a damaged results.json: its plots cannot be drawn "
                     f"({type(error).__name__}: {error})")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(table + "\n")
    print("wrote", ", ".join([os.path.join(out, "table.md"), *written]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
