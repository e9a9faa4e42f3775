"""Latency profiles, the split policy and the layout switching logic, without a GPU: profiles
built from known figures, fake layouts and fences, and fake CUDA events whose timings the test
sets. (tests/gpu/test_gpu_policy.py runs them on a GPU.)"""

import json
import math

import pytest
import torch

import torch_green_contexts.layouts as layouts_module
import torch_green_contexts.policy as policy_module
from torch_green_contexts import sizing
from torch_green_contexts.layouts import Layout, Layouts
from torch_green_contexts.policy import SplitPolicy
from torch_green_contexts.sizing import LatencyProfile, Latency, PlainFigures, SizingResult, SizingRow

TOTAL = 132
COUNTS = (16, 32, 64, 132)


def lat(p99):
    return Latency(p50=0.8 * p99, p90=0.9 * p99, p99=p99, mean=0.8 * p99, samples=20)


def result_for(batch):
    """Latency falls with the SM count and grows with the batch: 1000 us * batch/8 * 128/k
    under load, 0.8 of that idle."""
    rows = []
    for k in COUNTS:
        loaded_us = 1000.0 * batch / 8 * 128 / k
        rows.append(SizingRow(k, TOTAL - k, lat(0.8 * loaded_us),
                              None if k == TOTAL else lat(loaded_us), None if k == TOTAL else 10.0 * (TOTAL - k)))
    plain = PlainFigures(lat(700.0), lat(3000.0), 500.0, 1320.0)
    return SizingResult(tuple(rows), plain, {"name": "test GPU", "sm_count": TOTAL}, {"rounds": 1})


def make_profile(params=(8, 32, 64)):
    return LatencyProfile(tuple((p, result_for(p)) for p in params), {"params": list(params)})


# ---- LatencyProfile -----------------------------------------------------------------------------

def test_profile_reads_between_parameters_at_the_larger():
    prof = make_profile()
    assert prof.params == (8, 32, 64) and prof.counts == COUNTS
    assert prof.read_at(1) == 8 and prof.read_at(8) == 8 and prof.read_at(9) == 32 and prof.read_at(64) == 64
    assert prof.read_at(65) is None
    assert prof.latency(20, 32) == pytest.approx(16000)  # read at 32
    assert prof.latency(20, 32, percentile=50) == pytest.approx(0.8 * 16000)
    assert prof.latency(20, 32, under_load=False) == pytest.approx(0.8 * 16000)
    assert prof.latency(65, 32) is None
    assert prof.latency(8, TOTAL) is None, "no load runs beside the row of all SMs"
    assert prof.latency(8, TOTAL, under_load=False) == pytest.approx(0.8 * 1000 * 128 / TOTAL)
    with pytest.raises(ValueError, match="were not measured"):
        prof.latency(8, 24)
    with pytest.raises(ValueError, match="percentile"):
        prof.latency(8, 16, percentile=95)
    with pytest.raises(ValueError, match="finite number of 0 or more"):
        prof.latency(float("nan"), 16)


def test_profile_smallest_meeting_is_conservative():
    prof = make_profile()
    # At 8: 8000, 4000, 2000 us on 16, 32, 64 SMs.
    assert prof.smallest_meeting(8, 4000) == 32
    assert prof.smallest_meeting(5, 4000) == 32  # read at 8
    assert prof.smallest_meeting(9, 4000) is None  # read at 32: 32000, 16000, 8000: none under load
    assert prof.smallest_meeting(9, 8000) == 64
    assert prof.smallest_meeting(100, 1e9) is None  # above every measured parameter
    assert prof.smallest_meeting(64, 1e9, under_load=False) == 16


def test_profile_json_round_trip_table_and_result():
    prof = make_profile()
    again = LatencyProfile.from_json(prof.to_json())
    assert again == prof
    assert prof.result(32) is prof.entries[1][1]
    with pytest.raises(ValueError, match="measured"):
        prof.result(33)
    table = prof.table()
    assert "| SMs | p=8 | p=32 | p=64 |" in table
    assert "| 16 | 8000 | 32000 | 64000 |" in table
    assert "| 132 | 776* |" in table  # idle, marked


