"""Prefill and decode of an LLM-shaped engine on one GPU: four schedulers, one trace, goodput.

Run from the repository root (needs a CUDA GPU; nothing is downloaded):

    python -m examples.pd --quick          # smoke run: 4 layers, 20 short requests, 2 rates
    python -m examples.pd                  # the sweep: 32 layers, 80 requests per run, 4 rates
    python -m examples.pd --layers 16 --rates 4,6,8 --schedulers chunked,policy

The engine is Llama-3-8B-shaped (hidden 4096, 32 query and 8 KV heads of 128, SwiGLU 14336,
RMSNorm, rotary; random bf16 weights) with a KV cache of preallocated slots. A seeded trace of
Poisson arrivals (prompts 256-4096 tokens, outputs 32-512, log-normal) is replayed in real time
by each scheduler, with the same KV slots, FCFS admission, SLOs and a host that waits for
every decode step:

  chunked  chunked prefill as vLLM and SGLang run it by default: each iteration is one forward
           pass over every decoding request's token and prompt chunks up to a token budget
           (--budgets; the best budget is reported). Decode-only iterations replay CUDA graphs;
           mixed iterations run eagerly, as vLLM's do outside its piecewise graphs.
  streams  decode (graphed, highest priority) and prefill on two plain streams.
  static   one split from a Layouts, never switched: decode on k SMs, prefill on the rest; k
           from the profile (the smallest count meeting the TPOT SLO at the largest decode
           bucket reached in the runs that met the SLOs, and its neighbours; the best is
           reported).
  policy   SplitPolicy over Layouts: the split is picked per decode step from the profile,
           per-role ordering, a Layouts.handoff() per request from its prefill to its first
           decode step.

For the last three, prefill runs in pieces (a batch of up to --chunk prompt tokens through
--piece-layers layers) on the batch stream, at most --prefill-depth queued and tracked with
events, while the host launches decode steps (CUDA graphs per batch bucket and lane) on the
latency stream.

SLO defaults (relative to measurements made at start-up, so that they scale with --layers and
the device): TPOT SLO = 5 x the reference decode step (32 requests at --context tokens each,
graph replay, alone on the whole GPU), the "strict" TBT SLO of Sarathi-Serve (OSDI'24); TTFT
SLO = 5 x the prefill of one --max-prompt prompt alone on the whole GPU, so that a request
queued behind a few long prompts still meets it. --ttft-slo-ms/--tpot-slo-ms set them in ms.

Figures per scheduler and arrival rate: TTFT and TPOT p50/p99, decode-step latency (launch to
tokens on the host) and the share of steps within the TPOT SLO, output tokens/s, SLO
attainment (requests meeting both SLOs; unfinished ones at the cut-off are misses) and goodput
(the highest rate with >= 90% attainment, interpolated linearly between the highest measured
rate reaching 90% and the next measured rate). Writes results.json, attainment.png,
profile.json and profile.png to --out; prints a Markdown table. See examples/pd/README.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable

from . import cli
from .estimates import Costs, capacity, expected_run_s, rates_from, run_cap, setup_estimate_s
from .loops import LoopSettings, run_chunked, run_overlap
from .metrics import TARGET_ATTAINMENT, Slo, summarize
from .planning import (ModelShape, PrefillCursor, bucket_list, bucket_reached, kv_cache_bytes, layout_counts,
                       static_candidates)
from .report import NAMES, comparison, plot, run_entry, schedulers, table
from .workload import Lengths, describe, make_trace

GB = 1e9


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


def main(argv: list[str] | None = None) -> int:
    s = cli.parse(argv, __doc__)
    import torch

    if not torch.cuda.is_available():
        print("this example needs a CUDA GPU", file=sys.stderr)
        return 2
    import torch_green_contexts as tgc
    from torch_green_contexts import sizing

    from .engine import Engine, RealClock
    from .lanes import ChunkedRunner, OverlapRunner, PlainLanes, PolicyLanes, StaticLanes, layout_lane
    from .model import Model, check_attention

    began, say = time.perf_counter(), Progress(s.quiet)
    slept = host_sleep_us(s.poll_us)
    os.makedirs(s.out, exist_ok=True)
    torch.cuda.set_device(s.device)
    props = torch.cuda.get_device_properties(s.device)
    total = props.multi_processor_count
    shape, buckets = ModelShape(layers=s.layers), bucket_list(s.buckets, s.max_slots)
    kv_bytes, weight_bytes = kv_cache_bytes(shape, s.max_slots, s.max_len), shape.weight_bytes()
    free = torch.cuda.mem_get_info(s.device)[0]
    if slept is not None:
        say(f"host: a sleep of {s.poll_us:g} us between looks at the device takes {slept:.0f} us (median)")
    say(f"model: {s.layers} layers, weights {weight_bytes / GB:.1f} GB; KV cache {kv_bytes / GB:.1f} GB "
        f"({s.max_slots} slots + 1 scratch x {s.max_len} tokens x {shape.kv_bytes_per_token() // 1024} KiB); "
        f"{free / GB:.0f} GB free")
    if kv_bytes + weight_bytes > 0.85 * free:
        print("the weights and KV cache need more than 85% of the free GPU memory: lower --max-slots, "
              "--max-prompt or --max-output", file=sys.stderr)
        return 2
    model = Model(shape, slots=s.max_slots, max_len=s.max_len, device=f"cuda:{s.device}",
                  attention=s.attention, seed=s.seed)
    driver = tgc.driver_version()
    results: dict[str, Any] = {
        "settings": {k: v for k, v in vars(s).items()},
        "host_sleep_us": slept,
        "device": {"name": props.name, "sm_count": total, "torch": torch.__version__,
                   "driver": f"{driver // 1000}.{driver % 1000 // 10}"},
        "model": {"layers": s.layers, "weights_gb": weight_bytes / GB, "kv_cache_gb": kv_bytes / GB,
                  "slots": s.max_slots, "max_len": s.max_len, "buckets": buckets, "attention": s.attention},
    }
    if s.attention == "flash":
        try:
            results["attention_check_max_abs_diff"] = check_attention(model.device)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
    engine = Engine(model, buckets)
    plain = PlainLanes(s.device)
    engine.capture(plain.lane)
    costs = engine.measure_costs(plain.lane, min(32, s.max_slots), s.context, s.max_prompt, s.chunk)
    slo = Slo(ttft=s.ttft_slo_ms / 1e3 if s.ttft_slo_ms else s.ttft_slo_x * costs.prefill_s,
              tpot=s.tpot_slo_ms / 1e3 if s.tpot_slo_ms else s.tpot_slo_x * costs.decode_step_s)
    prompts = Lengths(s.min_prompt, s.max_prompt, s.prompt_median, s.prompt_sigma)
    outputs = Lengths(s.min_output, s.max_output, s.output_median, s.output_sigma)

    def trace_at(rate: float) -> list[Any]:
        return make_trace(s.requests, rate, seed=s.seed, prompts=prompts, outputs=outputs)

    capacity_rps = capacity(trace_at(1.0), costs)
    rates = sorted(s.rates) if s.rates else rates_from(capacity_rps, s.load_fractions)
    results.update(costs={"decode_step_ms": costs.decode_step_s * 1e3, "decode_batch": costs.decode_batch,
                          "context": s.context, "prefill_ms": costs.prefill_s * 1e3, "prefill_tokens": s.max_prompt},
                   slo={"ttft_ms": slo.ttft * 1e3, "tpot_ms": slo.tpot * 1e3,
                        "ttft_from": "--ttft-slo-ms" if s.ttft_slo_ms else f"{s.ttft_slo_x:g} x prefill_ms",
                        "tpot_from": "--tpot-slo-ms" if s.tpot_slo_ms else f"{s.tpot_slo_x:g} x decode_step_ms"},
                   capacity_rps=capacity_rps, rates=rates, trace=describe(trace_at(1.0)), runs=[])
    say(f"reference: decode step of {costs.decode_batch} x {s.context} tokens {costs.decode_step_s * 1e3:.2f} ms, "
        f"prefill of {s.max_prompt} tokens {costs.prefill_s * 1e3:.1f} ms; SLOs: TTFT {slo.ttft * 1e3:.0f} ms, "
        f"TPOT {slo.tpot * 1e3:.1f} ms; capacity ~{capacity_rps:.2f} req/s; rates {', '.join(f'{r:.3g}' for r in rates)}")

    splits = "static" in s.schedulers or "policy" in s.schedulers
    counts: list[int] = []
    if splits:
        wanted = (s.layout_counts if s.layout_counts is not None else cli.DEFAULT_COUNTS) + (total,)
        counts, dropped = layout_counts(wanted, sizing.available_counts(s.device), total)
        if dropped:
            say(f"the device cannot split off exactly {dropped} SMs: left out")
    n_configs = len(s.budgets) * ("chunked" in s.schedulers) + ("streams" in s.schedulers) \
        + ("policy" in s.schedulers) + s.static_candidates * ("static" in s.schedulers)
    run_s = sum(expected_run_s(trace_at(r), costs, s.duration_cap_s or run_cap(trace_at(r), slo)) for r in rates)
    cap_s = sum(s.duration_cap_s or run_cap(trace_at(r), slo) for r in rates)
    measured = [k for k in counts if k > 0] if splits and not s.profile else []
    setup = setup_estimate_s(costs, len(counts) * len(buckets), 2 * len(measured) * len(buckets) * s.profile_rounds,
                             s.profile_samples + 2)
    say(f"estimate: {n_configs} configurations x {len(rates)} rates, about {n_configs * run_s / 60:.1f} min "
        f"(at most {n_configs * cap_s / 60:.1f} min if every run hit its cap) after ~{setup:.0f} s of set-up")

    layouts = policy = profile = None
    try:
        if splits:
            from torch_green_contexts.layouts import Layouts
            from torch_green_contexts.policy import SplitPolicy

            if s.profile:
                with open(s.profile) as f:
                    profile = sizing.LatencyProfile.from_json(f.read())
            else:
                profile = sizing.profile(engine.profile_steps(s.context), buckets,
                                         load=engine.load_piece(s.chunk, s.piece_layers), counts=measured,
                                         rounds=s.profile_rounds, samples=s.profile_samples, graph=True,
                                         progress=not s.quiet, device_id=s.device, seed=s.seed)
            with open(os.path.join(s.out, "profile.json"), "w") as f:
                f.write(profile.to_json())
            profile.plot(os.path.join(s.out, "profile.png"), deadline_us=slo.tpot * 1e6)
            print(profile.table())
            high = torch.cuda.Stream.priority_range()[1]  # type: ignore[call-arg]
            layouts = Layouts(counts, device_id=s.device, latency_priority=high, ordering="per_role")
            for k in layouts.counts:
                engine.capture(layout_lane(layouts[k]))
            policy = SplitPolicy(profile, layouts, slo_us=slo.tpot * 1e6, percentile=99, ordering="per_role",
                                 headroom=s.policy_headroom)
            results["layout_counts"] = list(layouts.counts)
        policy_lanes = PolicyLanes(policy, layouts) if policy is not None else None
        results["setup_s"] = time.perf_counter() - began

        def run_one(scheduler: str, param: Any, rate: float) -> dict[str, Any]:
            trace = trace_at(rate)
            cap = s.duration_cap_s or run_cap(trace, slo)
            settings = LoopSettings(s.max_slots, buckets, cap, s.poll_us * 1e-6, progress=lambda done, n, t: say.live(
                f"  {done}/{n} requests finished, {t:.0f} s of at most {cap:.0f} s"))
            engine.reset()
            if scheduler == "chunked":
                engine.warm_up([plain.lane], s.chunk, s.piece_layers)
                log = run_chunked(trace, ChunkedRunner(engine, plain.lane), param, settings, RealClock())
            else:
                lanes: Any = plain if scheduler == "streams" else policy_lanes if scheduler == "policy" \
                    else StaticLanes(layouts, param)
                engine.warm_up(lanes.all(), s.chunk, s.piece_layers)
                cursor = PrefillCursor(s.chunk, s.layers, s.piece_layers)
                log = run_overlap(trace, OverlapRunner(engine, lanes), cursor, s.prefill_depth, settings, RealClock())
            engine.reset()
            return summarize(log, slo)

        configs: list[tuple[str, str, Any]] = [("chunked", f"budget {b}", b) for b in s.budgets
                                                if "chunked" in s.schedulers]
        configs += [("policy", NAMES["policy"], None)] if "policy" in s.schedulers else []
        done_runs = [0]
        sweep(configs, rates, s, results, run_one, say, began, done_runs, n_configs * len(rates))
        if "static" in s.schedulers:
            reached = bucket_reached((r["summary"] for r in results["runs"] if not r["skipped"]),
                                     TARGET_ATTAINMENT, buckets[-1])
            candidates = static_candidates(lambda p, k: profiled(profile, p, k), counts, total, reached,
                                           slo.tpot * 1e6, s.static_candidates)
            results["static_candidates"] = {"bucket": reached, "counts": candidates}
            sweep([("static", f"{k} SMs", k) for k in candidates], rates, s, results, run_one, say, began,
                  done_runs, n_configs * len(rates))
        if "streams" in s.schedulers:  # the weakest baseline last, should a time limit cut the sweep
            sweep([("streams", NAMES["streams"], None)], rates, s, results, run_one, say, began, done_runs,
                  n_configs * len(rates))
    finally:
        engine.drop_graphs()
        if layouts is not None:
            layouts.close()
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


def profiled(profile: Any, p: int, k: int) -> float | None:
    """The profile's p99 decode latency beside prefill (us) at bucket ``p`` on ``k`` SMs;
    None where it has none (a count it did not measure, or a bucket above its largest)."""
    try:
        latency: float | None = profile.latency(p, k, percentile=99, under_load=True)
    except (KeyError, ValueError):
        return None
    return latency


def sweep(configs: list[tuple[str, str, Any]], rates: list[float], s: cli.Settings, results: dict[str, Any],
          run_one: Callable[[str, Any, float], dict[str, Any]], say: Progress, began: float,
          done_runs: list[int], n_runs: int) -> None:
    """Each configuration at each rate, ascending; once a run's attainment falls below
    --stop-below, the configuration's higher rates are skipped (recorded as skipped)."""
    for scheduler, label, param in configs:
        stopped = False
        for rate in rates:
            done_runs[0] += 1
            if stopped:
                results["runs"].append(run_entry(scheduler, label, rate, None))
                continue
            start = time.perf_counter()
            summary = run_one(scheduler, param, rate)
            results["runs"].append(run_entry(scheduler, label, rate, summary))
            stopped = summary["attainment"] < s.stop_below
            within = summary["steps_within_tpot"]
            say(f"[{done_runs[0]}/{n_runs}] {NAMES[scheduler]}, {label} @ {rate:.3g} req/s: attainment "
                f"{summary['attainment']:.0%}, TTFT p99 {summary['ttft_ms']['p99'] or 0:.0f} ms, TPOT p99 "
                f"{summary['tpot_ms']['p99'] or 0:.1f} ms, steps within TPOT "
                f"{'-' if within is None else f'{within:.1%}'}, {time.perf_counter() - start:.1f} s "
                f"(total {(time.perf_counter() - began) / 60:.1f} min)")
            with open(os.path.join(s.out, "results.json"), "w") as f:
                json.dump(results, f, indent=1)


def finish(results: dict[str, Any], s: cli.Settings, began: float) -> None:
    results["schedulers"] = schedulers(results["runs"])
    results["comparison"] = comparison(results["runs"], results["schedulers"])
    results["elapsed_s"] = time.perf_counter() - began
    with open(os.path.join(s.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    if results["schedulers"]:
        plot(results, os.path.join(s.out, "attainment.png"))
    print(table(results))
    print(json.dumps(results["comparison"], indent=1))
    print(f"results in {s.out}/ ({results['elapsed_s'] / 60:.1f} min)")


if __name__ == "__main__":
    sys.exit(main())
