"""GPU device timelines of the 2026-12-06 H200 release check against the simulator, run after run.

Run from the repository root (CPU only, about a minute):

    python3 benchmarks/results/2026-12-06-h200-release-check/trace-vs-sim/compare.py

It reruns ``python -m examples.pd.simulate`` with the settings of the GPU trace run (same
workload, seed, rate, schedulers, calibration and layout profile), keeping each simulated run's
device timeline in memory (the simulator records the same works as ``--trace-runs`` does on the
GPU), writes the simulated results to ``sim/`` beside this script, and writes ``comparison.md``:
per run present on both sides, the decode step's device time (alone and beside prefill), chunked
prefill's mixed iterations by token bucket and decode rows, the prefill pieces, the request
figures (TTFT, TPOT, ITL, attainment), each GPU work against the calibration's cost of that
very work, and the SM clock and power of the nvidia-smi log during each GPU run.

``--reuse`` skips the simulation when ``sim/results.json`` and ``sim/timeline-stats.json``
exist (the figures of the simulated timelines are read from the latter).
"""

from __future__ import annotations

import argparse
import bisect
import csv
import datetime
import json
import math
import os
import statistics
import sys
import time
from typing import Any, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
CHECK = os.path.dirname(HERE)
GPU_DIR = os.path.join(CHECK, "trace")
SMI = os.path.join(CHECK, "trace-smi.csv")
SIM_DIR = os.path.join(HERE, "sim")
CALIBRATION = "benchmarks/results/2026-12-06-h200-calibration/today-32-layers-calibration.json"
LAYOUT_PROFILE = "benchmarks/results/2026-12-04-h200-pd-sweep/today-32-layers-layout-profile.json"
# The GPU call's arguments (trace.log), minus --trace-runs (the simulated timelines are kept here
# in memory) and --out.
ARGS = ["--layers", "32", "--workload", "today", "--ttft-slo-ms", "1000", "--tpot-slo-ms", "20", "--rates", "10",
        "--seeds", "1", "--schedulers", "chunked,streams,static,pd", "--budgets", "256", "--admission", "fcfs",
        "--min-rates", "1", "--max-rates", "1", "--static-candidates", "1", "--max-slots", "82",
        "--calibration", CALIBRATION, "--layout-profile", LAYOUT_PROFILE]
MAX_SM_MHZ = 1980
TPOT_MS = 20.0

sys.path.insert(0, ROOT)


# ---------------------------------------------------------------- reading timelines

