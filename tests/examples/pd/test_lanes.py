"""The engine's lanes (examples/pd/engine/lanes.py) with a fake Layouts and fake
policies: which layout each step runs on, what the two-SLO policy is told, when the policies'
timing ends, and the handoff per request. No GPU: nothing here touches a stream."""

from __future__ import annotations

import dataclasses

from examples.pd.engine.lanes import Lane, OverlapRunner, PlainLanes, PolicyLanes, StaticLanes, key_label
from examples.pd.engine.steps import StepState


@dataclasses.dataclass(frozen=True)
class FakeLayout:
    key: object
    sm_count: int
    latency_stream: str
    batch_stream: str


class FakeHandoff:
    def __init__(self, active):
        self.active, self.waited = active, []

    def ready(self):
        return True

    def wait(self, stream):
        self.waited.append(stream)


class FakeLayouts:
    def __init__(self, counts, overlapped=()):
        self.counts = tuple(counts)
        self.keys = self.counts + tuple(overlapped)
        self._layouts = {k: FakeLayout(k, k, f"latency{k}", f"batch{k}") for k in counts}
        self._layouts.update({k: FakeLayout(k, sum(k), f"latency{k}", f"batch{k}") for k in overlapped})
        self.active, self.calls = None, []

    def __getitem__(self, k):
        return self._layouts[k]

    def switch(self, k, *, ordering=None):
        self.calls.append(("switch", k))
        self.active = k
        return self._layouts[k]

    def handoff(self):
        return FakeHandoff(self.active)


class FakePolicy:
    """Picks by batch size, as a SplitPolicy does (it ignores the other figures)."""

    def __init__(self, layouts, picks):
        self.layouts, self.picks, self.calls = layouts, picks, []

    def step(self, p, context_tokens=0, **figures):
        self.calls.append(("step", p))
        return self.layouts.switch(self.picks[p])

    def idle_key(self):
        self.calls.append(("idle_key",))
        return self.picks[0]

    def done(self):
        self.calls.append(("done",))


class FakeEngine:
    def __init__(self):
        self.calls = []

    def decode(self, lane, rows, bucket, joining, after=None):
        self.calls.append(("decode", lane.key, bucket))
        after()
        return "pending"

    def prefill(self, lane, piece):
        self.calls.append(("prefill", lane.batch, piece))
        return "pending"


def test_policy_lanes_follow_the_policy_and_end_its_timing_after_each_launch():
    layouts = FakeLayouts([0, 16, 32, 132])
    policy = FakePolicy(layouts, {0: 0, 1: 16, 8: 16, 32: 32})
    lanes = PolicyLanes(policy, layouts)
    assert [lane.key for lane in lanes.all()] == ["0", "16", "32", "132"]
    engine = FakeEngine()
    runner = OverlapRunner(engine, lanes)
    lane = runner.decode_lane(32, StepState(32, 0, 0, 0.0, None))
    assert (lane.key, lane.latency, lane.batch) == ("32", "latency32", "batch32")
    assert runner.decode(lane, [(0, 10)], 32, []) == "pending"
    assert policy.calls == [("step", 32), ("done",)]
    idle = runner.idle_lane()
    assert (idle.key, layouts.active) == ("0", 0)
    assert policy.calls[-1] == ("idle_key",)  # no step (and no timing) while nothing decodes
    runner.prefill(idle, "piece")
    assert engine.calls[-1] == ("prefill", "batch0", "piece")
    marker = runner.prefill_marker(idle)
    assert isinstance(marker, FakeHandoff) and marker.active == 0 and marker.ready()


def test_static_lanes_never_leave_their_split():
    layouts = FakeLayouts([0, 16, 32, 132])
    lanes = StaticLanes(layouts, 32)
    assert [lane.key for lane in lanes.all()] == ["32"]
    assert lanes.decode_lane(8).key == "32" and lanes.decode_lane(64).key == "32" and lanes.idle_lane().key == "32"
    assert set(layouts.calls) == {("switch", 32)}
    assert lanes.marker(lanes.lane).active == 32


class FakeTwoSloPolicy:
    def __init__(self, layouts, pick):
        self.layouts, self.pick, self.calls = layouts, pick, []

    def step(self, batch, context_tokens=0, **kw):
        self.calls.append(("step", batch, context_tokens, kw))
        return self.layouts.switch(self.pick)

    def idle_key(self):
        self.calls.append(("idle_key",))
        return 0

    def done(self):
        self.calls.append(("done",))


def test_policy_lanes_pass_the_step_state_in_the_policys_units():
    layouts = FakeLayouts([0, 132], overlapped=[(16, 64)])
    policy = FakeTwoSloPolicy(layouts, (16, 64))
    lanes = PolicyLanes(policy, layouts, prefix="o")
    assert [lane.key for lane in lanes.all()] == ["o0", "o132", "o16/64"]
    runner = OverlapRunner(FakeEngine(), lanes)
    lane = runner.decode_lane(8, StepState(8, 9000, 2048, 0.004, -0.25, 0.75))
    assert (lane.key, lane.latency) == ("o16/64", "latency(16, 64)")
    assert policy.calls[-1] == ("step", 8, 9000, {"prefill_tokens": 2048, "tpot_slack_us": 4000.0,
                                                  "ttft_slack_us": -250000.0, "kv_used": 0.75})
    runner.decode(lane, [(0, 10)], 8, [])
    assert policy.calls[-1] == ("done",)
    # Unbounded slack (no SLO) reaches the policy as a finite number; no waiting prompt as None.
    lanes.decode_lane(8, StepState(8, 0, 0, float("inf"), None))
    assert policy.calls[-1][3] == {"prefill_tokens": 0, "tpot_slack_us": 1e12, "ttft_slack_us": None, "kv_used": 0.0}
    assert lanes.idle_lane().key == "o0" and layouts.active == 0
    assert isinstance(lanes.marker(lane), FakeHandoff)
    assert key_label((32, 32)) == "32/32" and key_label(16) == "16"


def test_static_lanes_of_an_overlapped_layout():
    layouts = FakeLayouts([0, 132], overlapped=[(16, 64)])
    lanes = StaticLanes(layouts, (16, 64), prefix="o")
    assert lanes.decode_lane(8).key == "o16/64" and layouts.calls == [("switch", (16, 64))]


def test_plain_lanes_run_every_step_on_one_lane_and_mark_prefill_ends_on_its_batch_stream():
    lane = Lane("plain streams", "high", "low")
    made = []
    lanes = PlainLanes(lane, lambda on: made.append(on.batch) or FakeHandoff(None))
    assert lanes.all() == [lane] and lanes.decode_lane(64) is lane and lanes.idle_lane() is lane
    lanes.launched()
    assert isinstance(lanes.marker(lane), FakeHandoff) and made == ["low"]
