"""Targets, tables and plots of the prefill/decode suite (benchmarks/pd.py); no GPU needed."""

from __future__ import annotations

import json
import os
from typing import Any

from .stats import target

PROFILE_GOAL_S = 120.0
STEP_GOAL_US = 5.0
ALTERNATING_GOAL = 1.1


def _fixed_and(pd: dict[str, Any], ordering: str) -> tuple[dict[str, Any], dict[str, Any]]:
    variants = pd["alternating"]["variants"]
    fixed = next(v for name, v in variants.items() if name.startswith("fixed"))
    other = next(v for name, v in variants.items() if name.endswith(f"{ordering} ordering"))
    return fixed, other


def targets(pd: dict[str, Any]) -> list[dict[str, Any]]:
    prof, policy = pd["profile"], pd["policy"]
    fixed, per_role = _fixed_and(pd, "per-role")
    _, full = _fixed_and(pd, "full")
    ratio = per_role["wall_us"]["p99"] / fixed["wall_us"]["p99"]
    return [
        target(f"profile of {len(prof['buckets'])} decode batch sizes x {len(prof['counts'])} SM counts",
               prof["seconds"], PROFILE_GOAL_S, unit="s",
               detail=f"{prof['rounds']} rounds x {prof['samples']} samples, graphed"),
        target("SplitPolicy.step host cost (median)", policy["step_us"]["median"], STEP_GOAL_US, unit="us",
               detail=f"p99 {policy['step_us']['p99']:.2f} us; done() median {policy['done_us']['median']:.2f} us; "
                      f"{policy['switches']} switches in {policy['steps']} steps"),
        target("decode p99, layout alternating every step with per-role ordering / fixed layout", ratio,
               ALTERNATING_GOAL, unit="x",
               detail=f"{per_role['wall_us']['p99']:.0f} vs {fixed['wall_us']['p99']:.0f} us; full ordering "
                      f"{full['wall_us']['p99']:.0f} us"),
    ]


def markdown(pd: dict[str, Any]) -> list[str]:
    m, prof, policy, alt = pd["model"], pd["profile"], pd["policy"], pd["alternating"]
    lines = [f"## Prefill/decode: a Llama-3-8B-shaped decoder of {m['layers']} layers "
             f"({m['context_tokens']} cached tokens per decode request, prefill chunks of "
             f"{m['prefill_chunk_tokens']} tokens)", ""]
    lines += [f"Profile of the graphed decode step: {len(prof['buckets'])} batch sizes x {len(prof['counts'])} SM "
              f"counts in {prof['seconds']:.1f} s ({prof['rounds']} rounds x {prof['samples']} samples).", "",
              prof["table"], ""]
    lines += [f"SplitPolicy.step host cost ({policy['steps']} steps, {policy['switches']} switches): median "
              f"{policy['step_us']['median']:.2f} us, p90 {policy['step_us']['p90']:.2f} us, p99 "
              f"{policy['step_us']['p99']:.2f} us; done(): median {policy['done_us']['median']:.2f} us.", ""]
    lines += [f"Decode step of {alt['batch']} requests (graph replay, host waits for each step; wall time) "
              f"beside queued prefill ({alt['rounds']} interleaved rounds x {alt['steps_per_round']} steps):", "",
              "| variant | p50 us | p90 us | p99 us | max us | prefill tokens/s |", "|---|---:|---:|---:|---:|---:|"]
    for name, v in alt["variants"].items():
        w = v["wall_us"]
        lines.append(f"| {name} | {w['median']:.0f} | {w['p90']:.0f} | {w['p99']:.0f} | {w['max']:.0f} | "
                     f"{v['prefill_tokens_per_s']:.0f} |")
    return lines + [""]


def plots(pd: dict[str, Any], out_dir: str) -> list[str]:
    """profile.png: the decode step's p99 under prefill against the SM count, per batch size."""
    from torch_green_contexts._plotting import pyplot_if_installed
    from torch_green_contexts.sizing import LatencyProfile

    if pyplot_if_installed() is None:
        return []
    path = os.path.join(out_dir, "profile.png")
    return [LatencyProfile.from_json(json.dumps(pd["profile"]["data"])).plot(path)]
