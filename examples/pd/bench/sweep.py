"""The sweep of ``python -m examples.pd`` (GPU): set-up, memory, resume, the families of runs,
results, plots and tables. The options and what the sweep does: ``examples/pd/__main__.py``
and ``examples/pd/README.md``."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Sequence

from ..engine.planning import bucket_list
from ..engine.shape import ModelShape, kv_cache_bytes
from ..sim.calibration import (CalibrationError, calibration_document, check_matches, load_calibration,
                               write_calibration)
from . import cli
from .candidates import layout_counts
from .estimates import capacity, expected_run_s, rates_from, run_cap
from .families import run_families
from .metrics import slo_from_json, slo_json
from .planner import label_of, unknown_splits
from .report import dump, render
from .traces import lengths_of, trace_for
from .workload import describe

GB = 1e9
RESERVE_BYTES = 10 * GB  # graphs, activations of prefill batches and the allocator's slack
# The static planner considers every split the device gives from this many decode SMs: fewer cannot
# hold a decode step of a Llama-3-8B-shaped model within any TPOT SLO worth serving.
MIN_STATIC_SMS = 16
# Settings a resumed sweep may change: none changes what a run measures. (The static candidates
# follow the runs made so far, so a --rerun may change them; a budget's runs are the same whatever
# the other budgets, as long as each stays above the resumed sweep's slot count.)
SAME_SETTINGS_EXCEPT = ("resume", "rerun", "schedulers", "time_budget_s", "out", "quiet", "profile", "layout_profile",
                        "rates", "budgets", "more_slack_shares", "calibration", "calibrate_only", "trace_runs",
                        "static_candidates", "static_splits")


class Progress:
    """Progress on stderr: whole lines, and a line rewritten in place on a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.tty = quiet, sys.stderr.isatty()

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(("\r\033[K" if self.tty else "") + text, file=sys.stderr, flush=True)

    def live(self, text: str) -> None:
        if not self.quiet and self.tty:
            print("\r\033[K" + text, end="", file=sys.stderr, flush=True)


def slots_for(s: cli.Settings, free: int, shape: ModelShape) -> int:
    """--max-slots, or as many slots as 85% of the free memory holds beside the weights and a
    reserve (at most 96, and below the smallest chunked budget)."""
    if s.max_slots is not None:
        return s.max_slots
    room = 0.85 * free - shape.weight_bytes() - RESERVE_BYTES
    fits = int(room // (s.max_len * shape.kv_bytes_per_token())) - 1  # one slot is scratch
    limit = min(s.budgets) - 1 if "chunked" in s.schedulers else 96
    return max(0, min(96, fits, limit))


def load_resume(s: cli.Settings) -> dict[str, Any]:
    """The earlier results file of --resume (checked to have the same settings), less the runs
    of the --rerun schedulers, or {}."""
    if not s.resume:
        return {}
    try:
        with open(s.resume) as f:
            earlier = json.load(f)
    except (OSError, ValueError) as error:
        raise SystemExit(f"--resume {s.resume}: not a results file of python -m examples.pd ({error})") from None
    if not isinstance(earlier, dict) or not isinstance(earlier.get("settings"), dict) or "runs" not in earlier:
        raise SystemExit(f"--resume {s.resume}: not a results file of python -m examples.pd (it has no settings "
                         "and runs)")
    mine = {k: v for k, v in cli.settings_dict(s).items() if k not in SAME_SETTINGS_EXCEPT}
    theirs = {k: v for k, v in earlier["settings"].items() if k not in SAME_SETTINGS_EXCEPT}
    defaults = cli.older_defaults(s.workload)  # of settings newer than the file
    differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k, defaults.get(k)))
    if differ:
        raise SystemExit(f"--resume {s.resume}: its settings differ in {', '.join(differ)}; run with the same ones")
    slots = earlier.get("model", {}).get("slots")
    small = [b for b in s.budgets if slots is not None and b <= slots]
    if "chunked" in s.schedulers and small:
        raise SystemExit(f"--resume {s.resume}: its engine has {slots} slots, so --budgets must exceed {slots} "
                         f"(every decoding request fits an iteration), got {','.join(map(str, small))}")
    runs = earlier.get("runs", [])
    earlier["runs"] = [r for r in runs if r["scheduler"] not in s.rerun]
    if s.rerun:
        print(f"--rerun {','.join(s.rerun)}: {len(runs) - len(earlier['runs'])} runs of {s.resume} are made again",
              file=sys.stderr)
    return earlier


