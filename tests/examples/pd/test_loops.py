"""The prefill/decode example's scheduler loops (examples/pd/loops.py) against a simulated
device: virtual time, streams that run queued work in order, and costs per decode row and
prefill token. Checks the bookkeeping every scheduler relies on, without a GPU."""

from __future__ import annotations

import dataclasses

import pytest

from examples.pd.engine.admission import Order
from tests.examples.pd.serving import LoopSettings, run_chunked, run_overlap
from examples.pd.engine.request import Slo
from examples.pd.bench.metrics import summarize
from examples.pd.engine.planning import PrefillCursor, bucket_for
from examples.pd.bench.workload import Lengths, make_trace
from examples.pd.engine.request import Request

LAYERS = 4
BUCKETS = (1, 2, 4, 8)


class VirtualClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.t += seconds


@dataclasses.dataclass
class Done:
    clock: VirtualClock
    at: float

    def done(self) -> bool:
        return self.clock.now() >= self.at

    def ready(self) -> bool:
        return self.done()


@dataclasses.dataclass
class Lane:
    key: str


class SimDevice:
    """Two streams (latency, batch) per lane, work in launch order; costs in seconds."""

    def __init__(self, clock: VirtualClock, slots: int, decode_s=(1e-3, 1e-4), prefill_s_per_token_layer=2e-6,
                 depth: int = 2) -> None:
        self.clock, self.slots, self.depth = clock, slots, depth
        self.decode_s, self.token_s = decode_s, prefill_s_per_token_layer
        self.busy = {"latency": 0.0, "batch": 0.0}
        self.lanes_asked: list[tuple[str, int]] = []
        self.pieces: list = []
        self.prefill_pending: list[Done] = []
        self.prefilled_at: dict[int, float] = {}  # request id -> when its prefill ends on the device
        self.kv: dict[int, int] = {}  # slot -> KV length written
        self.max_inflight = 0
        self.states: list = []

    def _run(self, stream: str, cost: float, after: float = 0.0) -> Done:
        start = max(self.clock.t, self.busy[stream], after)
        self.busy[stream] = start + cost
        return Done(self.clock, start + cost)

    # OverlapEngine
    def decode_lane(self, bucket: int, state) -> Lane:
        assert state.bucket == bucket
        self.lanes_asked.append(("decode", bucket))
        self.states.append((self.clock.t, state))
        return Lane(f"k{bucket}")

    def idle_lane(self) -> Lane:
        self.lanes_asked.append(("idle", 0))
        return Lane("idle")

    def decode(self, lane, rows, bucket, joining) -> Done:
        assert bucket in BUCKETS and len(rows) <= bucket == bucket_for(len(rows), BUCKETS)
        slots = [slot for slot, _ in rows]
        assert len(set(slots)) == len(slots) and all(0 <= s < self.slots for s in slots)
        assert all(m.ready() for m in joining), "a request joined decoding before its prefill ended"
        for slot, length in rows:
            assert self.kv.get(slot) == length - 1, (slot, length, self.kv.get(slot))
            self.kv[slot] = length
        return self._run("latency", self.decode_s[0] + self.decode_s[1] * bucket)

    def prefill(self, lane, piece) -> Done:
        self.prefill_pending = [p for p in self.prefill_pending if not p.done()]
        assert len(self.prefill_pending) < self.depth, "more prefill pieces queued than the depth"
        self.pieces.append(piece)
        done = self._run("batch", self.token_s * piece.batch.tokens * (piece.last_layer - piece.first_layer))
        self.prefill_pending.append(done)
        self.max_inflight = max(self.max_inflight, len(self.prefill_pending))
        if piece.ends:
            for part in piece.batch.parts:
                assert self.kv.get(part.live.slot, 0) == part.start or part.start == 0
                self.kv[part.live.slot] = part.start + part.length
        return done

    def prefill_marker(self, lane) -> Done:
        return Done(self.clock, self.busy["batch"])

    def mixed_tokens(self) -> int:
        return 0

    def paused(self) -> bool:
        return False

    # ChunkedEngine
    def iteration(self, plan, bucket) -> Done:
        assert plan.tokens <= self.budget
        for live in plan.decode:
            slot, length = live.decode_row()
            assert self.kv.get(slot) == length - 1
            self.kv[slot] = length
        for part in plan.parts:
            assert self.kv.get(part.live.slot, 0) == part.start or part.start == 0
            self.kv[part.live.slot] = part.start + part.length
        cost = self.decode_s[0] + self.decode_s[1] * len(plan.decode) + self.token_s * LAYERS * plan.tokens
        return self._run("latency", cost)


