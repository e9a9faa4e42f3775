"""Command-line options of ``python -m examples.pd``, checked and resolved into
:class:`Settings`. Plain Python (no torch), so that the checks are tested without a GPU."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from typing import Any, Callable, Sequence

from ..engine.admission import ORDERS
from .workload import WORKLOADS, Lengths

SCHEDULERS = ("chunked", "streams", "static", "static-overlap", "pd", "pd-overlap", "policy")
DEFAULT_SCHEDULERS = ("chunked", "streams", "static", "static-overlap", "pd", "pd-overlap")
ALIASES = {"a": "chunked", "b": "streams", "c": "static", "d": "policy", "e": "static-overlap", "f": "pd",
           "g": "pd-overlap"}
DEFAULT_COUNTS = (0, 16, 24, 32, 48, 64, 96)  # and the device's SM count
DEFAULT_OVERLAPPED = ((16, 32), (16, 64), (32, 32), (32, 64), (48, 48))
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
    policy_headroom: float
    slack_share: float
    more_slack_shares: tuple[float, ...]
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


def _list(kind: Callable[[str], Any], what: str) -> Callable[[str], tuple[Any, ...]]:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            values = tuple(kind(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected at least one of {what}")
        return values
    return parse


def _scheduler(name: str) -> str:
    name = ALIASES.get(name.strip(), name.strip())
    if name not in SCHEDULERS:
        raise ValueError(name)
    return name


def _pair(text: str) -> tuple[int, int]:
    latency, _, batch = text.partition("/")
    return int(latency), int(batch)


def parser(doc: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m examples.pd", description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add = p.add_argument
    add("--quick", action="store_true", help="smoke run: 4 layers, runs of 20 requests or 2 s, 2 rates, one seed, "
        "budget 1024, a short profile, outputs up to 128 tokens")
    add("--layers", type=int, help="decoder layers, 1 to 32 (default 32; 4 with --quick)")
    add("--workload", choices=tuple(WORKLOADS), default="today", help="the trace's length mix: " + "; ".join(
        f"{w.name}: {w.about}" for w in WORKLOADS.values()) + " (default today)")
    add("--requests", type=int, help="a run's trace ends at this many requests or at --arrival-s of arrivals, "
        "whichever comes first (default 300; 20 with --quick)")
    add("--arrival-s", type=float, help="seconds of arrivals after which a run's trace ends (default 15; 2 with --quick)")
    add("--rates", type=_list(float, "arrival rates (requests/s)"),
        help="the coarse arrival rates in requests/s (default: --load-fractions of the estimated capacity)")
    add("--load-fractions", type=_list(float, "fractions"),
        help="coarse rates as fractions of the capacity estimated at start-up (default 0.3,0.6,0.9)")
    add("--seeds", type=_list(int, "seeds"), help="trace seeds; the first also seeds the weights (default 1,2; 1 with --quick)")
    add("--schedulers", type=_list(_scheduler, f"schedulers among {', '.join(SCHEDULERS)} (or a-g)"),
        default=DEFAULT_SCHEDULERS, help=f"which to run (default {','.join(DEFAULT_SCHEDULERS)})")
    add("--admission", type=_list(_order, f"orders among {', '.join(ORDERS)}"), default=ORDERS,
        help="admission orders every scheduler runs with: fcfs, spf (shortest prompt first with aging) (default both)")
    add("--aging-ms", type=float, help="a request waiting this long goes ahead under spf (default half its TTFT SLO)")
    add("--budgets", type=_list(int, "token budgets"), help="chunked-prefill token budgets, decode rows included (default 128,256,512,1024,2048)")
    add("--ttft-slo-ms", type=float, help="TTFT SLO in ms (default: --ttft-slo-x times the longest prompt's prefill)")
    add("--ttft-slo-ms-per-token", type=float, help="a request's TTFT SLO grows with its prompt: the larger of "
        "the TTFT SLO and this many ms a prompt token (SGLang's rule for 8B models: 1) (default: one SLO for all)")
    add("--tpot-slo-ms", type=float, help="TPOT SLO in ms (default: --tpot-slo-x times the reference decode step)")
    add("--ttft-slo-x", type=float, default=5.0, help="TTFT SLO over the prefill of a --max-prompt prompt alone (default 5)")
    add("--tpot-slo-x", type=float, default=5.0, help="TPOT SLO over the reference decode step alone (default 5)")
    add("--max-slots", type=int, help="KV slots, the most requests in flight (default: as many as 85%% of the free "
        "memory holds beside the weights, at most 96; 32 with --quick)")
    add("--min-prompt", type=int, help="shortest prompt, tokens (default: the workload's)")
    add("--max-prompt", type=int, help="longest prompt, tokens (default: the workload's)")
    add("--prompt-median", type=float, help="median prompt, tokens (default: the workload's)")
    add("--prompt-sigma", type=float, help="log-normal sigma of prompt lengths (default: the workload's)")
    add("--min-output", type=int, help="shortest output, tokens (default: the workload's)")
    add("--max-output", type=int, help="longest output, tokens (default: the workload's; 128 with --quick)")
    add("--output-median", type=float, help="median output, tokens (default: the workload's; 48 with --quick)")
    add("--output-sigma", type=float, help="log-normal sigma of output lengths (default: the workload's)")
    add("--buckets", type=_list(int, "batch sizes"), help="decode graph batch sizes (default 1,8,16,32,64,128, "
        "capped at --max-slots, which is always one)")
    add("--layout-counts", type=_list(int, "SM counts"), help="disjoint layouts' latency-side SM counts "
        "(default 0,16,24,32,48,64,96 and all SMs; those the device cannot split exactly are dropped)")
    add("--overlapped", type=_list(_pair, "latency/batch floor pairs"), default=DEFAULT_OVERLAPPED,
        help="overlapped layouts as latency/batch floors (default " + ",".join(f"{a}/{b}" for a, b in DEFAULT_OVERLAPPED) + ")")
    add("--static-candidates", type=int, help="static splits (and overlapped layouts) to run (default 3; 1 with --quick)")
    add("--policy-headroom", type=float, default=0.05, help="the headroom argument of both policies (default 0.05)")
    add("--slack-share", type=float, default=0.5, help="the slack_share argument of PrefillDecodePolicy (default 0.5)")
    add("--more-slack-shares", type=_list(float, "slack shares"), default=(),
        help="further slack_share values the two-SLO policies also run at, each a configuration of its own "
        "(labelled 'slack S'); 0 keeps each step's modelled p99 within the TPOT budget unless a waiting prompt is "
        "late, for the P99 metric (default: none)")
    add("--chunk", type=int, default=2048, help="prefill batch, tokens, of the overlapping schedulers (default 2048)")
    add("--piece-layers", type=int, help="layers per prefill piece (default layers/8, at least 1)")
    add("--prefill-depth", type=int, default=2, help="prefill pieces kept queued (default 2)")
    add("--duration-cap-s", type=float, help="cut every run off after this many seconds (default per run: the "
        "last arrival plus the time its longest request needs at the SLOs)")
    add("--stop-below", type=float, default=0.6, help="skip a configuration's higher coarse rates once its attainment "
        "falls below this and it misses the P99 SLOs (default 0.6)")
    add("--min-rates", type=int, help="measured rates wanted around each refined knee (default 5; 2 with --quick)")
    add("--max-rates", type=int, help="most rates per configuration and seed (default 8; 3 with --quick)")
    add("--time-budget-s", type=float, help="start no run that would end later than this after start-up; the "
        "results say what is left, and --resume continues (default: no limit)")
    add("--resume", help="an earlier results.json: its runs with the same settings are reused, not repeated (default: none)")
    add("--rerun", type=_list(_scheduler, "schedulers"), default=(), help="schedulers whose runs in the --resume file "
        "are dropped and made again, after a change to how they run (default: none)")
    add("--poll-us", type=float, default=50.0, help="how long the host sleeps between looks at a step in "
        "flight, microseconds; 0 spins (default 50)")
    add("--attention", choices=("flash", "sdpa"), default="flash", help="decode attention (default flash)")
    add("--profile", help="the split policy's latency profile (sizing.profile JSON) to read instead of measuring it (default: measure it)")
    add("--layout-profile", help="the layout profile (sizing.profile_layouts JSON) to read instead of measuring it (default: measure it)")
    add("--profile-rounds", type=int, help="rounds of the profiles (default 2; 1 with --quick)")
    add("--profile-samples", type=int, help="timed calls per profile variant and round (default 10; 5 with --quick)")
    add("--context", type=int, default=2048, help="tokens per request in the reference decode step and the "
        "split policy's profile (default 2048)")
    add("--out", default="pd-results", help="directory for results.json, the plots and the profiles (default pd-results)")
    add("--device", type=int, default=0, help="CUDA device (default 0)")
    add("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def _order(name: str) -> str:
    if name.strip() not in ORDERS:
        raise ValueError(name)
    return name.strip()


def parse(argv: Sequence[str] | None = None, doc: str | None = None) -> Settings:
    """Parse and check ``argv``; bad input exits through ``argparse`` with a message."""
    p = parser(doc)
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
    for name in ("schedulers", "admission", "seeds", "overlapped", "rerun", "more_slack_shares"):
        values[name] = tuple(dict.fromkeys(values[name]))
    settings = Settings(**values)
    error = check(settings)
    if error:
        p.error(error)
    return settings


def policy_shares(s: Settings) -> list[tuple[str, float]]:
    """The two-SLO policies' configurations as (label, slack_share): --slack-share unlabelled
    (as sweeps before --more-slack-shares recorded it), then each of --more-slack-shares."""
    return [("", s.slack_share)] + [(f"slack {v:g}", v) for v in s.more_slack_shares]


def with_earlier_shares(s: Settings, earlier_settings: dict[str, Any]) -> Settings:
    """``s`` with the --more-slack-shares of the sweep it resumes added: a resumed sweep keeps
    every share it has run, so that leaving the option out does not drop their runs from the
    choice of the best configuration."""
    shares = tuple(dict.fromkeys(s.more_slack_shares + tuple(float(v) for v in
                                                             earlier_settings.get("more_slack_shares") or ())))
    return s if shares == s.more_slack_shares else dataclasses.replace(s, more_slack_shares=shares)


def settings_dict(s: Settings) -> dict[str, Any]:
    """``s`` as the results file records it (JSON types)."""
    return json.loads(json.dumps(dataclasses.asdict(s)))  # type: ignore[no-any-return]


def check(s: Settings) -> str | None:
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
    if not 0 <= s.slack_share <= 1:
        return f"--slack-share must be between 0 and 1, got {s.slack_share}"
    if any(not 0 <= v <= 1 for v in s.more_slack_shares):
        return f"--more-slack-shares must all be between 0 and 1, got {','.join(map(str, s.more_slack_shares))}"
    if s.slack_share in s.more_slack_shares:
        return f"--more-slack-shares repeats --slack-share ({s.slack_share:g}), which runs anyway"
    labels = [label for label, _ in policy_shares(s)]
    if len(set(labels)) < len(labels):
        return (f"--more-slack-shares {','.join(map(str, s.more_slack_shares))} differ in digits their labels "
                "(6 significant digits) do not show: give shares that differ within 6 digits")
    if s.poll_us < 0:
        return f"--poll-us must not be negative, got {s.poll_us}"
    if not 0 <= s.stop_below <= 1:
        return f"--stop-below must be between 0 and 1, got {s.stop_below}"
    for name, path in (("--profile", s.profile), ("--layout-profile", s.layout_profile), ("--resume", s.resume)):
        if path is not None and not os.path.isfile(path):
            return f"{name} {path}: no such file"
    return None
