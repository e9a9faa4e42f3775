"""``python -m examples.pd.prefill_bound --calibration C [sweep options]``: how fast prefill alone could serve a sweep point's
traces, an upper bound on every scheduler's P99 goodput there. Each seed's trace at each rate
(the sweep's own traces: ``--workload``, ``--arrivals``, ``--requests``, ``--arrival-s``) is
prefilled one prompt at a time in pieces of ``--chunk`` tokens, at the idle speed of the
calibration's lane with the most prefill SMs and with no decode beside it, first come first
served and shortest prompt first; the time to first token of each request is its prompt's
wait and prefill. The highest rate at which the P99 of TTFT over each request's SLO stays within
it is what a server that also decodes cannot beat under the P99 metric (decode only slows
prefill down). No GPU needed; the bound is simulated from the calibration, as labelled."""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
from typing import Any, Sequence

from torch_green_contexts.sizing import percentile

from ..engine.request import Request, Slo
from ..sim.calibration import CalibrationError, load_calibration
from ..sim.costs import LaneCosts
from . import cli
from .traces import trace_for

ORDERS = ("fcfs", "spf")


def prefill_s(costs: LaneCosts, prompt: int, chunk: int, layers: int) -> float:
    """Seconds to prefill ``prompt`` tokens alone in pieces of ``chunk`` tokens (every layer)."""
    total, start = 0.0, 0
    while start < prompt:
        tokens = min(chunk, prompt - start)
        pairs = tokens * start + tokens * (tokens + 1) // 2
        total += costs.prefill_us(tokens, pairs, layers)[0]
        start += tokens
    return total * 1e-6


def ttft_p99_share(trace: Sequence[Request], seconds: dict[int, float], slo: Slo, order: str,
                   slots: int | None = None, decode_s: dict[int, float] | None = None) -> float:
    """The P99 over the requests of TTFT over each one's TTFT SLO, prefilled one at a time in
    ``order`` (``seconds``: each request's prefill time by id). With ``slots``, a prompt's
    prefill also waits for one of that many KV slots, each held from a prefill's start until its
    request's last token, ``decode_s`` (by id) after its first."""
    pending = sorted(trace, key=lambda r: r.arrival)
    waiting: list[tuple[float, int, Request]] = []
    held: list[float] = []  # when each held slot frees
    shares, now, i = [], 0.0, 0
    while i < len(pending) or waiting:
        if slots is not None and len(held) >= slots:
            now = max(now, heapq.heappop(held))
        if not waiting:
            now = max(now, pending[i].arrival)
        while i < len(pending) and pending[i].arrival <= now:
            r = pending[i]
            heapq.heappush(waiting, (r.prompt if order == "spf" else r.arrival, r.id, r))
            i += 1
        _, _, r = heapq.heappop(waiting)
        now += seconds[r.id]
        shares.append((now - r.arrival) / slo.ttft_for(r.prompt))
        if slots is not None:
            heapq.heappush(held, now + (decode_s or {}).get(r.id, 0.0))
    return percentile(shares, 99)


def bound(s: cli.Settings, costs: LaneCosts, chunk: int, layers: int, seed: int, rates: Sequence[float],
          slots: int | None = None, step_s: float = 0.0) -> dict[str, Any]:
    """For ``seed``: each rate's TTFT P99 share in either order, and the highest rate of
    ``rates`` (ascending) up to which the better order keeps it within the SLO (0: none). With
    ``slots``, each request holds a KV slot until its last token, a decode step of ``step_s``
    after each token."""
    assert s.ttft_slo_ms and s.tpot_slo_ms  # main() refuses settings without them
    slo = Slo(ttft=s.ttft_slo_ms / 1e3, tpot=s.tpot_slo_ms / 1e3, ttft_per_token=(s.ttft_slo_ms_per_token or 0.0) / 1e3)
    rows, highest = [], 0.0
    for rate in rates:
        trace = trace_for(s, rate, seed)
        seconds = {r.id: prefill_s(costs, r.prompt, chunk, layers) for r in trace}
        decode_s = {r.id: (r.output - 1) * step_s for r in trace}
        share = {order: ttft_p99_share(trace, seconds, slo, order, slots, decode_s) for order in ORDERS}
        rows.append({"rate": rate, "requests": len(trace), **{f"ttft_p99_share_{o}": share[o] for o in ORDERS}})
        if min(share.values()) > 1.0:
            break
        highest = rate
    return {"seed": seed, "highest_rate": highest, "rates": rows}


