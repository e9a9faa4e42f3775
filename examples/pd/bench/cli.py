"""The settings of ``python -m examples.pd``: its options (``options.py``) parsed, checked
(``checks.py``) and resolved into :class:`Settings`. Plain Python, so that the checks are tested
without a GPU."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Sequence

from .checks import check
from .options import DEFAULT_SCHEDULERS, SCHEDULERS, parser
from .workload import WORKLOADS, Lengths

__all__ = ["DEFAULT_COUNTS", "DEFAULT_SCHEDULERS", "SCHEDULERS", "SPLITS", "Settings", "older_defaults", "parse",
           "parser", "policy_modes", "policy_shares", "settings_dict", "settings_from", "with_earlier_shares"]

DEFAULT_COUNTS = (0, 16, 24, 32, 48, 64, 96)  # and the device's SM count
# Settings whose default has changed, as results files written before them were made.
MADE_BEFORE: dict[str, Any] = {"policy_guard": ["distserve", "p99"]}
SPLITS = ("static", "static-overlap", "pd", "pd-overlap", "policy")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a sweep needs, resolved (``--quick`` and the workload applied, defaults
    filled in; ``max_slots`` None: sized from the free memory at start-up)."""

    layers: int
    requests: int
    arrival_s: float
    rates: tuple[float, ...] | None  # None: from load_fractions of the estimated capacity
    load_fractions: tuple[float, ...]
    seeds: tuple[int, ...]
    schedulers: tuple[str, ...]
    admission: tuple[str, ...]
    aging_ms: float | None
    budgets: tuple[int, ...]
    ttft_slo_ms: float | None
    ttft_slo_ms_per_token: float | None
    tpot_slo_ms: float | None
    ttft_slo_x: float
    tpot_slo_x: float
    max_slots: int | None
    workload: str
    arrivals: str
    min_prompt: int
    max_prompt: int
    prompt_median: float
    prompt_sigma: float
    min_output: int
    max_output: int
    output_median: float
    output_sigma: float
    buckets: tuple[int, ...]
    layout_counts: tuple[int, ...] | None  # None: DEFAULT_COUNTS and the device's SM count
    overlapped: tuple[tuple[int, int], ...]
    static_candidates: int
    static_splits: tuple[int, ...] | None  # None: the planner's candidates
    policy_headroom: float
    slack_share: float
    more_slack_shares: tuple[float, ...]
    policy_modes: tuple[str, ...]
    policy_guard: tuple[str, ...]
    policy_dwell: int
    policy_kv_pressure: tuple[float, ...] | None
    policy_mixed_tokens: int
    policy_pause: tuple[float, ...] | None
    chunk: int
    piece_layers: int
    prefill_depth: int
    duration_cap_s: float | None
    stop_below: float
    min_rates: int
    max_rates: int
    time_budget_s: float | None
    resume: str | None
    rerun: tuple[str, ...]
    poll_us: float
    attention: str
    profile: str | None
    layout_profile: str | None
    calibration: str | None
    calibrate_only: bool
    trace_runs: bool
    profile_rounds: int
    profile_samples: int
    context: int
    out: str
    device: int
    quiet: bool
    quick: bool

    @property
    def max_len(self) -> int:
        """Tokens per KV slot: the longest prompt and the longest output."""
        return self.max_prompt + self.max_output

    @property
    def prompts(self) -> Lengths:
        return Lengths(self.min_prompt, self.max_prompt, self.prompt_median, self.prompt_sigma)

    @property
    def outputs(self) -> Lengths:
        return Lengths(self.min_output, self.max_output, self.output_median, self.output_sigma)


# name -> (value with --quick, value without) for the options --quick changes.
QUICK: dict[str, tuple[Any, Any]] = {
    "layers": (4, 32), "requests": (20, 300), "arrival_s": (2.0, 15.0), "load_fractions": ((0.4, 0.7), (0.3, 0.6, 0.9)),
    "seeds": ((1,), (1, 2)), "budgets": ((1024,), (128, 256, 512, 1024, 2048)), "buckets": ((1, 8, 16, 32), (1, 8, 16, 32, 64, 128)),
    "layout_counts": ((0, 16, 32, 64), None), "static_candidates": (1, 3), "profile_rounds": (1, 2),
    "profile_samples": (5, 10), "min_rates": (2, 5), "max_rates": (3, 8),
}


