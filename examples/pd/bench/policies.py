"""The two-SLO policy's configurations as a sweep makes them, on the GPU and the simulated GPU
alike: a slack share (the policy's budget rule alone), or a mode anchored at the planned best
static split for the mode's metric, with a dwell, the worst-case guard (the P99 mode's by
default), KV pressure and the mixed-batch fallback priced from the calibration's mixed iterations."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.sizing import LayoutProfile
from torch_green_contexts.step_policy import LayoutKey, LayoutSet, StepTimer

from ..engine.mixed import token_buckets
from ..engine.request import Slo
from ..sim.calibration import CalibrationError
from ..sim.costs import MixedCosts
from . import cli
from .planner import label_of

METRIC_OF_MODE = {"distserve": "distserve", "p99": "p99"}


def anchor_for(plan: dict[str, Any], scheduler: str, mode: str, keys: Sequence[LayoutKey]) -> LayoutKey | None:
    """The split of ``keys`` with the best predicted goodput under ``mode``'s metric in the
    static planner's ``plan`` (``scheduler``: the static scheduler it planned); None when it
    predicted none of them."""
    predicted = plan.get("predicted_goodput", {})
    metric = METRIC_OF_MODE[mode]
    scored = [(predicted[label_of(scheduler, k)][metric], k) for k in keys if label_of(scheduler, k) in predicted]
    return max(scored, key=lambda gk: gk[0])[1] if scored else None


def mixed_step_us(calibration: dict[str, Any], mixed_tokens: int) -> Callable[[int, int, int], float]:
    """A mixed pass's microseconds (decode batch, context tokens, prompt tokens), from the
    calibration's mixed iterations, its prompt rows padded to the buckets of ``mixed_tokens``."""
    costs = MixedCosts.of(calibration)
    if costs is None:
        raise CalibrationError("the mixed-batch fallback is priced from the calibration's mixed iterations, "
                               "and this calibration has none (calibrate with --attention flash)")
    buckets = token_buckets(mixed_tokens, calibration["model"]["max_len"])

    def us(batch: int, context_tokens: int, prompt_tokens: int) -> float:
        bucket = next((t for t in buckets if t >= prompt_tokens), prompt_tokens)
        return costs.us(bucket, context_tokens, prompt_tokens * (prompt_tokens + 1) // 2)

    return us


def share_policy(profile: LayoutProfile, layouts: LayoutSet, slo: Slo, s: cli.Settings, share: float,
                 timer: StepTimer | None = None) -> PrefillDecodePolicy:
    """The budget rule alone at slack share ``share`` (the configurations labelled by share)."""
    return PrefillDecodePolicy(profile, layouts, tpot_slo_us=slo.tpot * 1e6, headroom=s.policy_headroom,
                               slack_share=share, timer=timer)


def mode_policy(profile: LayoutProfile, layouts: LayoutSet, slo: Slo, s: cli.Settings, mode: str,
                anchor: LayoutKey | None, mixed_us: Callable[[int, int, int], float] | None,
                timer: StepTimer | None = None) -> PrefillDecodePolicy:
    """A mode's configuration: anchored at ``anchor``, with the dwell of the settings and the
    worst-case guard where their ``policy_guard`` names the mode; in ``"distserve"`` mode also
    their KV pressure and (with ``mixed_us``) the mixed-batch fallback. The P99 mode leaves both
    out: each runs steps up to the budget's edge (prefill first at low KV use gives decode fewer
    SMs than the anchor; a mixed step takes what it may), and the P99 of the time between tokens
    is that edge. The P99 mode pauses decode for late prompts where the settings' ``policy_pause`` says."""
    pressure = s.policy_kv_pressure if mode == "distserve" else None
    mixed = mixed_us if mode == "distserve" and s.policy_mixed_tokens else None
    pause = s.policy_pause if mode == "p99" else None
    pausing: dict[str, Any] = {}
    if pause:
        pausing["pause_slack_us"] = pause[0] * 1e3
        if len(pause) > 1:
            pausing["pause_gap_share"] = pause[1]
    return PrefillDecodePolicy(
        profile, layouts, tpot_slo_us=slo.tpot * 1e6, headroom=s.policy_headroom, slack_share=s.slack_share,
        mode=mode, anchor=anchor, guard=mode in s.policy_guard, dwell_steps=s.policy_dwell,
        kv_pressure=(pressure[0], pressure[1]) if pressure else None,
        mixed_step_us=mixed, mixed_tokens=max(1, s.policy_mixed_tokens), timer=timer, **pausing)