def test_profile_needs_ascending_unique_parameters():
    with pytest.raises(ValueError, match="at least one"):
        LatencyProfile((), {})
    with pytest.raises(ValueError, match="unique and ascending"):
        LatencyProfile(((32, result_for(32)), (8, result_for(8))), {})


def test_profile_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = make_profile().plot(str(tmp_path / "profile.png"), deadline_us=5000)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(params=[]), ValueError, "at least one parameter"),
    (dict(params="8,16"), TypeError, "sequence of numbers"),
    (dict(params=[8, True]), TypeError, r"params must be a number \(each a size .*got bool"),
    (dict(params=[8, float("inf")]), ValueError, "params must be a finite number of 0 or more"),
    (dict(params=[8, float("nan")]), ValueError, "params must be a finite number of 0 or more"),
    (dict(params=[-1, 8]), ValueError, "params must be a finite number of 0 or more .*got -1$"),
    (dict(params=[8, 8]), ValueError, "repeated"),
    (dict(params=[8], rounds=0), ValueError, "rounds must be 1 or more"),
    (dict(params=[8], progress="yes"), TypeError, "progress must be a bool"),
    (dict(params=[8], load=3), TypeError, "load must be callable"),
])
def test_profile_checks_arguments_before_touching_the_gpu(kwargs, error, match):
    with pytest.raises(error, match=match):
        sizing.profile(lambda p: (lambda: None), **kwargs)


def test_profile_checks_make_step():
    with pytest.raises(TypeError, match="make_step must be callable"):
        sizing.profile(3, [8])  # type: ignore[arg-type]


# ---- Layouts, with fake contexts and fences -----------------------------------------------------

class FakeFence:
    def __init__(self, k, log):
        self.k, self.log = k, log

    def order_after(self, before):
        self.log.append(("full", before.k, self.k))

    def order_each_after(self, before):
        self.log.append(("per_role", before.k, self.k))


@pytest.fixture
def fake_layouts(monkeypatch):
    log = []

    def make_layout(k, total, device, priority):
        return Layout(f"lat{k}", f"batch{k}", f"ctx{k}", f"ctx{k}" if k in (0, total) else f"rest{k}", k, total - k)

    class FakeC:
        @staticmethod
        def device_sm_count(device):
            return TOTAL

    monkeypatch.setattr(layouts_module._layout_build, "make_layout", make_layout)
    monkeypatch.setattr(layouts_module._layout_build, "make_fence", lambda layout: FakeFence(layout.sm_count, log))
    monkeypatch.setattr(layouts_module._device, "resolve_device", lambda device_id: 0)
    monkeypatch.setattr(layouts_module, "_C", FakeC)
    return log


def test_layouts_switch_orders_full_or_per_role(fake_layouts):
    log = fake_layouts
    layouts = Layouts([0, 16, 64, TOTAL])
    assert layouts.ordering == "full" and layouts.counts == (0, 16, 64, TOTAL)
    first = layouts.switch(16)
    assert first.sm_count == 16 and first.batch_sm_count == TOTAL - 16 and log == []
    assert layouts.switch(16) is first and log == [], "the same layout orders nothing"
    layouts.switch(64)
    layouts.switch(0, ordering="per_role")
    layouts.switch(TOTAL)
    assert log == [("full", 16, 64), ("per_role", 64, 0), ("full", 0, TOTAL)]
    assert layouts[0].latency == layouts[0].batch and layouts[0].batch_sm_count == TOTAL
    assert layouts[TOTAL].batch_sm_count == 0
    with pytest.raises(ValueError, match="ordering must be one of"):
        layouts.switch(16, ordering="none")
    assert layouts.active.sm_count == TOTAL, "a refused switch changes nothing"
    per_role = Layouts([16, 32], ordering="per_role")
    per_role.switch(16)
    per_role.switch(32)
    per_role.switch(16, ordering="full")
    assert log[-2:] == [("per_role", 16, 32), ("full", 32, 16)]
    assert "ordering='per_role'" in repr(per_role)


