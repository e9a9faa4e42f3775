"""PrefillDecodePolicy's options (no GPU): the static anchor, the worst-case contention guard
that cannot lock a layout out, the dwell that stops flapping, the P99 and DistServe modes, KV
pressure and the mixed-batch fallback, each changing the choice the way it claims; bad options
and observations refused."""

import math

import pytest

from tests.test_pd_policy import TOTAL, FakeLayouts, make_profile, step_us
from torch_green_contexts import _pd_choice, _pd_options
from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.step_policy import StepPolicy


class ManualTimer:
    """Steps timed by hand: ``read`` hands out the latencies ``finish`` gave, in order."""

    def __init__(self):
        self.pending, self._open, self.done = [], None, []

    def begin(self, key, tag, stream, step, timed=True):
        self._open = (key, tag) if timed else None

    def end(self):
        if self._open is not None:
            self.pending.append(self._open)
            self._open = None

    def finish(self, latency_us):
        self.done += [(key, tag, latency_us) for key, tag in self.pending]
        self.pending = []

    def read(self, observe):
        done, self.done = self.done, []
        for key, tag, us in done:
            observe(key, tag, us)
        return len(done)


# A decode step of 16 requests holding 64k tokens (tests/test_pd_policy.py): 10.3 ms on 16 SMs, 5.2
# on layout 0 (beside prefill on the whole device), 4.1 on (16, 64), 2.6 on 64 SMs, 1.3 on all; one
# request of 1k tokens: 8.0, 4.0, 3.2, 2.0 and 1.0 ms. The step budget is 5 ms less 5%.
BATCH, CONTEXT = 16, 64_000
LIGHT = (1, 1_000)


def policy(**options):
    timer = options.pop("timer", ManualTimer())
    return PrefillDecodePolicy(make_profile(), FakeLayouts(), tpot_slo_us=5000, timer=timer, read_every=1, **options)


def test_both_policies_are_step_policies():
    from tests.test_profile_policy import FakeLayouts as CountLayouts, make_profile as latency_profile
    from torch_green_contexts.policy import SplitPolicy

    pd, split = policy(), SplitPolicy(latency_profile(), CountLayouts(), slo_us=5000)
    assert isinstance(pd, StepPolicy) and isinstance(split, StepPolicy)  # the protocol is runtime-checkable
    assert pd.idle_key() == 0 and split.idle_key() == 0  # all SMs to prefill while nothing decodes
    assert not isinstance(object(), StepPolicy)


def test_without_options_the_budget_rule_is_unchanged():
    legacy, plain = policy(), policy(dwell_steps=0, guard=False, mode="distserve")
    for figures in ((BATCH, CONTEXT, 4096), (64, 256_000, 100), (1, 1_000, 10)):
        assert legacy.choose(*figures[:2], prefill_tokens=figures[2]) == plain.choose(*figures[:2], prefill_tokens=figures[2])
    assert legacy.options.legacy and legacy.choose(BATCH, CONTEXT, prefill_tokens=4096) == (16, 64)
    assert step_us((16, 64), BATCH, CONTEXT) < 4750 < step_us(0, BATCH, CONTEXT)