def trace(n=30, rate=40.0, seed=3):
    return make_trace(n, rate, seed=seed, prompts=Lengths(16, 300, 100, 0.8), outputs=Lengths(2, 40, 10, 0.8))


def settings(slots=8, cap=60.0, **more):
    return LoopSettings(slots=slots, buckets=BUCKETS, cap_s=cap, poll_s=1e-4, **more)


def check_complete(log, requests):
    assert not log.cut_off
    # A gap between tokens per output token after each request's first, each positive.
    assert len(log.gaps) == sum(r.output - 1 for r in requests) and min(log.gaps, default=1) > 0
    assert [r.id for r in log.requests] == [r.id for r in requests]
    for record, request in zip(log.requests, requests):
        assert record.tokens == request.output
        assert request.arrival <= record.first_token <= record.finish
    assert log.duration >= max(r.finish for r in log.requests)


@pytest.mark.parametrize("budget", [16, 64, 512])
def test_chunked_prefill_serves_every_request(budget):
    clock, requests = VirtualClock(), trace()
    device = SimDevice(clock, slots=8)
    device.budget = budget
    log = run_chunked(requests, device, budget, settings(), clock)
    check_complete(log, requests)
    # Every decode token came from an iteration: output - 1 decode tokens per request.
    assert sum(s.batch for s in log.steps) == sum(r.output - 1 for r in requests)
    assert {s.lane for s in log.steps} <= {"mixed", "decode only"}
    assert all(s.bucket == bucket_for(s.batch, BUCKETS) for s in log.steps)


def test_overlap_serves_every_request_within_the_queue_depth():
    clock, requests = VirtualClock(), trace()
    device = SimDevice(clock, slots=8, depth=2)
    cursor = PrefillCursor(chunk=128, layers=LAYERS, piece_layers=1)
    log = run_overlap(requests, device, cursor, 2, settings(), clock)
    check_complete(log, requests)
    assert sum(s.batch for s in log.steps) == sum(r.output - 1 for r in requests)
    assert device.max_inflight == 2
    # Pieces: each batch through layers 0..3 in order, batches one after another.
    layers = {}
    for piece in device.pieces:
        assert piece.first_layer == layers.get(piece.batch.id, 0)
        layers[piece.batch.id] = piece.last_layer
    assert set(layers.values()) == {LAYERS}
    assert sum(p.batch.tokens for p in device.pieces if p.starts) == sum(r.prompt for r in requests)
    # The decode lane is asked with the bucket of the batch; the idle lane when nothing decodes.
    asked = {kind for kind, _ in device.lanes_asked}
    assert asked == {"decode", "idle"}
    assert [s.bucket for s in log.steps] == [b for kind, b in device.lanes_asked if kind == "decode"]
    assert {s.lane for s in log.steps} == {f"k{s.bucket}" for s in log.steps}


def test_first_token_is_when_the_host_sees_the_prefill_end():
    """One request alone: its prefill takes prompt x layers x cost on the batch stream; the
    host sees the marker within a polling interval."""
    clock = VirtualClock()
    request = Request(0, 0.5, prompt=200, output=5)
    device = SimDevice(clock, slots=2, decode_s=(2e-3, 0.0))
    log = run_overlap([request], device, PrefillCursor(64, LAYERS, 2), 2, settings(), clock)
    record = log.requests[0]
    prefill = 200 * LAYERS * device.token_s
    assert record.ttft == pytest.approx(prefill, abs=3e-4)
    assert record.tpot == pytest.approx(2e-3, abs=3e-4)
    assert len(log.steps) == 4 and all(s.seconds == pytest.approx(2e-3, abs=2e-4) for s in log.steps)


