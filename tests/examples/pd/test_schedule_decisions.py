"""The engine's step-shaped schedulers make the decisions the whole-trace loops they replaced
made (examples/pd/loops.py as of commit fc0c7dc): on a virtual clock, a recording device answers
every launch, and every call it sees (lane choices with the step's figures, decode rows and
buckets, prefill pieces, chunked iterations, markers) and every request's times must match the
calls recorded from those loops with the same device, traces, orders, SLOs and caps
(data/schedules.json.gz). No GPU."""

from __future__ import annotations

import gzip
import json
import math
import pathlib

import pytest

from examples.pd.bench.workload import Lengths, make_trace
from examples.pd.engine.admission import Order
from examples.pd.engine.planning import PrefillCursor
from examples.pd.engine.request import Slo
from tests.examples.pd.serving import LoopSettings, run_chunked, run_overlap

RECORDED = pathlib.Path(__file__).parent / "data" / "schedules.json.gz"
BUCKETS = (1, 2, 4, 8)
LAYERS = 4
COST = {"idle": 1.0, "a": 1.0, "b": 1.6, "c": 1.3}  # per-lane speed: choices change the timing


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class Done:
    def __init__(self, clock: Clock, at: float) -> None:
        self.clock, self.at = clock, at

    def done(self) -> bool:
        return self.clock.now() >= self.at

    def ready(self) -> bool:
        return self.done()


class Lane:
    def __init__(self, key: str) -> None:
        self.key = key


class RecordingDevice:
    """Two streams in launch order; a lane choice that reacts to the step's figures; every call
    logged with the clock's time."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.busy, self.log = clock, {"latency": 0.0, "batch": 0.0}, []

    def _run(self, stream, cost):
        start = max(self.clock.t, self.busy[stream])
        self.busy[stream] = start + cost
        return Done(self.clock, start + cost)

    def decode_lane(self, bucket, state):
        if state.prefill_tokens == 0:
            key = "a"
        elif state.ttft_slack_s is not None and state.ttft_slack_s < 0.05:
            key = "c"
        else:
            key = "b"
        self.log.append([self.clock.t, "decode_lane", bucket, state.context_tokens, state.prefill_tokens,
                         round(state.tpot_slack_s, 9) if state.tpot_slack_s != math.inf else "inf",
                         None if state.ttft_slack_s is None else round(state.ttft_slack_s, 9), key])
        return Lane(key)

    def idle_lane(self):
        self.log.append([self.clock.t, "idle_lane"])
        return Lane("idle")

    def decode(self, lane, rows, bucket, joining):
        self.log.append([self.clock.t, "decode", lane.key, [list(r) for r in rows], bucket, len(joining)])
        return self._run("latency", COST[lane.key] * (1e-3 + 2e-4 * bucket))

    def prefill(self, lane, piece):
        self.log.append([self.clock.t, "prefill", lane.key, piece.batch.id,
                         [[p.live.request.id, p.start, p.length, p.completes] for p in piece.batch.parts],
                         piece.first_layer, piece.last_layer])
        return self._run("batch", 2e-6 * piece.batch.tokens * (piece.last_layer - piece.first_layer) / COST[lane.key])

    def prefill_marker(self, lane):
        self.log.append([self.clock.t, "marker", lane.key])
        return Done(self.clock, self.busy["batch"])

    def mixed_tokens(self) -> int:
        return 0

    def paused(self) -> bool:
        return False

    def iteration(self, plan, bucket):
        self.log.append([self.clock.t, "iteration", [list(live.decode_row()) for live in plan.decode],
                         [[p.live.request.id, p.start, p.length, p.completes] for p in plan.parts], bucket])
        return self._run("latency", 1e-3 + 2e-4 * len(plan.decode) + 2e-6 * LAYERS * plan.tokens)


def recorded() -> list[dict]:
    with gzip.open(RECORDED, "rt") as f:
        return json.load(f)


def replay(case: dict) -> tuple[list, dict]:
    slo = None if case["slo"] is None else Slo(*case["slo"])
    order = Order("spf", aging_s=0.02) if case["order"] == "spf" else Order("fcfs")
    requests = make_trace(case["n"], case["rate"], seed=case["seed"], prompts=Lengths(16, 600, 120, 0.9),
                          outputs=Lengths(2, 60, 12, 0.8))
    clock = Clock()
    device = RecordingDevice(clock)
    settings = LoopSettings(slots=6, buckets=BUCKETS, cap_s=case["cap"], poll_s=case["poll"], order=order, slo=slo)
    if case["loop"] == "chunked":
        log = run_chunked(requests, device, 64, settings, clock)
    else:
        log = run_overlap(requests, device, PrefillCursor(96, LAYERS, 1, order), 2, settings, clock)
    run = {"requests": [[r.id, r.first_token, r.finish, r.tokens] for r in log.requests],
           "steps": [[s.launched, s.ended, s.batch, s.bucket, s.lane] for s in log.steps],
           "duration": log.duration, "cut_off": log.cut_off, "gaps": len(log.gaps), "gap_sum": sum(log.gaps)}
    return device.log, run


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9,
                                                                                             abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


CASES = recorded()


def test_the_recording_covers_both_schedulers_orders_slos_and_a_cut_off():
    cases = [c["case"] for c in CASES]
    assert {c["loop"] for c in cases} == {"chunked", "overlap"} and {c["order"] for c in cases} == {"fcfs", "spf"}
    assert any(c["slo"] and c["slo"][2] for c in cases) and any(c["cap"] < 1 for c in cases)
    assert any(c["run"]["cut_off"] for c in CASES) and sum(len(c["calls"]) for c in CASES) > 10_000


@pytest.mark.parametrize("index", range(len(CASES)))
def test_the_same_trace_gives_the_same_schedule(index):
    expected = CASES[index]
    calls, run = replay(expected["case"])
    assert len(calls) == len(expected["calls"])
    for i, (got, want) in enumerate(zip(calls, expected["calls"])):
        assert same(got, want), f"call {i}: {got} != {want}"
    for key in ("requests", "steps", "duration", "cut_off", "gaps", "gap_sum"):
        assert same(run[key], expected["run"][key]), key