def test_the_anchor_is_kept_while_it_fits_and_left_upwards_or_for_a_late_prompt():
    p = policy(anchor=64)
    # (16, 64) fits and gives prefill more SMs, but the anchor fits too: it stays.
    assert p.choose(BATCH, CONTEXT, prefill_tokens=4096, ttft_slack_us=5e5) == 64
    # A light step and a late prompt: the layout with fewer decode SMs that fits (all SMs to prefill).
    assert p.choose(*LIGHT, prefill_tokens=4096, ttft_slack_us=5e5) == 64
    assert p.choose(*LIGHT, prefill_tokens=4096, ttft_slack_us=-1.0) == 0
    # The anchor breaks the budget (a heavy step) and no split with more decode SMs fits: the
    # fastest split, never the end layout with every SM to decode (prefill would run on them).
    heavy = (64, 512_000)
    assert step_us(64, *heavy) > 4750 and p.choose(*heavy, prefill_tokens=4096) == 64
    assert p.choose(*heavy, prefill_tokens=0) == 132  # with no prefill waiting, every SM to decode
    wider = policy(anchor=(16, 64))  # 68 decode SMs; 64 has fewer but is faster
    assert wider.choose(BATCH, CONTEXT, prefill_tokens=4096) == (16, 64)
    assert wider.choose(*heavy, prefill_tokens=4096) == 64  # the anchor breaks the budget: the fastest split
    # Without the anchor the budget rule sizes decode to the edge.
    assert policy().choose(BATCH, CONTEXT, prefill_tokens=4096, ttft_slack_us=5e5) == (16, 64)


def test_the_guard_learns_the_worst_slowdown_and_cannot_lock_a_layout_out():
    timer = ManualTimer()
    p = policy(guard=True, guard_half_life_steps=50, timer=timer)
    assert p.choose(BATCH, CONTEXT, prefill_tokens=4096) == (16, 64)
    p.step(BATCH, CONTEXT, prefill_tokens=4096)
    p.done()
    timer.finish(1.5 * step_us((16, 64), BATCH, CONTEXT))  # 1.5 times the profile's figure
    p.update()
    assert p.stats()["guard"]["(16, 64)"][2] == pytest.approx(1.5)
    # Guarded, (16, 64) no longer fits: the next layout by batch SMs that fits is 64.
    assert p.choose(BATCH, CONTEXT, prefill_tokens=4096) == 64
    # A slowdown on 64 SMs is at least as large on layouts with fewer: 16 is guarded as much.
    p._guard.observe(64, 2, 1.5)
    assert p.estimate(16, BATCH, CONTEXT, prefill_tokens=4096) >= 1.5 * step_us(16, BATCH, CONTEXT)
    # Nothing more is seen on (16, 64): the guard decays, and the layout is chosen again.
    for _ in range(1000):
        p.step(1, 1_000)  # no prefill waiting: steps elsewhere
        p.done()
    assert p.choose(BATCH, CONTEXT, prefill_tokens=4096) == (16, 64)
    # The guard is per load class: a step with no prefill beside it changed nothing there.
    assert p.stats()["guard"]["64"][0] == 1.0


def test_a_dwell_stops_the_layout_from_flapping():
    def alternate(p, steps):
        switches, last = 0, None
        for i in range(steps):
            late = -1.0 if i % 2 else 5e5  # a prompt late every other step: down, then back to the anchor
            p.step(*LIGHT, prefill_tokens=4096, ttft_slack_us=late)
            p.done()
            key = p._current
            switches += key != last
            last = key
        return switches

    assert alternate(policy(anchor=64), 40) >= 39
    assert alternate(policy(anchor=64, dwell_steps=10), 40) <= 8


def test_p99_mode_spends_no_slack_and_distserve_mode_does():
    slack = 6000.0  # the running requests' TPOT slack: with all of it 16 SMs (10.3 ms) would fit
    distserve = policy(mode="distserve", slack_share=1.0, anchor=64)
    p99 = policy(mode="p99", slack_share=1.0, anchor=64)
    assert distserve.budget_us(slack) == pytest.approx(10750) and p99.budget_us(slack) == pytest.approx(4750)
    figures = dict(prefill_tokens=4096, tpot_slack_us=slack, ttft_slack_us=-1.0)
    assert distserve.choose(BATCH, CONTEXT, **figures) == 0  # spends the slack on prefill
    assert p99.choose(BATCH, CONTEXT, **figures) == 64  # keeps every step within the budget
    assert p99.options.guard and not distserve.options.guard


