"""Command-line options of ``python -m examples.pd``, checked and resolved into
:class:`Settings`. Plain Python (no torch), so that the checks are tested without a GPU."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable, Sequence

from .workload import OUTPUTS, PROMPTS

SCHEDULERS = ("chunked", "streams", "static", "policy")
ALIASES = {"a": "chunked", "b": "streams", "c": "static", "d": "policy"}
DEFAULT_COUNTS = (0, 16, 24, 32, 48, 64, 96)  # and the device's SM count


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a sweep needs, resolved (``--quick`` applied, defaults filled in)."""

    layers: int
    requests: int
    rates: tuple[float, ...] | None  # None: from load_fractions of the estimated capacity
    load_fractions: tuple[float, ...]
    schedulers: tuple[str, ...]
    budgets: tuple[int, ...]
    ttft_slo_ms: float | None
    tpot_slo_ms: float | None
    ttft_slo_x: float
    tpot_slo_x: float
    max_slots: int
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
    static_candidates: int
    policy_headroom: float
    chunk: int
    piece_layers: int
    prefill_depth: int
    duration_cap_s: float | None
    stop_below: float
    poll_us: float
    attention: str
    profile: str | None
    profile_rounds: int
    profile_samples: int
    context: int
    seed: int
    out: str
    device: int
    quiet: bool
    quick: bool

    @property
    def max_len(self) -> int:
        """Tokens per KV slot: the longest prompt and the longest output."""
        return self.max_prompt + self.max_output


