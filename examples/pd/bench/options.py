"""The command line's options of ``python -m examples.pd`` (and of the simulator, which takes
the same ones), with their defaults and help. Plain Python."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from ..engine.admission import ORDERS
from .workload import WORKLOADS

SCHEDULERS = ("chunked", "streams", "static", "static-overlap", "pd", "pd-overlap", "policy")
DEFAULT_SCHEDULERS = ("chunked", "streams", "static", "static-overlap", "pd", "pd-overlap")
ALIASES = {"a": "chunked", "b": "streams", "c": "static", "d": "policy", "e": "static-overlap", "f": "pd",
           "g": "pd-overlap"}
DEFAULT_OVERLAPPED = ((16, 32), (16, 64), (32, 32), (32, 64), (48, 48))


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


def parser(doc: str | None = None, prog: str = "python -m examples.pd") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add = p.add_argument
    add("--quick", action="store_true", help="smoke run: 4 layers, runs of 20 requests or 2 s, 2 rates, one seed, "
        "budget 1024, a short profile, outputs up to 128 tokens")
    add("--layers", type=int, help="decoder layers, 1 to 32 (default 32; 4 with --quick)")
    add("--workload", choices=tuple(WORKLOADS), default="today", help="the trace's length mix: " + "; ".join(
        f"{w.name}: {w.about}" for w in WORKLOADS.values()) + " (default today)")
    add("--arrivals", default="poisson", help="when requests arrive: poisson, gamma:CV (bursty gaps of that "
        "coefficient of variation, e.g. gamma:4) or rate-step[:LOW,HIGH,PERIOD] (the rate LOW then HIGH times the "
        "given one, PERIOD seconds each; default 0.4,1.6,10); goodput is read at the mean rate (default poisson)")
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
    add("--static-splits", type=_list(int, "decode SM counts"),
        help="the static splits to run instead of the planner's candidates (decode SMs each; the planner's "
        "predictions are still recorded), e.g. its choice beside an earlier best in one call (default: the planner's)")
    add("--static-candidates", type=int, help="static splits (and overlapped layouts) to run (default 3; 1 with --quick)")
    add("--policy-headroom", type=float, default=0.05, help="the headroom argument of both policies (default 0.05)")
    add("--slack-share", type=float, default=0.5, help="the slack_share argument of PrefillDecodePolicy (default 0.5)")
    add("--more-slack-shares", type=_list(float, "slack shares"), default=(),
        help="further slack_share values the two-SLO policies also run at, each a configuration of its own "
        "(labelled 'slack S'); 0 keeps each step's modelled p99 within the TPOT budget unless a waiting prompt is "
        "late, for the P99 metric (default: none)")
    add("--policy-modes", type=_list(_mode, "modes among distserve, p99"), default=("distserve", "p99"),
        help="further configurations of the two-SLO policies, one per mode of PrefillDecodePolicy: anchored at the "
        "planned best static split for the mode's metric, with the worst-case guard, a dwell, KV pressure and the "
        "mixed-batch fallback (labelled 'distserve mode', 'p99 mode'; 'none' runs none) (default distserve,p99)")
    add("--policy-guard", type=_list(_mode, "modes among distserve, p99"), default=("p99",),
        help="the modes whose configuration sizes decode by the worst-case guard ('none': neither); under "
        "overload the guard holds SMs from prefill that DistServe's metric would rather spend (default p99)")
    add("--policy-dwell", type=int, default=16, help="steps those configurations stay on a layout before giving "
        "decode fewer SMs (default 16)")
    add("--policy-kv-pressure", type=_list(float, "two shares, high,low"), default=(0.85, 0.3),
        help="the KV shares in use above which decode goes first and below which prefill does (default 0.85,0.3)")
    add("--policy-pause", type=_list(float, "SLACK_MS[,GAP_SHARE]"), default=None,
        help="the P99 mode pauses decode while a waiting prompt has less than SLACK_MS of TTFT slack, paid for out of "
        "GAP_SHARE of the token gaps (PrefillDecodePolicy's pause_slack_us, pause_gap_share; default share 0.005) "
        "(default: no pause)")
    add("--policy-mixed-tokens", type=int, default=256, help="most waiting prompt tokens those configurations run as "
        "one mixed batch on the whole device when it fits the TPOT SLO; 0: never (default 256)")
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
    add("--calibration", help="the simulator's calibration (calibration.json of an earlier sweep or of "
        "--calibrate-only) to keep instead of measuring it again (default: measure it, about a minute)")
    add("--calibrate-only", action="store_true", help="measure what the simulator needs (reference costs, the layout "
        "profile, the calibration), write them to --out and stop before any run")
    add("--trace-runs", action="store_true", help="record every run's device timeline (each decode step, prefill "
        "piece and chunked iteration, with CUDA events) in --out/timelines/ (default: no)")
    add("--layout-profile", help="the layout profile (sizing.profile_layouts JSON) to read instead of measuring it (default: measure it)")
    add("--profile-rounds", type=int, help="rounds of the profiles (default 2; 1 with --quick)")
    add("--profile-samples", type=int, help="timed calls per profile variant and round (default 10; 5 with --quick)")
    add("--context", type=int, default=2048, help="tokens per request in the reference decode step and the "
        "split policy's profile (default 2048)")
    add("--out", default="pd-results", help="directory for results.json, the plots and the profiles (default pd-results)")
    add("--device", type=int, default=0, help="CUDA device (default 0)")
    add("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def _mode(name: str) -> str:
    if name.strip() not in ("distserve", "p99", "none"):
        raise ValueError(name)
    return name.strip()


def _order(name: str) -> str:
    if name.strip() not in ORDERS:
        raise ValueError(name)
    return name.strip()


