"""``python -m examples.pd.simulate``: a sweep of ``python -m examples.pd`` on the simulated GPU
(no GPU needed). It takes the sweep's options and a calibration a GPU sweep measured
(``--calibration``, with the layout profile the policies read beside it or from
``--layout-profile``), runs the engine's real schedulers and policies against the calibration's
costs, and writes the same results file, plots and tables, marked simulated. Its figures plan
GPU sweeps; they never stand in for a GPU measurement."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from torch_green_contexts import sizing

from ..sim.bench import SimBench
from ..sim.calibration import CalibrationError, check_matches, load_calibration
from . import cli
from .estimates import capacity, rates_from
from .families import run_families
from .metrics import slo_from_json, slo_json
from .sweep import Progress, finish, load_resume
from .traces import lengths_of
from .workload import describe


def layout_profile_for(s: cli.Settings) -> sizing.LayoutProfile | None:
    """--layout-profile, or the layout-profile.json beside the calibration (None: neither)."""
    path = s.layout_profile
    if path is None and s.calibration is not None:
        beside = os.path.join(os.path.dirname(os.path.abspath(s.calibration)), "layout-profile.json")
        path = beside if os.path.isfile(beside) else None
    if path is None:
        return None
    with open(path) as f:
        return sizing.LayoutProfile.from_json(f.read())


def main(argv: list[str] | None = None) -> int:
    s = cli.parse(argv, __doc__, prog="python -m examples.pd.simulate")
    if s.calibration is None:
        print("python -m examples.pd.simulate needs --calibration: the calibration.json a GPU sweep or "
              "python -m examples.pd --calibrate-only wrote", file=sys.stderr)
        return 2
    began, say = time.perf_counter(), Progress(s.quiet)
    try:
        calibration = load_calibration(s.calibration)
        check_matches(calibration, layers=s.layers, device=None, path=s.calibration)
        earlier = load_resume(s)
        if earlier and not earlier.get("simulated"):
            raise CalibrationError(f"--resume {s.resume} holds GPU runs: a simulated sweep resumes only a simulated one")
        s = cli.with_earlier_shares(s, earlier.get("settings", {}))
        bench = SimBench(s, calibration, layout_profile_for(s))
    except (CalibrationError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    bench.say = say
    device = calibration["device"]
    if earlier:
        bench.slo = slo_from_json(earlier["slo"])
    capacity_rps = capacity(lengths_of(s, s.seeds[0]), bench.costs)
    coarse = sorted(s.rates) if s.rates else earlier.get("coarse_rates") or rates_from(capacity_rps, s.load_fractions)
    bench.coarse = list(coarse)
    os.makedirs(s.out, exist_ok=True)
    results: dict[str, Any] = {
        "settings": cli.settings_dict(s), "workload": s.workload, "seeds": list(s.seeds),
        "simulated": {"calibration": s.calibration, "measured_on": device.get("name"),
                      "note": "simulated from a GPU calibration; not a GPU measurement"},
        "device": device, "model": calibration["model"], "costs": calibration["costs"],
        "host_sleep_us": calibration.get("host_sleep_us"),
        "slo": {**slo_json(bench.slo), "ttft_from": "as the sweep's", "tpot_from": "as the sweep's"},
        "capacity_rps": capacity_rps, "coarse_rates": coarse,
        "traces": {str(seed): describe(lengths_of(s, seed)) for seed in s.seeds}, "runs": [],
    }
    say(f"simulated sweep, calibration {s.calibration} ({device.get('name')}, {calibration['model']['layers']} "
        f"layers, {bench.slots} slots); SLOs: {bench.slo.describe()}; coarse rates "
        f"{', '.join(f'{r:.3g}' for r in coarse)}")
    out = os.path.join(s.out, "results.json")
    try:
        run_families(bench, s, results, earlier, coarse, out, began, say)
    except CalibrationError as error:
        print(error, file=sys.stderr)
        return 2
    finish(results, s, began)
    return 0