def test_slots_bound_the_requests_in_flight_and_admission_is_fcfs():
    clock = VirtualClock()
    requests = [Request(i, 0.001 * i, prompt=50, output=20) for i in range(10)]
    device = SimDevice(clock, slots=3)
    log = run_overlap(requests, device, PrefillCursor(256, LAYERS, 4), 2, settings(slots=3), clock)
    check_complete(log, requests)
    assert max(s.batch for s in log.steps) <= 3
    firsts = [r.first_token for r in log.requests]
    assert firsts == sorted(firsts)
    # With 3 slots, request 3 cannot start before one of the first three finished.
    assert log.requests[3].first_token > min(r.finish for r in log.requests[:3])


def test_the_cap_cuts_the_run_and_unfinished_requests_miss():
    clock, requests = VirtualClock(), trace(n=20, rate=1000.0)
    device = SimDevice(clock, slots=4, decode_s=(5e-3, 0.0))
    log = run_overlap(requests, device, PrefillCursor(128, LAYERS, 2), 2, settings(slots=4, cap=0.05), clock)
    assert log.cut_off
    assert log.duration >= 0.05
    unfinished = [r for r in log.requests if r.finish is None]
    assert unfinished
    summary = summarize(log, Slo(ttft=10.0, tpot=10.0))
    assert summary["finished"] == 20 - len(unfinished)
    assert summary["attainment"] == pytest.approx(summary["finished"] / 20)
    assert summary["cut_off"] is True


def test_chunked_iterations_never_exceed_the_budget_and_decode_every_iteration():
    """While a long prompt is chunked, decoding requests still get a token every iteration."""
    clock = VirtualClock()
    requests = [Request(0, 0.0, prompt=20, output=30), Request(1, 0.002, prompt=1000, output=3)]
    device = SimDevice(clock, slots=4)
    device.budget = 100
    log = run_chunked(requests, device, 100, settings(slots=4), clock)
    check_complete(log, requests)
    mixed = [s for s in log.steps if s.lane == "mixed"]
    assert len(mixed) >= 10  # the 1000-token prompt took ten or more iterations beside the decode


class SpinningClock(VirtualClock):
    """Time moves on by 10 us each time the host reads the clock: a host that never sleeps."""

    def now(self) -> float:
        self.t += 1e-5
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 1e-3, "a spinning host only sleeps until the next arrival"
        self.t += seconds


def test_a_spinning_host_serves_every_request():
    clock, requests = SpinningClock(), trace(n=10, rate=5.0)
    device = SimDevice(clock, slots=4)
    spin = LoopSettings(slots=4, buckets=BUCKETS, cap_s=60.0, poll_s=0.0)
    check_complete(run_overlap(requests, device, PrefillCursor(128, LAYERS, 2), 2, spin, clock), requests)
    device.kv.clear()
    device.budget = 256
    check_complete(run_chunked(requests, device, 256, spin, clock), requests)


def test_step_state_gives_the_policy_both_slos_slack_and_the_waiting_prompt():
    clock = VirtualClock()
    slo = Slo(ttft=0.5, tpot=0.01)
    requests = [Request(0, 0.0, prompt=20, output=60), Request(1, 0.01, prompt=3000, output=2)]
    device = SimDevice(clock, slots=4, decode_s=(2e-3, 0.0))
    log = run_overlap(requests, device, PrefillCursor(256, LAYERS, 1), 2, settings(slots=4, slo=slo), clock)
    check_complete(log, requests)
    long_first = log.requests[1].first_token
    during = [(t, st) for t, st in device.states if 0.011 < t < long_first - 1e-3]
    after = [(t, st) for t, st in device.states if t > log.requests[1].finish]
    assert during and after
    for t, st in during:
        assert st.prefill_tokens > 0
        assert st.ttft_slack_s == pytest.approx(0.01 + 0.5 - t, abs=1e-3)  # the long prompt's
        assert st.context_tokens >= 20
    for t, st in after:
        assert st.prefill_tokens == 0 and st.ttft_slack_s is None
    # Request 0 decodes a token per 2 ms step against a 10 ms SLO: its slack grows.
    slacks = [st.tpot_slack_s for _, st in after]
    assert slacks[-1] > slacks[0] > 0
    # Without SLOs the slack is unbounded.
    device2 = SimDevice(VirtualClock(), slots=4)
    run_overlap(requests[:1], device2, PrefillCursor(256, LAYERS, 1), 2, settings(slots=4), device2.clock)
    assert all(st.tpot_slack_s == float("inf") for _, st in device2.states)