def parse(argv: Sequence[str] | None = None, doc: str | None = None, prog: str = "python -m examples.pd") -> Settings:
    """Parse and check ``argv``; bad input exits through ``argparse`` with a message."""
    p = parser(doc, prog)
    a = p.parse_args(argv)
    values = dict(vars(a))
    for name, (quick, normal) in QUICK.items():
        if values[name] is None:
            values[name] = quick if a.quick else normal
    workload = WORKLOADS[a.workload]
    for side, lengths in (("prompt", workload.prompts), ("output", workload.outputs)):
        for field, bound in (("min", lengths.low), ("max", lengths.high)):
            if values[f"{field}_{side}"] is None:
                values[f"{field}_{side}"] = bound
        for field, shape in (("median", lengths.median), ("sigma", lengths.sigma)):
            if values[f"{side}_{field}"] is None:
                values[f"{side}_{field}"] = shape
    if a.quick:
        values["max_output"] = min(values["max_output"], 128) if a.max_output is None else a.max_output
        values["output_median"] = 48.0 if a.output_median is None else a.output_median
        values["max_slots"] = 32 if a.max_slots is None else a.max_slots
    if values["piece_layers"] is None:
        values["piece_layers"] = max(1, values["layers"] // 8)
    if a.calibrate_only:  # every lane a sweep may run on
        values["schedulers"] = DEFAULT_SCHEDULERS
    for name in ("schedulers", "admission", "seeds", "overlapped", "rerun", "more_slack_shares", "policy_modes",
                 "policy_guard"):
        values[name] = tuple(dict.fromkeys(values[name]))
    if values["static_splits"] is not None:
        values["static_splits"] = tuple(dict.fromkeys(values["static_splits"]))
    values["policy_modes"] = tuple(m for m in values["policy_modes"] if m != "none")
    values["policy_guard"] = tuple(m for m in ("distserve", "p99") if m in values["policy_guard"])
    settings = Settings(**values)
    error = check(settings)
    if error:
        p.error(error)
    return settings


def policy_shares(s: Settings) -> list[tuple[str, float]]:
    """The two-SLO policies' configurations as (label, slack_share): --slack-share unlabelled
    (as sweeps before --more-slack-shares recorded it), then each of --more-slack-shares."""
    return [("", s.slack_share)] + [(f"slack {v:g}", v) for v in s.more_slack_shares]


def policy_modes(s: Settings) -> list[tuple[str, str]]:
    """The two-SLO policies' configurations with the policy's own options, as (label, mode):
    each of --policy-modes, anchored at the planned best static split for its metric."""
    return [(f"{mode} mode", mode) for mode in s.policy_modes]


def with_earlier_shares(s: Settings, earlier_settings: dict[str, Any]) -> Settings:
    """``s`` with the --more-slack-shares of the sweep it resumes added: a resumed sweep keeps
    every share it has run, so that leaving the option out does not drop their runs from the
    choice of the best configuration."""
    shares = tuple(dict.fromkeys(s.more_slack_shares + tuple(float(v) for v in
                                                             earlier_settings.get("more_slack_shares") or ())))
    return s if shares == s.more_slack_shares else dataclasses.replace(s, more_slack_shares=shares)


def settings_from(recorded: dict[str, Any], **changes: Any) -> Settings:
    """The settings a results file records (``settings_dict``), with ``changes``; settings added
    since the file was written take their defaults. A ValueError names what does not fit."""
    defaults = older_defaults(recorded.get("workload", "today"))
    values = {**defaults, **{k: v for k, v in recorded.items() if k in defaults}, **changes}
    for name, field in Settings.__dataclass_fields__.items():
        value = values[name]
        if isinstance(value, list):
            values[name] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    settings = Settings(**values)
    error = check(settings)
    if error:
        raise ValueError(f"the recorded settings do not hold: {error}")
    return settings


def older_defaults(workload: str) -> dict[str, Any]:
    """The settings (``settings_dict``) a results file of ``workload`` that lacks some of them
    was made with: the defaults, or the values from before a default changed."""
    return {**settings_dict(parse(["--workload", workload])), **MADE_BEFORE}


def settings_dict(s: Settings) -> dict[str, Any]:
    """``s`` as the results file records it (JSON types)."""
    return json.loads(json.dumps(dataclasses.asdict(s)))  # type: ignore[no-any-return]