def measured_elsewhere(s: cli.Settings, earlier: dict[str, Any], device: str) -> list[str]:
    """The files of --resume and --layout-profile measured on another GPU than ``device``: their
    runs and step times would be mixed with this one's."""
    elsewhere = []
    theirs = earlier.get("device", {}).get("name")
    if theirs not in (None, device):
        elsewhere.append(f"--resume {s.resume} ran on {theirs}")
    if s.layout_profile:
        with open(s.layout_profile) as f:
            settings = json.load(f).get("settings", {})
        parts = settings.get("parts", [settings])  # one profile, or the merged disjoint and overlapped ones
        names = sorted({p["device"] for p in parts if p.get("device") not in (None, device)})
        if names:
            elsewhere.append(f"--layout-profile {s.layout_profile} was measured on {', '.join(names)}")
    if s.calibration:
        try:
            check_matches(load_calibration(s.calibration), layers=s.layers, device=device, path=s.calibration)
        except CalibrationError as error:
            elsewhere.append(str(error))
    return elsewhere


def main(argv: list[str] | None = None, doc: str | None = None) -> int:
    s = cli.parse(argv, doc)
    earlier = load_resume(s)
    s = cli.with_earlier_shares(s, earlier.get("settings", {}))
    import torch

    if not torch.cuda.is_available():
        print("this example needs a CUDA GPU, and torch sees none here (torch.cuda.is_available() is False); "
              "`python -m examples.pd.report RESULTS` reads the results of a sweep without one", file=sys.stderr)
        return 2
    import torch_green_contexts as tgc
    from torch_green_contexts import sizing

    from ..engine.gpu import Engine
    from ..engine.model import Model
    from .attention_check import check_attention
    from .runs import Bench

    began, say = time.perf_counter(), Progress(s.quiet)
    slept = host_sleep_us(s.poll_us)
    os.makedirs(s.out, exist_ok=True)
    torch.cuda.set_device(s.device)
    props = torch.cuda.get_device_properties(s.device)
    total = props.multi_processor_count
    elsewhere = measured_elsewhere(s, earlier, props.name)
    if elsewhere:
        print(f"{'; '.join(elsewhere)}, not on this {props.name}: continue the sweep on that GPU, or start "
              "another with other --out files", file=sys.stderr)
        return 2
    shape = ModelShape(layers=s.layers)
    free = torch.cuda.mem_get_info(s.device)[0]
    slots = earlier["model"]["slots"] if earlier else slots_for(s, free, shape)  # a resumed sweep keeps its engine
    kv_bytes, weight_bytes = kv_cache_bytes(shape, slots, s.max_len), shape.weight_bytes()
    say(f"model: {s.layers} layers, weights {weight_bytes / GB:.1f} GB; KV cache {kv_bytes / GB:.1f} GB "
        f"({slots} slots + 1 scratch x {s.max_len} tokens x {shape.kv_bytes_per_token() // 1024} KiB); "
        f"{free / GB:.0f} GB free")
    if slots < 1 or kv_bytes + weight_bytes + RESERVE_BYTES > 0.85 * free:
        need = (weight_bytes + kv_cache_bytes(shape, 1, s.max_len) + RESERVE_BYTES) / 0.85 / GB
        print(f"the weights, a KV cache of {max(slots, 1)} slots and a {RESERVE_BYTES / GB:.0f} GB reserve need more "
              f"than 85% of the {free / GB:.0f} GB free (one slot needs {need:.0f} GB free): lower --layers, "
              "--max-slots, --max-prompt or --max-output", file=sys.stderr)
        return 2
    buckets = bucket_list(s.buckets, slots)
    model = Model(shape, slots=slots, max_len=s.max_len, device=f"cuda:{s.device}", attention=s.attention,
                  seed=s.seeds[0])
    driver = tgc.driver_version()
    results: dict[str, Any] = {
        "settings": cli.settings_dict(s), "workload": s.workload, "seeds": list(s.seeds), "host_sleep_us": slept,
        "device": {"name": props.name, "sm_count": total, "torch": torch.__version__,
                   "driver": f"{driver // 1000}.{driver % 1000 // 10}"},
        "model": {"layers": s.layers, "weights_gb": weight_bytes / GB, "kv_cache_gb": kv_bytes / GB,
                  "slots": slots, "max_len": s.max_len, "buckets": buckets, "attention": s.attention,
                  "chunked_mixed_iterations": "CUDA graphs per token bucket" if s.attention == "flash" else "eager"},
    }
    if s.attention == "flash":
        try:
            results["attention_check_max_abs_diff"] = check_attention(model.device)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
    counts: list[int] = []
    static_counts: list[int] = []
    if set(s.schedulers) & set(cli.SPLITS):
        available = sizing.available_counts(s.device)
        wanted = (s.layout_counts if s.layout_counts is not None else cli.DEFAULT_COUNTS) + (total,)
        counts, dropped = layout_counts(wanted, available, total)
        if dropped:
            say(f"the device cannot split off exactly {dropped} SMs: left out")
        if "static" in s.schedulers:
            static_counts = [k for k in available if MIN_STATIC_SMS <= k < total]
            wrong = unknown_splits(s.static_splits or (), [label_of("static", k) for k in static_counts])
            if wrong:
                print(wrong, file=sys.stderr)
                return 2
    engine = Engine(model, buckets)
    bench = Bench(s, engine, total, counts, static_counts)
    costs, slo = bench.costs, bench.slo
    if earlier:  # the resumed runs were judged against the earlier SLOs: keep them, and its rates
        slo = bench.slo = slo_from_json(earlier["slo"])
    capacity_rps = capacity(lengths_of(s, s.seeds[0]), costs)
    coarse = sorted(s.rates) if s.rates else earlier.get("coarse_rates") or rates_from(capacity_rps, s.load_fractions)
    bench.coarse = list(coarse)
    results.update(costs={"decode_step_ms": costs.decode_step_s * 1e3, "decode_batch": costs.decode_batch,
                          "context": s.context, "prefill_ms": costs.prefill_s * 1e3, "prefill_tokens": s.max_prompt},
                   slo={**slo_json(slo),
                        "ttft_from": ("--ttft-slo-ms" if s.ttft_slo_ms else f"{s.ttft_slo_x:g} x prefill_ms")
                        + (" and --ttft-slo-ms-per-token" if s.ttft_slo_ms_per_token else ""),
                        "tpot_from": "--tpot-slo-ms" if s.tpot_slo_ms else f"{s.tpot_slo_x:g} x decode_step_ms"},
                   capacity_rps=capacity_rps, coarse_rates=coarse,
                   traces={str(seed): describe(lengths_of(s, seed)) for seed in s.seeds}, runs=[])
    say(f"reference: decode step of {costs.decode_batch} x {s.context} tokens {costs.decode_step_s * 1e3:.2f} ms, "
        f"prefill of {s.max_prompt} tokens {costs.prefill_s * 1e3:.1f} ms; SLOs: {slo.describe()}; "
        f"capacity ~{capacity_rps:.2f} req/s; coarse rates "
        f"{', '.join(f'{r:.3g}' for r in coarse)}")
    say(estimate(s, coarse, costs, slo))
    out = os.path.join(s.out, "results.json")
    try:
        if "policy" in s.schedulers:
            bench.make_split_policy()
        results.update(bench.profile_layouts())
        if s.calibration:
            results["calibration"] = bench.calibration_path = s.calibration
        else:
            say("measuring the simulator's calibration (--calibration reuses one)")
            path = os.path.join(s.out, "calibration.json")
            write_calibration(path, calibration_document(results, bench.calibration()))
            results["calibration"] = bench.calibration_path = path
            say(f"calibration written to {path}")
        results["setup_s"] = time.perf_counter() - began
        if s.calibrate_only:
            dump(results, os.path.join(s.out, "setup.json"))
            say(f"--calibrate-only: calibration, layout profile and set-up in {s.out}/ "
                f"({results['setup_s'] / 60:.1f} min)")
            return 0

        run_families(bench, s, results, earlier, coarse, out, began, say)
    finally:
        bench.close()
    finish(results, s, began)
    return 0