@pytest.mark.parametrize("loop", ["chunked", "overlap"])
def test_shortest_prompt_first_lets_a_short_prompt_pass_a_long_one(loop):
    clock = VirtualClock()
    requests = [Request(0, 0.0, prompt=4000, output=3), Request(1, 0.001, prompt=2000, output=3),
                Request(2, 0.002, prompt=30, output=3)]
    firsts = {}
    for name in ("fcfs", "spf"):
        clock.t = 0.0
        device = SimDevice(clock, slots=4)
        device.budget = 128
        order = Order(name, aging_s=10.0)
        if loop == "chunked":
            log = run_chunked(requests, device, 128, settings(slots=4, order=order), clock)
        else:
            log = run_overlap(requests, device, PrefillCursor(128, LAYERS, 1, order), 2,
                              settings(slots=4, order=order), clock)
        check_complete(log, requests)
        firsts[name] = [r.first_token for r in log.requests]
    # Request 0 began before the others arrived; under spf the 30-token prompt goes next.
    assert firsts["fcfs"][2] > firsts["fcfs"][1]
    assert firsts["spf"][2] < firsts["spf"][1]
    assert firsts["spf"][2] < firsts["fcfs"][2]


def test_a_request_cut_off_while_decoding_adds_its_wait_to_the_gaps():
    clock = VirtualClock()
    requests = [Request(0, 0.0, prompt=20, output=1000)]
    device = SimDevice(clock, slots=2, decode_s=(5e-3, 0.0))
    log = run_overlap(requests, device, PrefillCursor(128, LAYERS, 2), 2, settings(slots=2, cap=0.1), clock)
    assert log.cut_off
    tokens = log.requests[0].tokens
    assert len(log.gaps) == tokens  # tokens - 1 gaps, and the wait since the last one
    assert 0 <= log.gaps[-1] <= 5.5e-3


class PausingDevice(SimDevice):
    """Pauses decode while a prompt waits with less than ``slack_s`` of TTFT slack."""

    slack_s = 0.45

    def paused(self) -> bool:
        _, state = self.states[-1]
        return state.prefill_tokens > 0 and state.ttft_slack_s is not None and state.ttft_slack_s < self.slack_s


def test_a_pause_launches_prefill_alone_and_the_decoding_request_takes_one_long_gap():
    slo = Slo(ttft=0.5, tpot=0.01)
    requests = [Request(0, 0.0, prompt=20, output=200), Request(1, 0.01, prompt=3000, output=2)]
    device = PausingDevice(VirtualClock(), slots=4, decode_s=(4e-3, 0.0), prefill_s_per_token_layer=2e-5)
    log = run_overlap(requests, device, PrefillCursor(256, LAYERS, 1), 2, settings(slots=4, slo=slo), device.clock)
    check_complete(log, requests)
    first = log.requests[1].first_token
    pause_from = 0.01 + 0.5 - PausingDevice.slack_s
    assert first > pause_from + 0.1  # the long prompt's prefill (240 ms) outlasts the slack
    # Decode steps before the pause and after the long prompt's first token, none between.
    assert not [s for s in log.steps if pause_from + 5e-3 < s.launched < first - 1e-3]
    assert [s for s in log.steps if s.launched < pause_from] and [s for s in log.steps if s.launched > first]
    # The request decoding through the pause takes one long gap; its pieces ran on while paused.
    long_gaps = [g for g in log.gaps if g > slo.tpot]
    assert len(long_gaps) == 1 and long_gaps[0] > first - pause_from - 5e-3
    assert any(kind == "decode" for kind, _ in device.lanes_asked)
    # While paused, the lane choice is asked again only once a piece starts or ends or a request
    # arrives, not at every poll (0.1 ms; 1,800 polls in the pause).
    asked_in_pause = [t for t, _ in device.states if pause_from + 5e-3 < t < first - 1e-3]
    assert 0 < len(asked_in_pause) <= len(device.pieces)
