"""Step costs per layout, LayoutProfile's JSON, and the prefill/decode policy's choices with fake
layouts and fake timings (no GPU)."""

import json

import pytest
import torch

from tests.test_profile_policy import FakeTimingEvent
from torch_green_contexts.layouts import Layout
from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.sizing import Latency, LayoutProfile, StepCost

TOTAL = 132
# key -> (latency SMs, batch SMs, shared SMs); overlapped keys are (latency floor, batch floor).
LAYOUTS = {0: (0, TOTAL, 0), 16: (16, 116, 0), 64: (64, 68, 0), (16, 64): (68, 116, 52), TOTAL: (TOTAL, 0, 0)}
# A decode step costs 2 us per request, 4 us per 1k context tokens and 1000 us, scaled by 128 / SMs
# it can use (the end layout 0 runs decode beside prefill on the whole device: like 32 SMs).
SPEED = {0: 32, 16: 16, 64: 64, (16, 64): 40, TOTAL: 128}


def step_us(key, batch, context):
    return (1000 + 2 * batch + 4 * context / 1000) * 128 / SPEED[key]


def lat(p99):
    return Latency(p50=0.8 * p99, p90=0.9 * p99, p99=p99, mean=0.8 * p99, samples=20)


def make_profile():
    points = [(b, c) for b in (1, 16, 64) for c in (1_000, 64_000, 256_000)]
    measured = {k: {(b, c): lat(step_us(k, b, c)) for b, c in points} for k in LAYOUTS}
    return LayoutProfile(measured, dict(LAYOUTS), {k: LAYOUTS[k][1] > 0 for k in LAYOUTS}, {"rounds": 1})


class FakeLayouts:
    def __init__(self):
        self.keys = tuple(LAYOUTS)
        self.switched = []

    def __getitem__(self, key):
        sms, batch_sms, shared = LAYOUTS[key]
        return Layout(f"lat{key}", f"batch{key}", None, None, sms, batch_sms, shared)

    def switch(self, key, *, ordering=None):
        self.switched.append((key, ordering))
        return self[key]


def finish(policy, latency_us):
    """Let the GPU finish every timed step so far, each taking latency_us."""
    for _, _, start, end in policy._timer.pending:
        start.done = end.done = True
        start.at, end.at = 0.0, latency_us / 1e3


@pytest.fixture
def fake_events(monkeypatch):
    FakeTimingEvent.created = []
    monkeypatch.setattr(torch.cuda, "Event", FakeTimingEvent)


def test_step_cost_fits_batch_and_context_and_never_under_predicts():
    points = [(b, c, 10 + 2 * b + 3 * c / 1000) for b in (1, 8, 32) for c in (1000, 8000, 64000)]
    cost = StepCost.fit(points)
    assert cost.per_request_us == pytest.approx(2) and cost.per_kilo_token_us == pytest.approx(3)
    assert cost.fixed_us == pytest.approx(10, abs=1e-3)
    noisy = points + [(8, 8000, 200.0)]
    covered = StepCost.fit(noisy)
    assert all(covered.at(b, c) >= y - 1e-6 for b, c, y in noisy), "scaled to cover every point"
    flat = StepCost.fit([(1, 0, 50.0), (8, 0, 50.0)])
    assert flat.at(64, 1e6) == pytest.approx(50.0), "no negative or made-up slope"
    with pytest.raises(ValueError, match="at least one"):
        StepCost.fit([])


def test_layout_profile_round_trips_and_reads_per_layout():
    profile = make_profile()
    assert profile.latency((16, 64), 16, 64_000) == pytest.approx(step_us((16, 64), 16, 64_000))
    assert profile.latency(16, 16, 64_000, percentile=50) == pytest.approx(0.8 * step_us(16, 16, 64_000))
    again = LayoutProfile.from_json(profile.to_json())
    assert again.measured == profile.measured and again.layouts == profile.layouts and again.loaded == profile.loaded
    assert "| 16+64 | 68 | 116 | 52 |" in profile.table()
    with pytest.raises(ValueError, match="not profiled"):
        profile.cost(24)
    with pytest.raises(ValueError, match="not the JSON of a LayoutProfile"):
        LayoutProfile.from_json(json.dumps({"params": [1]}))


