"""``python -m examples.pd.validate GPU-RESULTS --calibration C``: the simulator against a GPU
sweep. Every run the GPU sweep measured is simulated with the same settings, configuration,
seed and rate (its layout profile for the policies), and the two are compared: per run the SLO
attainment and the P99 decode step, and per (scheduler, configuration, metric, seed) the goodput
read from the same rates. Writes ``validation.json`` and ``validation.md`` to ``--out``, and a
line per cell with the verdict against the targets (goodput within 15% or within the GPU's two
seeds' spread; attainment and P99 step within 15%; the best green-context scheduler, chunked
prefill and plain streams in the GPU's order per metric). No GPU needed."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from torch_green_contexts import sizing

from ..sim.bench import SimBench
from ..sim.calibration import CalibrationError, check_matches, load_calibration
from . import cli
from .metrics import METRICS, metric_goodput
from .search import Config
from .validation_table import TOLERANCE, cells, markdown, order_checks, run_rows, summary


def simulate_runs(gpu: dict[str, Any], bench: SimBench, say: Any) -> list[dict[str, Any]]:
    """Every measured run of ``gpu``, simulated: (GPU run, simulated summary) records."""
    out = []
    runs = [r for r in gpu["runs"] if not r["skipped"] and r["scheduler"] != "policy"]
    for i, r in enumerate(runs):
        param = tuple(r["param"]) if isinstance(r["param"], list) else r["param"]
        config = Config(r["scheduler"], r["label"], param, r["order"])
        out.append({**r, "simulated": bench.run(config, r["seed"], r["rate"])})
        if (i + 1) % 20 == 0:
            say(f"{i + 1}/{len(runs)} runs simulated")
    return out


def validate(gpu_path: str, calibration_path: str, profile_path: str | None, say: Any) -> dict[str, Any]:
    with open(gpu_path) as f:
        gpu = json.load(f)
    if not isinstance(gpu, dict) or "runs" not in gpu or "settings" not in gpu:
        raise CalibrationError(f"{gpu_path} is not a sweep's results file")
    if gpu.get("simulated"):
        raise CalibrationError(f"{gpu_path} holds simulated runs: validate against a GPU sweep")
    calibration = load_calibration(calibration_path)
    s = cli.settings_from(gpu["settings"], calibration=calibration_path, layout_profile=profile_path, resume=None,
                          time_budget_s=None, quiet=True)
    check_matches(calibration, layers=s.layers, device=gpu["device"]["name"], path=calibration_path)
    if calibration["model"]["slots"] != gpu["model"]["slots"]:
        raise CalibrationError(f"the GPU sweep's engine had {gpu['model']['slots']} KV slots, the calibration's "
                               f"{calibration['model']['slots']}: calibrate with --max-slots {gpu['model']['slots']}")
    profile = None
    if profile_path:
        with open(profile_path) as f:
            profile = sizing.LayoutProfile.from_json(f.read())
    bench = SimBench(s, calibration, profile)
    bench.coarse = [float(r) for r in gpu["coarse_rates"]]  # the planner of the modes' anchors simulates these
    began = time.perf_counter()
    records = simulate_runs(gpu, bench, say)
    seconds = time.perf_counter() - began
    table = cells(records, list(METRICS), metric_goodput)
    return {"gpu_results": gpu_path, "calibration": calibration_path, "layout_profile": profile_path,
            "device": gpu["device"], "workload": gpu["workload"], "slo": gpu["slo"], "tolerance": TOLERANCE,
            "simulated_runs": len(records), "simulation_s": seconds, "runs": run_rows(records), "cells": table,
            "order": order_checks(table), "summary": summary(table, run_rows(records))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m examples.pd.validate", description=__doc__)
    p.add_argument("results", help="a GPU sweep's results file")
    p.add_argument("--calibration", required=True, help="a calibration measured on the same GPU model")
    p.add_argument("--layout-profile", help="the layout profile the GPU sweep's policies read (default: the "
                   "results file's name with layout-profile.json, if present)")
    p.add_argument("--out", default="pd-validation", help="directory for validation.json and validation.md "
                   "(default pd-validation)")
    p.add_argument("--name", default="", help="a prefix of the written files' names (default none)")
    args = p.parse_args(argv)
    profile = args.layout_profile
    if profile is None and args.results.endswith("results.json"):
        beside = args.results[:-len("results.json")] + "layout-profile.json"
        profile = beside if os.path.isfile(beside) else None
    try:
        result = validate(args.results, args.calibration, profile,
                          lambda text: print(text, file=sys.stderr, flush=True))
    except (CalibrationError, ValueError, OSError) as error:
        print(error, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, args.name)
    with open(base + "validation.json", "w") as f:
        json.dump(result, f, indent=1)
    text = markdown(result)
    with open(base + "validation.md", "w") as f:
        f.write(text)
    print(text)
    return 0