def test_p99_mode_without_waiting_prefill_leaves_every_sm_when_the_guard_says_it_breaks_the_budget():
    """Prompts that arrive during a step run beside it: on the end layout they share decode's
    SMs. The P99 mode keeps a step with nothing waiting on every SM while its guarded estimate
    fits the budget (4.75 ms), and takes the fastest layout under the guard when it does not."""
    whole = step_us(TOTAL, BATCH, CONTEXT)  # 1.3 ms
    for slowdown, p99_choice in ((3, TOTAL), (4, 64)):  # 3.9 ms fits; 5.2 ms does not, 64 SMs take 2.6
        p99, distserve = policy(mode="p99"), policy(mode="distserve", guard=True)
        assert p99.choose(BATCH, CONTEXT) == distserve.choose(BATCH, CONTEXT) == TOTAL  # nothing seen
        for p in (p99, distserve):
            p.observe(TOTAL, BATCH, CONTEXT, slowdown * whole)  # a prompt arrived mid-step
        assert p99.estimate(TOTAL, BATCH, CONTEXT) == pytest.approx(slowdown * whole)
        assert p99.choose(BATCH, CONTEXT) == p99_choice
        assert distserve.choose(BATCH, CONTEXT) == TOTAL  # the budget rule: decode takes the most SMs
        assert p99.choose(0, 0) == p99.idle_key() == 0  # no decode work: prefill takes every SM


def test_p99_mode_without_waiting_prefill_never_takes_the_layout_without_decode_sms():
    """Layout 0 gives decode no SMs of its own: even when the guard makes its estimate the
    smallest, a step with nothing waiting takes the fastest layout that has decode SMs."""
    p = policy(mode="p99")
    for key, slowdown in ((TOTAL, 5), (64, 3), ((16, 64), 2), (16, 1)):  # 6.5, 7.8, 8.2, 10.3 ms
        p.observe(key, BATCH, CONTEXT, slowdown * p.estimate(key, BATCH, CONTEXT))
    estimates = {k: p.estimate(k, BATCH, CONTEXT) for k in (0, 16, (16, 64), 64, TOTAL)}
    assert min(estimates, key=estimates.get) == 0, estimates  # 5.2 ms: the smallest estimate
    assert p.choose(BATCH, CONTEXT) == TOTAL


def test_kv_pressure_puts_decode_first_when_full_and_prefill_first_when_empty():
    p = policy(anchor=(16, 64), kv_pressure=(0.8, 0.3))
    assert p.choose(BATCH, CONTEXT, prefill_tokens=4096, kv_used=0.9) == 64  # the fastest split
    assert p.choose(*LIGHT, prefill_tokens=4096, kv_used=0.1) == 0  # the budget rule: prefill first
    assert p.choose(*LIGHT, prefill_tokens=4096, kv_used=0.5) == (16, 64)  # the anchor
    assert p.choose(*LIGHT, prefill_tokens=4096) == (16, 64)  # unknown: the anchor


def test_a_light_prefill_queue_runs_as_one_mixed_step_on_the_whole_device():
    mixed = lambda batch, context, tokens: step_us(132, batch, context) + 5 * tokens  # noqa: E731
    p = policy(anchor=64, mixed_step_us=mixed, mixed_tokens=256)
    layout = p.step(BATCH, CONTEXT, prefill_tokens=200)
    assert layout.sm_count == 132 and p.mixed_tokens == 200 and p.stats()["mixed_steps"] == 1
    p.done()
    assert not p._timer.pending, "a mixed step is not timed as a decode step"
    p.step(BATCH, CONTEXT, prefill_tokens=2000)  # more than the fallback takes
    assert p.mixed_tokens == 0 and p.choose(BATCH, CONTEXT, prefill_tokens=2000) == 64
    too_slow = policy(mixed_step_us=lambda b, c, t: 1e6, mixed_tokens=256)
    too_slow.step(BATCH, CONTEXT, prefill_tokens=200)
    assert too_slow.mixed_tokens == 0