def test_prefill_gets_the_most_while_the_decode_step_fits():
    policy = PrefillDecodePolicy(make_profile(), FakeLayouts(), tpot_slo_us=10_000, headroom=0.0)
    # 8 requests, 16k tokens: 1080 us * 128 / SMs. Layout 0 (decode on the whole device beside
    # prefill, 4320 us) gives prefill every SM and fits.
    assert policy.choose(8, 16_000, prefill_tokens=4096) == 0
    # 64 requests, 256k tokens: 2152 us * 128 / SMs: 0 -> 8608 fits 10 ms; a tighter SLO does not.
    tight = PrefillDecodePolicy(make_profile(), FakeLayouts(), tpot_slo_us=7_000, headroom=0.0)
    assert tight.choose(64, 256_000, prefill_tokens=4096) == (16, 64), "116 batch SMs at 6886 us"
    assert tight.estimate((16, 64), 64, 256_000) == pytest.approx(2152 * 128 / 40 * 1.0)
    # No prefill waiting: decode gets every SM; no decode: prefill gets every SM.
    assert policy.choose(64, 256_000, prefill_tokens=0) == TOTAL
    assert policy.choose(0, 0, prefill_tokens=100) == 0


def test_slack_widens_the_budget_and_an_urgent_prompt_spends_all_of_it():
    policy = PrefillDecodePolicy(make_profile(), FakeLayouts(), tpot_slo_us=5_000, headroom=0.0, slack_share=0.5)
    assert policy.budget_us() == 5000
    assert policy.budget_us(tpot_slack_us=4000) == 7000
    assert policy.budget_us(tpot_slack_us=4000, ttft_slack_us=-1) == 9000
    assert policy.budget_us(tpot_slack_us=-3000) == 5000, "a request behind its pace spends nothing"
    # 64 requests at 256k tokens: layouts 0 (8608 us), (16, 64) (6886), 64 (4304), 16 (17216).
    assert policy.choose(64, 256_000, prefill_tokens=1) == 64
    assert policy.choose(64, 256_000, prefill_tokens=1, tpot_slack_us=4000) == (16, 64)
    assert policy.choose(64, 256_000, prefill_tokens=1, tpot_slack_us=8000, ttft_slack_us=-5) == 0
    # Nothing fits: the fastest layout.
    assert policy.choose(64, 256_000 * 20, prefill_tokens=1) == TOTAL


def test_slow_decode_steps_move_to_more_decode_sms_and_back(fake_events):
    layouts = FakeLayouts()
    policy = PrefillDecodePolicy(make_profile(), layouts, tpot_slo_us=10_000, headroom=0.0, half_life_steps=16,
                                 read_every=1)
    args = dict(context_tokens=16_000, prefill_tokens=1000)
    for _ in range(3):  # 3x the p99 on layout 0, three times: the median of five moves
        assert policy.step(8, **args).sm_count == 0 and layouts.switched[-1] == (0, "per_role")
        policy.done()
        finish(policy, 3 * step_us(0, 8, 16_000))
    assert policy.step(8, **args).key != 0, "moved off layout 0"
    assert policy.correction(0) == pytest.approx(3.0)
    policy.done()
    chosen = []
    for _ in range(300):
        finish(policy, 0.8 * step_us(policy._current, 8, 16_000))
        chosen.append(policy.step(8, **args).key)
        policy.done()
    assert chosen[-50:] == [0] * 50, "back once the slowdown has decayed and steps match the profile"
    assert policy.stats()["steps"] == 304


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tpot_slo_us=0), ValueError, "positive"),
    (dict(tpot_slo_us=float("nan")), ValueError, "positive number of microseconds, got nan"),
    (dict(tpot_slo_us=1000, headroom=1.0), ValueError, "headroom"),
    (dict(tpot_slo_us=1000, slack_share=2.0), ValueError, "slack_share"),
    (dict(tpot_slo_us=1000, ordering="none"), ValueError, "ordering"),
    (dict(tpot_slo_us=1000, read_every=0), ValueError, "read_every"),
])
def test_the_policy_checks_its_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        PrefillDecodePolicy(make_profile(), FakeLayouts(), **kwargs)


def test_the_policy_needs_every_layout_profiled():
    profile = make_profile()
    partial = LayoutProfile({16: profile.measured[16]}, {16: LAYOUTS[16]}, {16: True}, {})
    with pytest.raises(ValueError, match="no figures for the layouts"):
        PrefillDecodePolicy(partial, FakeLayouts(), tpot_slo_us=1000)
    with pytest.raises(TypeError, match="LayoutProfile"):
        PrefillDecodePolicy({}, FakeLayouts(), tpot_slo_us=1000)