# name -> (value with --quick, value without) for the options --quick changes.
QUICK: dict[str, tuple[Any, Any]] = {
    "layers": (4, 32), "requests": (20, 80), "load_fractions": ((0.4, 0.7), (0.3, 0.5, 0.7, 0.9)),
    "budgets": ((1024,), (512, 1024, 2048, 4096)), "max_slots": (32, 96),
    "buckets": ((1, 8, 16, 32), (1, 8, 16, 32, 64, 128)), "layout_counts": ((0, 16, 32, 64), None),
    "static_candidates": (1, 3), "profile_rounds": (1, 2), "profile_samples": (5, 10),
    "max_output": (128, OUTPUTS.high), "output_median": (48.0, OUTPUTS.median),
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


def parser(doc: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m examples.pd", description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add = p.add_argument
    add("--quick", action="store_true", help="smoke run: 4 layers, 20 requests with outputs up to 128 tokens, "
        "2 rates, budget 1024, a short profile")
    add("--layers", type=int, help="decoder layers, 1 to 32 (default 32; 4 with --quick)")
    add("--requests", type=int, help="requests per run (default 80; 20 with --quick)")
    add("--rates", type=_list(float, "arrival rates (requests/s)"),
        help="arrival rates in requests/s (default: --load-fractions of the estimated capacity)")
    add("--load-fractions", type=_list(float, "fractions"),
        help="rates as fractions of the capacity estimated at start-up (default 0.3,0.5,0.7,0.9)")
    add("--schedulers", type=_list(_scheduler, f"schedulers among {', '.join(SCHEDULERS)} (or a, b, c, d)"),
        default=SCHEDULERS, help="which to run (default all: chunked,streams,static,policy)")
    add("--budgets", type=_list(int, "token budgets"), help="chunked-prefill token budgets (default 512,1024,2048,4096)")
    add("--ttft-slo-ms", type=float, help="TTFT SLO in ms (default: --ttft-slo-x times the longest prompt's prefill)")
    add("--tpot-slo-ms", type=float, help="TPOT SLO in ms (default: --tpot-slo-x times the reference decode step)")
    add("--ttft-slo-x", type=float, default=5.0, help="TTFT SLO over the prefill of a --max-prompt prompt alone (default 5)")
    add("--tpot-slo-x", type=float, default=5.0, help="TPOT SLO over the reference decode step alone (default 5)")
    add("--max-slots", type=int, help="KV slots, the most requests in flight (default 96; 32 with --quick)")
    add("--min-prompt", type=int, default=PROMPTS.low)
    add("--max-prompt", type=int, default=PROMPTS.high, help=f"longest prompt, tokens (default {PROMPTS.high})")
    add("--prompt-median", type=float, default=PROMPTS.median)
    add("--prompt-sigma", type=float, default=PROMPTS.sigma, help="log-normal sigma of prompt lengths (default 0.8)")
    add("--min-output", type=int, default=OUTPUTS.low)
    add("--max-output", type=int, help=f"longest output, tokens (default {OUTPUTS.high}; 128 with --quick)")
    add("--output-median", type=float, help=f"median output, tokens (default {OUTPUTS.median:g}; 48 with --quick)")
    add("--output-sigma", type=float, default=OUTPUTS.sigma)
    add("--buckets", type=_list(int, "batch sizes"), help="decode graph batch sizes (default 1,8,16,32,64,128, "
        "capped at --max-slots, which is always one)")
    add("--layout-counts", type=_list(int, "SM counts"), help="the policy's latency-side SM counts "
        "(default 0,16,24,32,48,64,96 and all SMs; those the device cannot split exactly are dropped)")
    add("--static-candidates", type=int, help="static splits to run (default 3; 1 with --quick)")
    add("--policy-headroom", type=float, default=0.05, help="the headroom argument of SplitPolicy (default "
        "0.05, the package's default)")
    add("--chunk", type=int, default=2048, help="prefill batch, tokens, of the overlapping schedulers (default 2048)")
    add("--piece-layers", type=int, help="layers per prefill piece (default layers/8, at least 1)")
    add("--prefill-depth", type=int, default=2, help="prefill pieces kept queued (default 2)")
    add("--duration-cap-s", type=float, help="cut every run off after this many seconds (default per run: the "
        "last arrival plus the time its longest request needs at the SLOs)")
    add("--stop-below", type=float, default=0.6, help="skip a configuration's higher rates once its attainment "
        "falls below this (default 0.6)")
    add("--poll-us", type=float, default=50.0, help="how long the host sleeps between looks at a step in "
        "flight, microseconds; 0 spins (default 50)")
    add("--attention", choices=("flash", "sdpa"), default="flash")
    add("--profile", help="read the latency profile from this JSON file instead of measuring it")
    add("--profile-rounds", type=int)
    add("--profile-samples", type=int)
    add("--context", type=int, default=2048, help="tokens per request in the reference decode step and the "
        "profile (default 2048)")
    add("--seed", type=int, default=0)
    add("--out", default="pd-results", help="directory for results.json, attainment.png, profile.json/png")
    add("--device", type=int, default=0)
    add("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def parse(argv: Sequence[str] | None = None, doc: str | None = None) -> Settings:
    """Parse and check ``argv``; bad input exits through ``argparse`` with a message."""
    p = parser(doc)
    a = p.parse_args(argv)
    values = vars(a)
    for name, (quick, normal) in QUICK.items():
        if values[name] is None:
            values[name] = quick if a.quick else normal
    if values["piece_layers"] is None:
        values["piece_layers"] = max(1, values["layers"] // 8)
    values["schedulers"] = tuple(dict.fromkeys(values["schedulers"]))
    settings = Settings(**values)
    error = check(settings)
    if error:
        p.error(error)
    return settings


def check(s: Settings) -> str | None:
    """The first problem with ``s``, or None."""
    positive = {"--layers": s.layers, "--requests": s.requests, "--max-slots": s.max_slots, "--chunk": s.chunk,
                "--piece-layers": s.piece_layers, "--prefill-depth": s.prefill_depth, "--min-prompt": s.min_prompt,
                "--min-output": s.min_output, "--static-candidates": s.static_candidates,
                "--profile-rounds": s.profile_rounds, "--profile-samples": s.profile_samples, "--context": s.context}
    for name, value in positive.items():
        if value < 1:
            return f"{name} must be at least 1, got {value}"
    if s.layers > 32:
        return f"--layers must be 32 or fewer (the model is Llama-3-8B-shaped), got {s.layers}"
    if s.piece_layers > s.layers:
        return f"--piece-layers ({s.piece_layers}) must not exceed --layers ({s.layers})"
    for name, lists in (("--rates", s.rates or ()), ("--load-fractions", s.load_fractions),
                        ("--buckets", s.buckets), ("--budgets", s.budgets)):
        if any(not v > 0 for v in lists):
            return f"{name} must all be positive, got {','.join(map(str, lists))}"
    if s.rates is not None and len(set(s.rates)) != len(s.rates):
        return f"--rates has repeated rates: {','.join(map(str, s.rates))}"
    for name, number in (("--ttft-slo-ms", s.ttft_slo_ms), ("--tpot-slo-ms", s.tpot_slo_ms),
                         ("--ttft-slo-x", s.ttft_slo_x), ("--tpot-slo-x", s.tpot_slo_x),
                         ("--duration-cap-s", s.duration_cap_s), ("--prompt-median", s.prompt_median),
                         ("--output-median", s.output_median)):
        if number is not None and not number > 0:
            return f"{name} must be positive, got {number}"
    if s.prompt_sigma < 0 or s.output_sigma < 0:
        return "--prompt-sigma and --output-sigma must not be negative"
    if s.max_prompt < s.min_prompt or s.max_output < s.min_output:
        return (f"need --min-prompt <= --max-prompt and --min-output <= --max-output, got "
                f"{s.min_prompt}/{s.max_prompt} and {s.min_output}/{s.max_output}")
    small = [b for b in s.budgets if b <= s.max_slots]
    if "chunked" in s.schedulers and small:
        return (f"--budgets must exceed --max-slots ({s.max_slots}) so that every decoding request fits an "
                f"iteration, got {','.join(map(str, small))}")
    if s.chunk > s.max_len:
        return f"--chunk ({s.chunk}) must not exceed --max-prompt + --max-output ({s.max_len})"
    if s.context >= s.max_len:
        return f"--context ({s.context}) must be below --max-prompt + --max-output ({s.max_len})"
    if s.layout_counts is not None and any(k < 0 for k in s.layout_counts):
        return "--layout-counts must not be negative"
    if not 0 <= s.policy_headroom < 1:
        return f"--policy-headroom must be at least 0 and below 1, got {s.policy_headroom}"
    if s.poll_us < 0:
        return f"--poll-us must not be negative, got {s.poll_us}"
    if not 0 <= s.stop_below <= 1:
        return f"--stop-below must be between 0 and 1, got {s.stop_below}"
    return None