def test_layouts_accept_the_end_layouts_and_refuse_counts_beyond(fake_layouts):
    assert Layouts([0, TOTAL]).counts == (0, TOTAL)
    with pytest.raises(ValueError, match=f"between 0 .* and {TOTAL}"):
        Layouts([16, TOTAL + 1])
    with pytest.raises(ValueError, match="between 0"):
        Layouts([-8])
    with pytest.raises(ValueError, match="ordering must be one of"):
        Layouts([16], ordering="fast")


def test_handoff_records_on_the_active_layouts_stream(fake_layouts, monkeypatch):
    recorded = []

    class FakeEvent:
        def record(self, stream):
            recorded.append(stream)

        def query(self):
            return True

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    layouts = Layouts([16, 32])
    with pytest.raises(RuntimeError, match="call switch"):
        layouts.handoff()
    layouts.switch(32)
    assert layouts.handoff().ready()
    layouts.handoff(role="latency")
    assert recorded == ["batch32", "lat32"]
    with pytest.raises(ValueError, match="role must be one of"):
        layouts.handoff(role="prefill")


# ---- SplitPolicy: choice and correction ---------------------------------------------------------

class FakeLayouts:
    def __init__(self, counts=(0, 16, 32, 64, TOTAL)):
        self.counts = tuple(counts)
        self.switched = []

    def __getitem__(self, k):
        return Layout(f"lat{k}", f"batch{k}", None, None, k, TOTAL - k)

    def switch(self, k, *, ordering=None):
        self.switched.append((k, ordering))
        return self[k]


class FakeTimingEvent:
    """An event whose elapsed time the test sets: `done` says whether the GPU passed it."""

    created = []

    def __init__(self, enable_timing=False):
        self.done, self.at, self.stream = False, 0.0, None
        FakeTimingEvent.created.append(self)

    def record(self, stream):
        self.stream, self.done = stream, False

    def query(self):
        return self.done

    def elapsed_time(self, end):
        return end.at - self.at


@pytest.fixture
def fake_events(monkeypatch):
    FakeTimingEvent.created = []
    monkeypatch.setattr(torch.cuda, "Event", FakeTimingEvent)
    return FakeTimingEvent


def finish(policy, latency_us):
    """Let the GPU finish every timed step so far, each taking latency_us."""
    for _, _, start, end in policy._timer.pending:
        start.done = end.done = True
        start.at, end.at = 0.0, latency_us / 1e3


def test_choice_is_the_smallest_count_meeting_the_slo():
    # At batch 8 (read at 8): 8000 / 4000 / 2000 us under load on 16 / 32 / 64; 776 idle on 132.
    policy = SplitPolicy(make_profile(), FakeLayouts(), slo_us=5000, headroom=0.0)
    assert policy.choose(8) == 32
    assert policy.choose(4) == 32, "read at the next measured parameter"
    assert policy.choose(0) == 0, "no latency work: every SM to batch work"
    # At 32: 32000 / 16000 / 8000 under load; all SMs idle: 0.8 * 1000 * 4 * 128/132 = 3103.
    assert policy.choose(32) == TOTAL
    assert policy.choose(1000) == TOTAL, "above the profile: the largest layout"
    tight = SplitPolicy(make_profile(), FakeLayouts(), slo_us=100)
    assert tight.choose(8) == TOTAL
    assert SplitPolicy(make_profile(), FakeLayouts(), slo_us=4000, headroom=0.0).choose(8) == 32
    assert SplitPolicy(make_profile(), FakeLayouts(), slo_us=4000, headroom=0.1).choose(8) == 64
    no_zero = SplitPolicy(make_profile(), FakeLayouts((16, 32)), slo_us=5000)
    assert no_zero.choose(0) == 32 and no_zero.choose(64) == 32  # 0 is read like any parameter