def fastest_decode_step_s(calibration: dict[str, Any]) -> float:
    """The quickest decode step the calibration timed, of any rows, on any lane, alone."""
    return float(min(statistics.median(p["idle_us"]) for lane in calibration["lanes"].values()
                     for p in lane["decode"])) * 1e-6


def fastest_prefill_lane(calibration: dict[str, Any]) -> tuple[str, LaneCosts]:
    """The lane whose prefill is quickest alone (a whole chunk's piece), and its costs."""
    chunk = int(calibration["settings"]["chunk"])
    lanes = {name: LaneCosts.fit(lane, chunk) for name, lane in calibration["lanes"].items()}
    name = min(lanes, key=lambda n: lanes[n].prefill_us(chunk, chunk * (chunk + 1) // 2, 1)[0])
    return name, lanes[name]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m examples.pd.prefill_bound", description=__doc__)
    p.add_argument("--step", type=float, default=0.02, help="rates rise by this share from 0.1 req/s (default 0.02)")
    p.add_argument("--max-rate", type=float, default=100.0, help="the highest rate tried (default 100)")
    p.add_argument("--json", help="write the bound here as JSON")
    args, rest = p.parse_known_args(argv)
    if not 0 < args.step <= 1 or not args.max_rate > 0.1:
        p.error(f"--step must be in (0, 1] and --max-rate above 0.1; got {args.step} and {args.max_rate}")
    s = cli.parse(rest)
    if not s.ttft_slo_ms or not s.tpot_slo_ms or not s.calibration:
        p.error("the bound needs a calibration (--calibration, of --calibrate-only) and the SLOs in milliseconds "
                "(--ttft-slo-ms, --tpot-slo-ms)")
    try:
        calibration = load_calibration(s.calibration)
    except CalibrationError as error:
        print(error, file=sys.stderr)
        return 2
    lane, costs = fastest_prefill_lane(calibration)
    chunk, layers = int(calibration["settings"]["chunk"]), int(calibration["model"]["layers"])
    rates, rate = [], 0.1
    while rate <= args.max_rate:
        rates.append(round(rate, 4))
        rate *= 1 + args.step
    slots = s.max_slots or int(calibration["model"]["slots"])
    step_s = fastest_decode_step_s(calibration)
    seeds = [bound(s, costs, chunk, layers, seed, rates) for seed in s.seeds]
    with_slots = [bound(s, costs, chunk, layers, seed, rates, slots, step_s) for seed in s.seeds]
    out = {"simulated": {"measured_on": calibration["device"]["name"], "calibration": s.calibration},
           "lane": lane, "chunk": chunk, "layers": layers, "workload": s.workload, "arrivals": s.arrivals,
           "slo": {"ttft_ms": s.ttft_slo_ms, "ttft_ms_per_token": s.ttft_slo_ms_per_token, "tpot_ms": s.tpot_slo_ms},
           "seeds": seeds, "slots": slots, "decode_step_ms": step_s * 1e3, "seeds_with_slots": with_slots}
    print(f"Prefill alone on lane {lane!r} ({calibration['device']['name']} calibration; simulated), "
          f"{s.workload}, {s.arrivals}: the highest rate with TTFT P99 within the SLO")
    for row, held in zip(seeds, with_slots):
        print(f"  seed {row['seed']}: {row['highest_rate']:.2f} req/s; {held['highest_rate']:.2f} req/s with {slots} "
              f"KV slots, each held to its request's last token at {step_s * 1e3:.2f} ms a token")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0