@pytest.mark.parametrize("options, error, message", [
    ({"mode": "p90"}, ValueError, "mode must be one of 'distserve', 'p99'"),
    ({"anchor": 48}, ValueError, "anchor 48 is not a layout"),
    ({"guard": "yes"}, TypeError, "guard"),
    ({"guard_half_life_steps": 0}, ValueError, "guard_half_life_steps"),
    ({"guard_classes": (2048, 0)}, ValueError, "strictly ascending"),
    ({"dwell_steps": -1}, ValueError, "dwell_steps"),
    ({"kv_pressure": (0.3, 0.8)}, ValueError, "0 <= low < high <= 1"),
    ({"kv_pressure": 0.8}, TypeError, "kv_pressure must be"),
    ({"mixed_step_us": 5.0}, TypeError, "mixed_step_us must be a callable"),
    ({"mixed_tokens": 0}, ValueError, "mixed_tokens"),
])
def test_bad_options_name_what_is_allowed(options, error, message):
    with pytest.raises(error, match=message):
        policy(**options)


def test_bad_observations_and_kv_shares_are_refused_not_folded_in():
    p = policy(guard=True)
    for bad in (math.nan, math.inf, -1.0):
        with pytest.raises(ValueError):
            p.observe(64, BATCH, CONTEXT, bad)
    with pytest.raises(ValueError, match="a slowdown must be a finite number above 0"):
        p._guard.observe(64, 0, math.nan)
    assert p.stats()["guard"]["64"] == [1.0, 1.0, 1.0]
    for bad, error in ((1.5, ValueError), (-0.1, ValueError), ("full", TypeError), (math.nan, ValueError)):
        with pytest.raises(error, match="kv_used"):
            p.choose(BATCH, CONTEXT, prefill_tokens=10, kv_used=bad)


def test_bad_waiting_prompt_tokens_are_refused_before_anything_moves():
    p = policy(mode="p99")
    for bad, error in ((math.nan, ValueError), (math.inf, ValueError), (-1, ValueError), ("many", TypeError)):
        with pytest.raises(error, match="prefill_tokens"):
            p.step(BATCH, CONTEXT, prefill_tokens=bad)
        with pytest.raises(error, match="prefill_tokens"):
            p.choose(BATCH, CONTEXT, prefill_tokens=bad)
    assert p.stats()["steps"] == 0 and sum(p.stats()["chosen"].values()) == 0


def test_when_nothing_fits_the_fastest_wins_and_a_tie_goes_to_more_decode_sms():
    options = _pd_options.check("distserve", None, False, (0,), 1, 0, None, None, 1, [0, 16, 64])
    sms = {0: 0, 16: 16, 64: 64}
    pick = lambda estimates: _pd_choice.choose([0, 16, 64], sms, estimates, 100.0, options, current=None,  # noqa: E731
                                               steps_on_current=0, hysteresis=0.05, ttft_slack_us=None, kv_used=None)
    assert pick({0: 300.0, 16: 200.0, 64: 250.0}) == 16
    assert pick({0: 300.0, 16: 200.0, 64: 200.0}) == 64
    assert pick({0: 90.0, 16: 50.0, 64: 80.0}) == 0, "the first that fits: most batch SMs"


@pytest.mark.parametrize("options", [{}, {"mode": "distserve", "dwell_steps": 1}])
def test_a_layout_whose_estimate_is_the_budget_to_the_last_bit_fits(options):
    context = 234_877
    budget = policy().estimate((16, 64), BATCH, context)
    p = PrefillDecodePolicy(make_profile(), FakeLayouts(), tpot_slo_us=budget, headroom=0.0, timer=ManualTimer(),
                            **options)
    assert p.budget_us() == budget and p.estimate((16, 64), BATCH, context) == budget
    assert p.choose(BATCH, context, prefill_tokens=100) == (16, 64)
    with pytest.raises(ValueError, match="prefill_tokens"):
        p.estimate(64, BATCH, context, prefill_tokens=math.nan)