def test_step_switches_with_per_role_ordering_and_counts_steps(fake_events):
    layouts = FakeLayouts()
    policy = SplitPolicy(make_profile(), layouts, slo_us=5000, headroom=0.0)
    assert policy.step(8).sm_count == 32
    policy.done()
    assert policy.step(0).sm_count == 0
    policy.done()  # nothing timed: no latency work
    assert layouts.switched == [(32, "per_role"), (0, "per_role")]
    stats = policy.stats()
    assert stats["steps"] == 2 and stats["chosen"][32] == 1 and stats["chosen"][0] == 1 and stats["pending"] == 1
    assert [e.stream for e in fake_events.created] == ["lat32", "lat32"]
    full = SplitPolicy(make_profile(), layouts, slo_us=5000, ordering="full")
    full.step(8)
    assert layouts.switched[-1] == (32, "full")


def test_slow_steps_raise_the_estimate_and_it_decays(fake_events):
    policy = SplitPolicy(make_profile(), FakeLayouts(), slo_us=5000, headroom=0.0, half_life_steps=64,
                         read_every=1)
    assert policy.choose(8) == 32
    # The load grows heavier than profiled: a step on 32 SMs takes 6000 us, 1.5x the profile's
    # p99 (4000 us). Of a window of five, with the profile in the places not yet measured, the
    # third such step moves the median.
    for _ in range(3):
        assert policy.step(8).sm_count == 32
        policy.done()
        finish(policy, 6000.0)
    assert policy.step(8).sm_count == 64, "read at the next step, which moves"
    assert policy.stats()["observed"][32] == 3
    assert policy.correction(32) == pytest.approx(1.5)
    assert policy.correction(16) > 1.4, "a change on 32 SMs is at least as large on 16"
    assert policy.correction(64) == 1.0, "a slowdown on 32 SMs says nothing of more SMs"
    policy.done()
    # On 64 SMs the steps take 2300 us, 1.15x the profile's p99: a bias there, which does not
    # keep 32 out. 32's correction decays until 4000 * f is below the bound less the
    # hysteresis, 4750 us: 0.5 * 0.5 ** (age / 64) <= 0.1875, about 91 steps.
    back_after = None
    for i in range(400):
        finish(policy, 2300.0)
        layout = policy.step(8)
        policy.done()
        if layout.sm_count == 32:
            back_after = i
            break
    assert back_after is not None and 75 <= back_after <= 110, back_after
    assert policy.correction(64) == pytest.approx(2300 / 2000)
    # Back on 32 a step takes 4800 us: 1.2x, 4800 us estimated, under the bound of 5000 for
    # staying (the old 6000 us was forgotten), so the policy stays.
    for _ in range(20):
        finish(policy, 4800.0)
        assert policy.step(8).sm_count == 32
        policy.done()
    assert policy.correction(32) == pytest.approx(1.2)


def test_corrections_never_go_below_the_profile_and_timings_are_read_without_waiting(fake_events):
    policy = SplitPolicy(make_profile(), FakeLayouts(), slo_us=5000, headroom=0.0, read_every=2)
    policy.step(8)
    policy.done()
    policy.step(8)
    policy.done()
    assert policy.update() == 0, "nothing read while the GPU has not passed the events"
    finish(policy, 100.0)  # much faster than the profile
    assert policy.update() == 2
    assert policy.correction(32) == 1.0 and policy.choose(8) == 32
    assert len(policy._timer.pool) == 4, "the events are reused"
    policy.step(8)
    policy.done()
    assert len(fake_events.created) == 4


def test_steps_without_done_are_not_timed_and_sampling_can_be_sparse(fake_events):
    policy = SplitPolicy(make_profile(), FakeLayouts(), slo_us=5000, sample_every=3)
    for _ in range(6):
        policy.step(8)
    assert policy.stats()["pending"] == 0
    for _ in range(6):
        policy.step(8)
        policy.done()
    assert policy.stats()["pending"] == 2


