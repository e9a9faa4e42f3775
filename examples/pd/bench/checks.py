"""The checks of the command line's settings: the first problem, in the option's words.
Plain Python."""

from __future__ import annotations

import os

from . import cli
from .arrivals import Arrivals


def check(s: cli.Settings) -> str | None:
    """The first problem with ``s``, or None."""
    positive = {"--layers": s.layers, "--requests": s.requests, "--chunk": s.chunk,
                "--piece-layers": s.piece_layers, "--prefill-depth": s.prefill_depth, "--min-prompt": s.min_prompt,
                "--min-output": s.min_output, "--static-candidates": s.static_candidates,
                "--profile-rounds": s.profile_rounds, "--profile-samples": s.profile_samples, "--context": s.context,
                "--min-rates": s.min_rates, "--max-rates": s.max_rates, "--max-slots": s.max_slots or 1}
    for name, value in positive.items():
        if value < 1:
            return f"{name} must be at least 1, got {value}"
    if s.layers > 32:
        return f"--layers must be 32 or fewer (the model is Llama-3-8B-shaped), got {s.layers}"
    if s.piece_layers > s.layers:
        return f"--piece-layers ({s.piece_layers}) must not exceed --layers ({s.layers})"
    if s.max_rates < s.min_rates:
        return f"--max-rates ({s.max_rates}) must be at least --min-rates ({s.min_rates})"
    for name, lists in (("--rates", s.rates or ()), ("--load-fractions", s.load_fractions),
                        ("--buckets", s.buckets), ("--budgets", s.budgets)):
        if any(not v > 0 for v in lists):
            return f"{name} must all be positive, got {','.join(map(str, lists))}"
    if s.rates is not None and len(set(s.rates)) != len(s.rates):
        return f"--rates has repeated rates: {','.join(map(str, s.rates))}"
    for name, number in (("--ttft-slo-ms", s.ttft_slo_ms), ("--ttft-slo-ms-per-token", s.ttft_slo_ms_per_token),
                         ("--tpot-slo-ms", s.tpot_slo_ms),
                         ("--ttft-slo-x", s.ttft_slo_x), ("--tpot-slo-x", s.tpot_slo_x), ("--aging-ms", s.aging_ms),
                         ("--duration-cap-s", s.duration_cap_s), ("--prompt-median", s.prompt_median),
                         ("--output-median", s.output_median), ("--arrival-s", s.arrival_s),
                         ("--time-budget-s", s.time_budget_s)):
        if number is not None and not number > 0:
            return f"{name} must be positive, got {number}"
    if s.prompt_sigma < 0 or s.output_sigma < 0:
        return "--prompt-sigma and --output-sigma must not be negative"
    if s.max_prompt < s.min_prompt or s.max_output < s.min_output:
        return (f"need --min-prompt <= --max-prompt and --min-output <= --max-output, got "
                f"{s.min_prompt}/{s.max_prompt} and {s.min_output}/{s.max_output}")
    small = [b for b in s.budgets if s.max_slots is not None and b <= s.max_slots]
    if "chunked" in s.schedulers and small:
        return (f"--budgets must exceed --max-slots ({s.max_slots}) so that every decoding request fits an "
                f"iteration, got {','.join(map(str, small))}")
    if s.chunk > s.max_len:
        return f"--chunk ({s.chunk}) must not exceed --max-prompt + --max-output ({s.max_len})"
    if s.context >= s.max_len:
        return f"--context ({s.context}) must be below --max-prompt + --max-output ({s.max_len})"
    if s.layout_counts is not None and any(k < 0 for k in s.layout_counts):
        return "--layout-counts must not be negative"
    if any(a < 0 or b < 0 for a, b in s.overlapped):
        return "--overlapped floors must not be negative"
    if not 0 <= s.policy_headroom < 1:
        return f"--policy-headroom must be at least 0 and below 1, got {s.policy_headroom}"
    if s.policy_dwell < 0 or s.policy_mixed_tokens < 0:
        return f"--policy-dwell and --policy-mixed-tokens must not be negative, got {s.policy_dwell}, " \
               f"{s.policy_mixed_tokens}"
    pressure = s.policy_kv_pressure
    if pressure is not None and not (len(pressure) == 2 and 0 <= pressure[1] < pressure[0] <= 1):
        return f"--policy-kv-pressure must be high,low with 0 <= low < high <= 1, got {','.join(map(str, pressure))}"
    pause = s.policy_pause
    if pause is not None and not (len(pause) in (1, 2) and pause[0] > 0 and (len(pause) == 1 or 0 < pause[1] < 0.01)):
        return (f"--policy-pause must be SLACK_MS[,GAP_SHARE] with SLACK_MS above 0 and GAP_SHARE above 0 and below "
                f"0.01, got {','.join(map(str, pause))}")
    if not 0 <= s.slack_share <= 1:
        return f"--slack-share must be between 0 and 1, got {s.slack_share}"
    if any(not 0 <= v <= 1 for v in s.more_slack_shares):
        return f"--more-slack-shares must all be between 0 and 1, got {','.join(map(str, s.more_slack_shares))}"
    if s.slack_share in s.more_slack_shares:
        return f"--more-slack-shares repeats --slack-share ({s.slack_share:g}), which runs anyway"
    labels = [label for label, _ in cli.policy_shares(s)]
    if len(set(labels)) < len(labels):
        return (f"--more-slack-shares {','.join(map(str, s.more_slack_shares))} differ in digits their labels "
                "(6 significant digits) do not show: give shares that differ within 6 digits")
    if s.poll_us < 0:
        return f"--poll-us must not be negative, got {s.poll_us}"
    if not 0 <= s.stop_below <= 1:
        return f"--stop-below must be between 0 and 1, got {s.stop_below}"
    try:
        Arrivals.parse(s.arrivals)
    except ValueError as error:
        return f"--arrivals: {error}"
    if s.calibrate_only and s.calibration:
        return "--calibrate-only measures the calibration: leave out --calibration"
    for name, path in (("--profile", s.profile), ("--layout-profile", s.layout_profile), ("--resume", s.resume),
                       ("--calibration", s.calibration)):
        if path is not None and not os.path.isfile(path):
            return f"{name} {path}: no such file"
    return None