def pct(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (nearest rank on the sorted values, linear between), or None."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def overlap_share(work: dict[str, Any], starts: list[float], others: list[dict[str, Any]]) -> float:
    """The share of ``work``'s device time during which some work of ``others`` (sorted by
    start, ``starts`` their starts) ran."""
    start, end = work["start_ms"], work["end_ms"]
    if end <= start:
        return 0.0
    covered, cursor = 0.0, start
    i = max(0, bisect.bisect_left(starts, start) - 8)  # works of one role do not overlap; a few back suffice
    while i < len(others) and others[i]["start_ms"] < end:
        o = others[i]
        i += 1
        if o["end_ms"] <= cursor:
            continue
        a, b = max(cursor, o["start_ms"]), min(end, o["end_ms"])
        if b > a:
            covered += b - a
            cursor = b
    return covered / (end - start)


def annotate(works: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each work with its duration (``ms``) and the share of it the other role ran beside it."""
    works = sorted(works, key=lambda w: w["start_ms"])
    by_role = {r: [w for w in works if w["role"] == r] for r in ("latency", "batch")}
    starts = {r: [w["start_ms"] for w in ws] for r, ws in by_role.items()}
    out = []
    for w in works:
        other = "batch" if w["role"] == "latency" else "latency"
        out.append({**w, "ms": w["end_ms"] - w["start_ms"],
                    "share": overlap_share(w, starts[other], by_role[other])})
    return out


def rows_band(rows: int) -> str:
    return "1-31" if rows < 32 else ("32-63" if rows < 64 else "64-82")


def timeline_stats(works: list[dict[str, Any]], budget: int | None, calibration: dict[str, Any]) -> dict[str, Any]:
    """The figures compared: decode steps (all, alone, beside prefill), prefill pieces, mixed
    iterations by token bucket and decode rows, each work against the calibration's model."""
    from examples.pd.bench.timeline_report import compare as model_compare
    from examples.pd.engine.mixed import token_buckets

    ws = annotate(works)
    modelled = model_compare({"scheduler": "chunked" if budget else "x", "param": budget, "works": works},
                             calibration)
    # model_compare sorts by start as annotate does; pair them up in that order
    ws_sorted = sorted(works, key=lambda w: w["start_ms"])
    ratio_of = {id(w): m for w, m in zip(ws_sorted, modelled)}
    for w, orig in zip(ws, ws_sorted):
        m = ratio_of[id(orig)]
        w["model_ms"], w["ratio"] = m["modelled_ms"], m["ratio"]
    buckets = token_buckets(budget, calibration["model"]["max_len"]) if budget else []

    def spread(sel: list[dict[str, Any]]) -> dict[str, Any]:
        d = [w["ms"] for w in sel]
        return {"n": len(sel), "p50": pct(d, 50), "p90": pct(d, 90), "p99": pct(d, 99),
                "mean_rows": statistics.fmean(w.get("rows", 0) for w in sel) if sel else None,
                "ratio_p50": pct([w["ratio"] for w in sel], 50), "ratio_p90": pct([w["ratio"] for w in sel], 90),
                "model_p50": pct([w["model_ms"] for w in sel], 50)}

    dec = [w for w in ws if w["kind"] == "decode"]
    pre = [w for w in ws if w["kind"] == "prefill"]
    mix = [w for w in ws if w["kind"] == "mixed"]
    busy_end = max((w["end_ms"] for w in ws), default=0.0)
    out: dict[str, Any] = {
        "decode": spread(dec),
        "decode_alone": spread([w for w in dec if w["share"] < 0.1]),
        "decode_beside": spread([w for w in dec if w["share"] >= 0.1]),
        "decode_beside_share": (sum(1 for w in dec if w["share"] >= 0.1) / len(dec)) if dec else None,
        "prefill": spread(pre),
        "prefill_alone": spread([w for w in pre if w["share"] < 0.1]),
        "prefill_beside": spread([w for w in pre if w["share"] >= 0.1]),
        "prefill_ms_per_layer_p50": pct([w["ms"] / max(1, w["layers"]) for w in pre], 50),
        "prefill_tokens_mean": statistics.fmean(w["tokens"] for w in pre) if pre else None,
        "mixed": spread(mix),
        "device_busy_s": busy_end / 1e3,
        "decode_by_rows": {band: spread([w for w in dec if rows_band(w["rows"]) == band])
                           for band in ("1-31", "32-63", "64-82")},
        "decode_beside_by_rows": {band: spread([w for w in dec if w["share"] >= 0.1 and rows_band(w["rows"]) == band])
                                  for band in ("1-31", "32-63", "64-82")},
    }
    if mix:
        table: dict[str, Any] = {}
        for w in mix:
            tok = next((t for t in buckets if t >= w["tokens"]), w["tokens"])
            table.setdefault(f"{tok}|{rows_band(w['rows'])}", []).append(w)
        out["mixed_by_bucket"] = {k: spread(v) for k, v in sorted(table.items(), key=lambda kv: (int(kv[0].split('|')[0]), kv[0]))}
    # decode steps against the model by graph bucket, alone and beside prefill
    out["decode_by_bucket"] = {}
    for b in sorted({w["bucket"] for w in dec}):
        for part, sel in (("alone", [w for w in dec if w["bucket"] == b and w["share"] < 0.1]),
                          ("beside", [w for w in dec if w["bucket"] == b and w["share"] >= 0.1])):
            if sel:
                out["decode_by_bucket"][f"{b}|{part}"] = {
                    **spread(sel), "context_per_row_p50": pct([w["context"] / max(1, w["rows"]) for w in sel], 50)}
    if mix:  # mixed iterations against the model by the prompt chunk's attention beyond a chunk from a slot's start
        def depth(w: dict[str, Any]) -> str:
            tok = next((t for t in buckets if t >= w["tokens"]), w["tokens"])
            extra = w["pairs"] - tok * (tok + 1) // 2
            return "<0.1M" if extra < 1e5 else ("0.1-0.4M" if extra < 4e5 else ("0.4-0.8M" if extra < 8e5 else ">=0.8M"))
        out["mixed_by_depth"] = {d: spread([w for w in mix if depth(w) == d])
                                 for d in ("<0.1M", "0.1-0.4M", "0.4-0.8M", ">=0.8M")}
    # the latency role's works (decode steps, mixed iterations): start (s) and ratio to the model, for the clock log
    out["latency_ratios"] = [(round(w["start_ms"] / 1e3, 3), round(w["ratio"], 4), w["share"] >= 0.1,
                              w["bucket"] if w["kind"] == "decode" else -1)
                             for w in ws if w["kind"] in ("decode", "mixed")]
    return out


# ---------------------------------------------------------------- the simulation

def simulate(calibration: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Rerun the simulated sweep with the GPU call's settings; its results and, per run, the
    figures of its device timeline."""
    from examples.pd.bench import simulate as sim_cli
    from examples.pd.sim.bench import SimBench

    recorded: dict[str, Any] = {}

    class TracingSimBench(SimBench):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.record_timelines = True

        def run(self, config: Any, seed: int, rate: float, progress: Any = None) -> dict[str, Any]:
            summary = super().run(config, seed, rate, progress)
            assert self.last_device is not None
            budget = config.param if config.scheduler == "chunked" else None
            recorded[run_key(config.scheduler, config.name, seed, rate)] = timeline_stats(
                self.last_device.timeline(), budget, calibration)
            return summary

    os.makedirs(SIM_DIR, exist_ok=True)
    saved = sim_cli.SimBench
    sim_cli.SimBench = TracingSimBench  # type: ignore[misc]
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        began = time.perf_counter()
        rc = sim_cli.main(ARGS + ["--out", os.path.relpath(SIM_DIR, ROOT), "--quiet"])
        print(f"simulated in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    finally:
        sim_cli.SimBench = saved  # type: ignore[misc]
        os.chdir(cwd)
    if rc:
        raise SystemExit(f"the simulation failed ({rc})")
    with open(os.path.join(SIM_DIR, "results.json")) as f:
        results = json.load(f)
    # only the runs the sweep recorded (the planner's runs of other splits are left out)
    keep = {run_key(r["scheduler"], r["config"], r["seed"], r["rate"]) for r in results["runs"] if r.get("summary")}
    stats = {k: v for k, v in recorded.items() if k in keep}
    with open(os.path.join(SIM_DIR, "timeline-stats.json"), "w") as f:
        json.dump({k: {kk: vv for kk, vv in v.items() if kk != "latency_ratios"} for k, v in stats.items()}, f, indent=1)
    for name in os.listdir(SIM_DIR):  # plots are not needed here
        if name.endswith(".png"):
            os.remove(os.path.join(SIM_DIR, name))
    return results, stats


def run_key(scheduler: str, config: str, seed: int, rate: float) -> str:
    return f"{scheduler} {config}, seed {seed} @ {rate:g}"


# ---------------------------------------------------------------- the clock log

def read_smi() -> list[tuple[float, int, float, int, int]]:
    """(seconds since the log began, SM MHz, power W, temperature C, utilization %)."""
    rows = list(csv.reader(open(SMI)))[1:]
    out, t0 = [], None
    for r in rows:
        t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
        t0 = t0 or t
        util = r[5].strip().rstrip("%").strip()
        out.append(((t - t0).total_seconds(), int(r[1].split()[0]), float(r[3].split()[0]), int(r[4]),
                    int(util) if util.isdigit() else -1))
    return out


def run_windows(smi: list[tuple[float, int, float, int, int]], runs: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Each GPU run's window in the clock log. Every run ends with a drain tail (a few decode
    steps, util ~98% at ~400 W) that ends where the next run's warm-up or the idle GPU begins:
    a run ends at the first such tail end within 4 s after (previous end + its duration), else
    at previous end + duration (a run cut off at its cap has no tail); the first run ends at
    the first tail end."""
    kind = ["H" if p >= 450 else ("L" if u > 50 else "I") for _, _, p, _, u in smi]
    tail_ends = [smi[i][0] for i in range(1, len(smi)) if kind[i - 1] == "L" and kind[i] != "L"]
    windows, prev_end = [], None
    for r in runs:
        d = r["summary"]["duration_s"]
        if prev_end is None:
            end = next(t for t in tail_ends if t >= d)
        else:
            want = prev_end + d
            near = [t for t in tail_ends if want - 1.0 <= t <= want + 4.0]
            end = near[0] if near else want
        windows.append((end - d, end))
        prev_end = end
    return windows


def clock_stats(smi: list[tuple[float, int, float, int, int]], window: tuple[float, float]) -> dict[str, Any]:
    sel = [s for s in smi if window[0] <= s[0] <= window[1]]
    clocks = [s[1] for s in sel]
    power = [s[2] for s in sel]
    return {"samples": len(sel), "sm_mean": statistics.fmean(clocks), "sm_min": min(clocks),
            "sm_p10": pct(clocks, 10), "below_1900": sum(c < 1900 for c in clocks) / len(clocks),
            "below_max": sum(c < MAX_SM_MHZ for c in clocks) / len(clocks),
            "power_mean": statistics.fmean(power), "power_max": max(power),
            "temp_max": max(s[3] for s in sel),
            "power_at_low_clock": statistics.fmean([s[2] for s in sel if s[1] < 1900]) if any(c < 1900 for c in clocks) else None}


def clock_vs_ratio(smi: list[tuple[float, int, float, int, int]], window: tuple[float, float],
                   works: list[tuple[float, float, bool, int]]) -> dict[str, Any]:
    """The GPU's decode steps and mixed iterations against the model (measured/modelled), by the
    SM clock of the nearest sample of the log (alignment within about a second)."""
    times = [s[0] for s in smi]
    bins: dict[str, list[float]] = {"hi": [], "lo": [], "b32_hi": [], "b32_lo": []}
    for start_s, ratio, beside, bucket in works:
        t = window[0] + start_s
        i = min(range(max(0, bisect.bisect_left(times, t) - 1), min(len(smi), bisect.bisect_left(times, t) + 1)),
                key=lambda j: abs(times[j] - t), default=None)
        if i is None:
            continue
        level = "hi" if smi[i][1] >= 1950 else "lo"
        bins[level].append(ratio)
        if bucket == 32 and not beside:  # one kind of work alone: the clock's own effect
            bins["b32_" + level].append(ratio)
    return {"ratio_hi": pct(bins["hi"], 50), "n_hi": len(bins["hi"]), "ratio_lo": pct(bins["lo"], 50),
            "n_lo": len(bins["lo"]), "b32_hi": pct(bins["b32_hi"], 50), "n_b32_hi": len(bins["b32_hi"]),
            "b32_lo": pct(bins["b32_lo"], 50), "n_b32_lo": len(bins["b32_lo"])}


# ---------------------------------------------------------------- the report

def f(v: Any, nd: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return "inf"
    return f"{v:.{nd}f}"


def rel(gpu: float | None, sim: float | None) -> str:
    if gpu is None or sim is None or not sim:
        return "-"
    return f"{gpu / sim:.2f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reuse", action="store_true", help="read sim/ instead of simulating again")
    args = p.parse_args()
    from examples.pd.sim.calibration import load_calibration

    calibration = load_calibration(os.path.join(ROOT, CALIBRATION))
    if args.reuse and os.path.isfile(os.path.join(SIM_DIR, "timeline-stats.json")):
        with open(os.path.join(SIM_DIR, "results.json")) as fh:
            sim_results = json.load(fh)
        with open(os.path.join(SIM_DIR, "timeline-stats.json")) as fh:
            sim_stats = json.load(fh)
    else:
        sim_results, sim_stats = simulate(calibration)

    with open(os.path.join(GPU_DIR, "results.json")) as fh:
        gpu_results = json.load(fh)
    gpu_runs = [r for r in gpu_results["runs"] if r.get("summary")]
    gpu_stats, gpu_summary = {}, {}
    for r in gpu_runs:
        name = f"{r['scheduler']}-{r['config']}-seed{r['seed']}-{r['rate']:g}".replace(" ", "").replace(",", "-").replace("/", "_")
        key = run_key(r["scheduler"], r["config"], r["seed"], r["rate"])
        gpu_summary[key] = r["summary"]
        path = os.path.join(GPU_DIR, "timelines", name + ".json")
        if os.path.isfile(path):
            with open(path) as fh:
                tl = json.load(fh)
            gpu_stats[key] = timeline_stats(tl["works"], r["param"] if r["scheduler"] == "chunked" else None,
                                            calibration)
    sim_summary = {run_key(r["scheduler"], r["config"], r["seed"], r["rate"]): r["summary"]
                   for r in sim_results["runs"] if r.get("summary")}
    both = [k for k in gpu_stats if k in sim_stats]
    smi = read_smi()
    windows = dict(zip([run_key(r["scheduler"], r["config"], r["seed"], r["rate"]) for r in gpu_runs],
                       run_windows(smi, gpu_runs)))

    L: list[str] = []
    add = L.append
    add("# GPU device timelines against the simulator: H200, today's workload, 32 layers, seed 1\n")
    add("GPU: `benchmarks/results/2026-12-06-h200-release-check/trace/` (NVIDIA H200, driver 580.159.04, torch 2.11, "
        "`--trace-runs`). Simulated: `python -m examples.pd.simulate` with the same arguments, from the H200 calibration "
        f"of 2026-12-06 (`{CALIBRATION}`), results in `sim/`. Written by `compare.py`. One seed, one rate (10 req/s; "
        "pd and its distserve mode also at 15): a diagnostic of the simulator, not a goodput claim.\n")
    only_gpu = [k for k in gpu_stats if k not in sim_stats]
    only_sim = [k for k in sim_stats if k not in gpu_stats]
    add(f"Runs on both sides: {len(both)}. Only on the GPU: {', '.join(only_gpu) or 'none'}. "
        f"Only simulated: {', '.join(only_sim) or 'none'}.\n")
    sim_static = sim_results.get("static_candidates", {})
    add(f"Static split chosen by the planner: GPU `{[r['config'] for r in gpu_runs if r['scheduler'] == 'static']}`, "
        f"simulated `{[r['config'] for r in sim_results['runs'] if r['scheduler'] == 'static' and r.get('summary')]}`.\n")

    add("## 1. Request figures (host side; ms)\n")
    add("| run | side | attainment | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | ITL p99 | host step p50 | host step p99 | steps within TPOT | unfinished |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in both:
        for side, s in (("GPU", gpu_summary[k]), ("sim", sim_summary[k])):
            add(f"| {k} | {side} | {s['attainment']:.1%} | {f(s['ttft_ms']['p50'], 0)} | {f(s['ttft_ms']['p99'], 0)} "
                f"| {f(s['tpot_ms']['p50'])} | {f(s['tpot_ms']['p99'])} | {f(s['itl_ms']['p99'])} | {f(s['step_ms']['p50'])} "
                f"| {f(s['step_ms']['p99'])} | {s['steps_within_tpot']:.1%} | {s['requests'] - s['finished']} |")
    add("")

    add("## 2. Decode steps on the device (ms, CUDA events / simulated device clock)\n")
    add("`alone`: less than 10% of the step overlapped a prefill piece; `beside`: 10% or more. "
        "`GPU/sim` is the ratio of the p-values.\n")
    add("| run | set | GPU n | sim n | GPU p50 | sim p50 | GPU p90 | sim p90 | GPU p99 | sim p99 | GPU/sim p50 | GPU/sim p99 | GPU rows | sim rows |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in both:
        g, s = gpu_stats[k], sim_stats[k]
        for part in ("decode", "decode_alone", "decode_beside"):
            a, b = g[part], s[part]
            if not a["n"] and not b["n"]:
                continue
            add(f"| {k} | {part.replace('decode_', '') if part != 'decode' else 'all'} | {a['n']} | {b['n']} "
                f"| {f(a['p50'], 2)} | {f(b['p50'], 2)} | {f(a['p90'], 2)} | {f(b['p90'], 2)} | {f(a['p99'], 2)} "
                f"| {f(b['p99'], 2)} | {rel(a['p50'], b['p50'])} | {rel(a['p99'], b['p99'])} | {f(a['mean_rows'], 0)} "
                f"| {f(b['mean_rows'], 0)} |")
    add("")
    add("Share of decode steps that ran beside prefill (10% or more of the step):\n")
    add("| run | GPU | sim |")
    add("|---|---:|---:|")
    for k in both:
        add(f"| {k} | {f(100 * (gpu_stats[k]['decode_beside_share'] or 0), 0)}% | "
            f"{f(100 * (sim_stats[k]['decode_beside_share'] or 0), 0)}% |")
    add("")
    add("Decode steps beside prefill, by decode rows (ms):\n")
    add("| run | rows | GPU n | sim n | GPU p50 | sim p50 | GPU p99 | sim p99 | GPU/sim p50 |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in both:
        for band in ("1-31", "32-63", "64-82"):
            a, b = gpu_stats[k]["decode_beside_by_rows"][band], sim_stats[k]["decode_beside_by_rows"][band]
            if a["n"] or b["n"]:
                add(f"| {k} | {band} | {a['n']} | {b['n']} | {f(a['p50'], 2)} | {f(b['p50'], 2)} | {f(a['p99'], 2)} "
                    f"| {f(b['p99'], 2)} | {rel(a['p50'], b['p50'])} |")
    add("")

    add("## 3. Each GPU work against the calibration's cost of that same work\n")
    add("The calibration's model (`examples.pd.bench.timeline_report`) priced at the work's own rows, context, "
        "tokens and measured overlap: the ratio isolates the per-work cost miss from differences in what ran "
        "(batch sizes, overlap, queueing). The simulated side's ratios are the spread draws (about 1).\n")
    add("| run | kind | GPU ratio p50 | GPU ratio p90 | sim ratio p50 | sim ratio p90 |")
    add("|---|---|---:|---:|---:|---:|")
    for k in both:
        for part in ("decode_alone", "decode_beside", "prefill_alone", "prefill_beside", "mixed"):
            a, b = gpu_stats[k][part], sim_stats[k][part]
            if a["n"]:
                add(f"| {k} | {part} | {f(a['ratio_p50'], 2)} | {f(a['ratio_p90'], 2)} | {f(b['ratio_p50'], 2)} "
                    f"| {f(b['ratio_p90'], 2)} |")
    add("")

    add("## 4. Prefill pieces (ms on the device)\n")
    add("| run | set | GPU n | sim n | GPU p50 | sim p50 | GPU p90 | sim p90 | GPU p99 | sim p99 | GPU/sim p50 |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in both:
        for part in ("prefill", "prefill_alone", "prefill_beside"):
            a, b = gpu_stats[k][part], sim_stats[k][part]
            if a["n"] or b["n"]:
                add(f"| {k} | {part.replace('prefill_', '') if part != 'prefill' else 'all'} | {a['n']} | {b['n']} "
                    f"| {f(a['p50'], 2)} | {f(b['p50'], 2)} | {f(a['p90'], 2)} | {f(b['p90'], 2)} | {f(a['p99'], 2)} "
                    f"| {f(b['p99'], 2)} | {rel(a['p50'], b['p50'])} |")
    add("")

    chunked = [k for k in both if k.startswith("chunked")]
    if chunked:
        add("## 5. Chunked prefill's mixed iterations (ms), by prompt-token bucket and decode rows\n")
        for k in chunked:
            g, s = gpu_stats[k], sim_stats[k]
            add(f"{k}: all mixed iterations GPU p50 {f(g['mixed']['p50'], 2)} / p99 {f(g['mixed']['p99'], 2)} (n {g['mixed']['n']}), "
                f"sim p50 {f(s['mixed']['p50'], 2)} / p99 {f(s['mixed']['p99'], 2)} (n {s['mixed']['n']}); GPU/model ratio p50 "
                f"{f(g['mixed']['ratio_p50'], 2)}.\n")
            add("| tokens bucket | decode rows | GPU n | sim n | GPU p50 | sim p50 | GPU p99 | sim p99 | GPU/sim p50 | GPU / model p50 |")
            add("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            keys = sorted(set(g.get("mixed_by_bucket", {})) | set(s.get("mixed_by_bucket", {})),
                          key=lambda x: (int(x.split("|")[0]), x))
            empty = {"n": 0, "p50": None, "p99": None, "ratio_p50": None}
            for b in keys:
                a, c = g.get("mixed_by_bucket", {}).get(b, empty), s.get("mixed_by_bucket", {}).get(b, empty)
                tok, band = b.split("|")
                add(f"| {tok} | {band} | {a['n']} | {c['n']} | {f(a['p50'], 2)} | {f(c['p50'], 2)} | {f(a['p99'], 2)} "
                    f"| {f(c['p99'], 2)} | {rel(a['p50'], c['p50'])} | {f(a['ratio_p50'], 2)} |")
            add("")

    add("## 6. Decode steps by graph bucket: GPU against the calibration's model, and what each side ran\n")
    add("The model prices a step by its bucket and total context, fitted to calibration steps whose rows all hold "
        "the same length (1152 or 3456 tokens). `GPU/model`: measured over modelled for the GPU's own steps; "
        "`sim n`: how many steps of that bucket the simulated run made.\n")
    add("| run | bucket | set | GPU n | sim n | GPU p50 ms | GPU model p50 ms | GPU/model p50 | GPU/model p90 | sim p50 ms | context/row p50 (GPU) |")
    add("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in both:
        g, s_ = gpu_stats[k]["decode_by_bucket"], sim_stats[k]["decode_by_bucket"]
        keys = sorted(set(g) | set(s_), key=lambda x: (x.split("|")[1], int(x.split("|")[0])))
        for b in keys:
            a, c = g.get(b), s_.get(b)
            bucket, part = b.split("|")
            add(f"| {k} | {bucket} | {part} | {a['n'] if a else 0} | {c['n'] if c else 0} | {f(a and a['p50'], 2)} "
                f"| {f(a and a['model_p50'], 2)} | {f(a and a['ratio_p50'], 2)} | {f(a and a['ratio_p90'], 2)} "
                f"| {f(c and c['p50'], 2)} | {f(a and a['context_per_row_p50'], 0)} |")
    add("")
    for k in chunked:
        g = gpu_stats[k].get("mixed_by_depth", {})
        add(f"Mixed iterations of {k} by the prompt chunk's attention pairs beyond those of a chunk at a slot's start "
            "(the model prices those at the plain lane's prefill cost per pair):\n")
        add("| extra pairs | GPU n | GPU p50 ms | model p50 ms | GPU/model p50 | GPU/model p90 |")
        add("|---|---:|---:|---:|---:|---:|")
        for d, a in g.items():
            if a["n"]:
                add(f"| {d} | {a['n']} | {f(a['p50'], 2)} | {f(a['model_p50'], 2)} | {f(a['ratio_p50'], 2)} | {f(a['ratio_p90'], 2)} |")
        add("")
    pd_keys = [k for k in both if k.startswith("pd")]
    if pd_keys:
        add("## 7. The policy's layouts (decode steps per layout: SMs given to decode)\n")
        add("| run | side | steps per layout |")
        add("|---|---|---|")
        for k in pd_keys:
            for side, summ in (("GPU", gpu_summary[k]), ("sim", sim_summary[k])):
                lanes = summ.get("steps_per_lane", {})
                add(f"| {k} | {side} | {', '.join(f'{n}: {v}' for n, v in sorted(lanes.items(), key=lambda kv: (len(kv[0].split()), int(kv[0].split()[0]))))} |")
        add("")

    add("## 8. SM clock and power during each GPU run (nvidia-smi, every 250 ms)\n")
    add("Each run's window in the log is found from its duration and the drain tail that ends it "
        "(`run_windows`); the memory clock stayed at 3201 MHz throughout. The last two columns: the median "
        "measured/modelled ratio (section 3) of the run's decode steps and mixed iterations whose nearest clock "
        "sample read 1950 MHz or more, and less (alignment within about a second); then the same for one kind of "
        "work only, bucket-32 decode steps alone, which separates the clock from the mix of work.\n")
    add("| run | window (s) | SM MHz mean | SM MHz min | samples below 1980 | below 1900 | power mean W | power max W | W when below 1900 | temp max C | decode/mixed vs model at >=1950 MHz (n) | below 1950 MHz (n) | bucket-32 steps alone vs model at >=1950 MHz (n) | below 1950 MHz (n) |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    clock_rows = {}
    for r in gpu_runs:
        k = run_key(r["scheduler"], r["config"], r["seed"], r["rate"])
        w = windows[k]
        c = clock_stats(smi, w)
        cr = clock_vs_ratio(smi, w, gpu_stats[k]["latency_ratios"]) if k in gpu_stats else {}
        clock_rows[k] = {**c, **cr, "window": w}
        add(f"| {k} | {w[0]:.1f}-{w[1]:.1f} | {c['sm_mean']:.0f} | {c['sm_min']} | {c['below_max']:.0%} | {c['below_1900']:.0%} "
            f"| {c['power_mean']:.0f} | {c['power_max']:.0f} | {f(c['power_at_low_clock'], 0)} | {c['temp_max']} "
            f"| {f(cr.get('ratio_hi'), 2)} ({cr.get('n_hi', 0)}) | {f(cr.get('ratio_lo'), 2)} ({cr.get('n_lo', 0)}) "
            f"| {f(cr.get('b32_hi'), 2)} ({cr.get('n_b32_hi', 0)}) | {f(cr.get('b32_lo'), 2)} ({cr.get('n_b32_lo', 0)}) |")
    add("")
    with open(os.path.join(HERE, "comparison.md"), "w") as fh:
        fh.write("\n".join(L))
    with open(os.path.join(HERE, "comparison.json"), "w") as fh:
        json.dump({"gpu": {k: {kk: vv for kk, vv in v.items() if kk != "latency_ratios"} for k, v in gpu_stats.items()},
                   "sim": {k: {kk: vv for kk, vv in v.items() if kk != "latency_ratios"} for k, v in sim_stats.items()},
                   "clock": clock_rows}, fh, indent=1)
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