def test_observe_feeds_external_timings_and_takes_the_median_of_a_few():
    policy = SplitPolicy(make_profile(), FakeLayouts(), slo_us=5000, headroom=0.0)
    policy.observe(64, 8, 4000.0)  # 2x the profile's p99 on 64 SMs
    assert policy.correction(64) == 1.0, "one step against the profile in the four other places"
    policy.observe(64, 8, 4000.0)
    policy.observe(64, 8, 4000.0)
    assert policy.correction(64) == pytest.approx(2.0) and policy.correction(TOTAL) == 1.0
    assert policy.correction(32) > 1.9 and policy.correction(16) > 1.9, "a change on 64 raises fewer SMs"
    assert policy.choose(8) == 64, "64: 2000 * 2 = 4000 us; 16 and 32 are worse"
    policy.observe(64, 8, 1000.0)
    policy.observe(64, 8, 1000.0)
    assert policy.correction(64) == pytest.approx(2.0), "three of five at 2x: the median"
    policy.observe(64, 8, 1000.0)
    assert policy.correction(64) == 1.0, "three of five below the profile: never below 1"
    assert policy.estimate(1000, 32) is None
    with pytest.raises(ValueError, match="no layout of 24"):
        policy.correction(24)
    with pytest.raises(ValueError, match="no layout of 24"):
        policy.observe(24, 8, 1000.0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(slo_us=0), ValueError, "slo_us must be a positive"),
    (dict(slo_us=math.inf), ValueError, "positive number of microseconds, got inf"),
    (dict(slo_us=math.nan), ValueError, "positive number of microseconds, got nan"),
    (dict(slo_us="5ms"), TypeError, "number of microseconds"),
    (dict(slo_us=5000, headroom=1.0), ValueError, "headroom"),
    (dict(slo_us=5000, percentile=95), ValueError, "percentile"),
    (dict(slo_us=5000, ordering="fast"), ValueError, "ordering"),
    (dict(slo_us=5000, half_life_steps=0), ValueError, "half_life_steps"),
    (dict(slo_us=5000, read_every=True), TypeError, "read_every"),
    (dict(slo_us=5000, hysteresis=1.0), ValueError, "hysteresis"),
])
def test_policy_checks_its_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        SplitPolicy(make_profile(), FakeLayouts(), **kwargs)


def test_policy_needs_profiled_layouts():
    with pytest.raises(ValueError, match=r"no figures for the layouts of \[24\]"):
        SplitPolicy(make_profile(), FakeLayouts((0, 16, 24)), slo_us=5000)
    with pytest.raises(ValueError, match="above 0"):
        SplitPolicy(make_profile(), FakeLayouts((0,)), slo_us=5000)
    with pytest.raises(TypeError, match="LatencyProfile"):
        SplitPolicy(result_for(8), FakeLayouts(), slo_us=5000)


def test_from_json_of_the_wrong_kind_or_damaged_json_is_a_value_error_saying_what_it_wanted():
    from torch_green_contexts.sizing import LayoutProfile, SizingResult

    prof = make_profile()
    sizing_json = prof.entries[0][1].to_json()
    layout_json = json.dumps({"kind": "LayoutProfile", "layouts": [], "settings": {}})
    cases = [
        (LatencyProfile, sizing_json, "it is the JSON of a SizingResult; read it with SizingResult.from_json"),
        (LatencyProfile, layout_json, "it is the JSON of a LayoutProfile"),
        (SizingResult, prof.to_json(), "it is the JSON of a LatencyProfile"),
        (LayoutProfile, prof.to_json(), "not the JSON of a LayoutProfile"),
        (SizingResult, "[1, 2]", "its top level is a JSON list"),
        (LatencyProfile, json.dumps({"params": [1], "settings": {}}), "it has no 'results'"),
        (LatencyProfile, "{not json", "Expecting property name"),
    ]
    for cls, text, message in cases:
        with pytest.raises(ValueError, match=message):
            cls.from_json(text)
    damaged = json.loads(prof.to_json())
    del damaged["results"][0]["plain"]
    with pytest.raises(ValueError, match="a damaged LatencyProfile JSON .*KeyError 'plain'"):
        LatencyProfile.from_json(json.dumps(damaged))