def host_sleep_us(poll_us: float) -> float | None:
    """How long ``time.sleep(poll_us)`` takes here (median of 50; None when the host spins):
    the host notices a finished step up to this much late."""
    if poll_us <= 0:
        return None
    times = []
    for _ in range(50):
        start = time.perf_counter()
        time.sleep(poll_us * 1e-6)
        times.append(time.perf_counter() - start)
    return sorted(times)[25] * 1e6


def estimate(s: cli.Settings, coarse: list[float], costs: Any, slo: Any) -> str:
    """What the sweep is expected to cost, printed before it starts."""
    per_run = [expected_run_s(trace_for(s, r, s.seeds[0]), costs, s.duration_cap_s or run_cap(
        trace_for(s, r, s.seeds[0]), slo)) for r in coarse]
    families = s.schedulers
    per_family = {"chunked": len(s.budgets), "static": s.static_candidates, "static-overlap": s.static_candidates,
                  "pd": len(cli.policy_shares(s)), "pd-overlap": len(cli.policy_shares(s))}
    configs = sum(per_family.get(n, 1) for n in families) + 2 * (len(s.admission) - 1) * len(families)
    coarse_s = configs * sum(per_run)
    refine_s = len(families) * 2 * (s.min_rates * len(s.seeds) - len(coarse)) * max(per_run)
    return (f"estimate: coarse pass {configs} configurations x {len(coarse)} rates, about {coarse_s / 60:.0f} min; "
            f"knees and {len(s.seeds) - 1} more seed(s) up to about {max(0.0, refine_s) / 60:.0f} min more "
            f"(runs above a configuration's knee are skipped, so less)")


def finish(results: dict[str, Any], s: cli.Settings, began: float) -> None:
    """Goodput, comparisons, plots and tables (see :func:`report.render`)."""
    results["elapsed_s"] = time.perf_counter() - began
    render(results, os.path.join(s.out, "results.json"), os.path.join(s.out, ""))
    print(f"results in {s.out}/ ({results['elapsed_s'] / 60:.1f} min)")


if __name__ == "__main__":
    sys.exit(main())
