"""Prefill/decode multiplexing on a Llama-3-8B-shaped decoder (4 layers, decode requests with
2048 cached tokens each, prefill chunks of 2048 tokens): how long a latency profile over six
decode batch sizes takes, the host cost of SplitPolicy.step, and a graphed decode step's wall
time (the host waiting for each step) beside queued prefill when the layout alternates every
step, against a fixed layout, with full and with per-role ordering."""

from __future__ import annotations

import time
from typing import Any

import torch

from torch_green_contexts import SMPartition, sizing
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.policy import SplitPolicy

from .decoder import Decoder
from .stats import interleaved, summarize

BUCKETS = (1, 8, 16, 32, 64, 128)
SWITCH_BATCH = 64
PREFILL_IN_FLIGHT = 2


def _profile(decoder: Decoder, device: int, rounds: int, samples: int, progress: bool) -> sizing.LatencyProfile:
    return sizing.profile(decoder.decode_step, BUCKETS, load=decoder.prefill_chunk(), rounds=rounds,
                          samples=samples, warmup=2, graph=True, device_id=device, progress=progress)


def _policy_cost(prof: sizing.LatencyProfile, device: int, steps: int, slo_us: float) -> dict[str, Any]:
    """Host time of step() and done() over a batch-size trace that changes layout every few steps;
    no work is launched between them, so the events pass at once and are read every 8 steps."""
    counts = [0, *prof.counts]
    with Layouts(counts, device_id=device, ordering="per_role") as layouts:
        policy = SplitPolicy(prof, layouts, slo_us=slo_us)
        trace = [BUCKETS[(i // 3) % len(BUCKETS)] for i in range(steps)]
        clock = time.perf_counter_ns
        step_ns, done_ns, switched = [], [], 0
        for i, p in enumerate(trace):
            before = layouts.active
            t0 = clock()
            layout = policy.step(p)
            t1 = clock()
            policy.done()
            t2 = clock()
            step_ns.append(t1 - t0)
            done_ns.append(t2 - t1)
            switched += layout is not before
            if i % 1024 == 1023:
                torch.cuda.synchronize(device)
        torch.cuda.synchronize(device)
        return {"steps": steps, "switches": switched, "slo_us": slo_us,
                "step_us": summarize(t / 1e3 for t in step_ns[steps // 10:]),
                "done_us": summarize(t / 1e3 for t in done_ns[steps // 10:]),
                "chosen": policy.stats()["chosen"]}


def _alternating(decoder: Decoder, device: int, rounds: int, steps: int) -> dict[str, Any]:
    """Wall time of a graphed decode step of SWITCH_BATCH requests, the host waiting for each,
    while prefill chunks stay queued on the batch side: on a fixed layout of k SMs, and switching
    every step between k and k + one granule (so that the decode side never has fewer SMs than
    on the fixed layout), with full and with per-role ordering."""
    whole = SMPartition.from_device(device)
    g = whole.coscheduled_sm_count
    k = max(g, (whole.sm_count // 2) // g * g)
    other = k + g
    decode, prefill = decoder.decode_step(SWITCH_BATCH), decoder.prefill_chunk()
    with Layouts([k, other], device_id=device) as layouts:
        graphs = {}
        for layout in layouts:
            graphs[layout.sm_count] = (sizing.graphed(decode, layout.latency_stream),
                                       sizing.graphed(prefill, layout.batch_stream))
        variants: dict[str, tuple[tuple[int, ...], str]] = {
            f"fixed layout ({k} SMs)": ((k,), "full"),
            f"alternating {k}/{other}, full ordering": ((k, other), "full"),
            f"alternating {k}/{other}, per-role ordering": ((k, other), "per_role"),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        chunks: dict[str, list[tuple[int, float]]] = {name: [] for name in variants}
        end = torch.cuda.Event()
        for _, name in interleaved(list(variants), rounds, seed=1):
            cycle, ordering = variants[name]
            in_flight: list[torch.cuda.Event] = []
            launched = 0
            torch.cuda.synchronize(device)
            began = time.perf_counter()
            for i in range(steps + 10):
                t0 = time.perf_counter()
                layout = layouts.switch(cycle[i % len(cycle)], ordering=ordering)
                replay_decode, _ = graphs[layout.sm_count]
                with torch.cuda.stream(layout.latency_stream):
                    replay_decode()
                end.record(layout.latency_stream)
                in_flight = [e for e in in_flight if not e.query()]
                while len(in_flight) < PREFILL_IN_FLIGHT:
                    with torch.cuda.stream(layout.batch_stream):
                        graphs[layout.sm_count][1]()
                    done = torch.cuda.Event()
                    done.record(layout.batch_stream)
                    in_flight.append(done)
                    launched += 1
                end.synchronize()
                if i >= 10:  # the first steps of a variant warm up
                    times[name].append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize(device)
            chunks[name].append((launched, time.perf_counter() - began))
    out: dict[str, Any] = {"batch": SWITCH_BATCH, "latency_sms": [k, other], "steps_per_round": steps,
                           "rounds": rounds, "variants": {}}
    for name in variants:
        launched = sum(c for c, _ in chunks[name])
        seconds = sum(s for _, s in chunks[name])
        out["variants"][name] = {"wall_us": summarize(times[name]),
                                 "prefill_tokens_per_s": launched * decoder.chunk / seconds}
    return out


def run(device: int, layers: int = 4, rounds: int = 3, samples: int = 20, policy_steps: int = 20000,
        switch_steps: int = 200, progress: bool = True) -> dict[str, Any]:
    torch.manual_seed(0)
    decoder = Decoder(device, layers=layers, max_batch=max(BUCKETS))
    began = time.perf_counter()
    prof = _profile(decoder, device, rounds, samples, progress)
    profile_s = time.perf_counter() - began
    slo_us = 1.5 * (prof.latency(SWITCH_BATCH, prof.counts[-1], under_load=False) or 1000.0)
    return {
        "model": {"layers": layers, "hidden": 4096, "heads": "32 q / 8 kv x 128", "ffn": 14336,
                  "context_tokens": decoder.context, "prefill_chunk_tokens": decoder.chunk},
        "profile": {"buckets": list(BUCKETS), "counts": list(prof.counts), "seconds": profile_s,
                    "rounds": rounds, "samples": samples, "table": prof.table(), "data": prof.to_dict()},
        "policy": _policy_cost(prof, device, policy_steps, slo_us),
        "alternating": _alternating(decoder, device, rounds, switch_steps),
    }


def profile_from(result: dict[str, Any]) -> sizing.LatencyProfile:
    """The profile a run measured, for plotting."""
    import json

    return sizing.LatencyProfile.from_json(json.dumps(result["profile"]["data"]))


__all__: list[str] = ["run", "profile_from"]
