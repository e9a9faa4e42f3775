"""The prefill/decode example's trace, metrics and estimates (examples/pd: workload.py,
metrics.py, estimates.py): plain Python, no GPU."""

from __future__ import annotations

import math
import statistics

import pytest

from examples.pd.bench.estimates import Costs, capacity, default_slo, expected_run_s, rates_from, run_cap
from examples.pd.bench.metrics import MARGIN_CAP, Goodput, RequestRecord, RunLog, goodput, metric_goodput, passes, ratio, summarize
from examples.pd.engine.request import Slo
from examples.pd.engine.steps import DecodeStep
from torch_green_contexts.sizing import percentile
from examples.pd.bench.workload import OUTPUTS, PROMPTS, WORKLOADS, Lengths, describe, make_trace
from examples.pd.engine.request import Request


def test_trace_is_seeded_and_the_same_requests_at_every_rate():
    a, b = make_trace(200, 4.0, seed=7), make_trace(200, 4.0, seed=7)
    assert a == b
    assert make_trace(200, 4.0, seed=8) != a
    fast = make_trace(200, 16.0, seed=7)
    assert [(r.prompt, r.output) for r in fast] == [(r.prompt, r.output) for r in a]
    assert all(f.arrival == pytest.approx(s.arrival / 4) for f, s in zip(fast, a))
    # A longer trace starts with the shorter one.
    assert make_trace(300, 4.0, seed=7)[:200] == a
    assert a[0].arrival == 0.0 and [r.id for r in a] == list(range(200))
    assert all(x.arrival <= y.arrival for x, y in zip(a, a[1:]))


def test_trace_lengths_are_clipped_log_normal_and_arrivals_poisson():
    t = make_trace(4000, 10.0, seed=1)
    prompts, outputs = [r.prompt for r in t], [r.output for r in t]
    assert min(prompts) == PROMPTS.low and max(prompts) == PROMPTS.high
    assert min(outputs) == OUTPUTS.low and max(outputs) == OUTPUTS.high
    assert statistics.median(prompts) == pytest.approx(PROMPTS.median, rel=0.08)
    assert statistics.median(outputs) == pytest.approx(OUTPUTS.median, rel=0.08)
    gaps = [b.arrival - a.arrival for a, b in zip(t, t[1:])]
    assert statistics.mean(gaps) == pytest.approx(0.1, rel=0.06)
    assert statistics.stdev(gaps) == pytest.approx(0.1, rel=0.1)  # exponential: sd == mean
    d = describe(t)
    assert d["requests"] == 4000 and d["prompt_max"] == PROMPTS.high


@pytest.mark.parametrize("kwargs", [dict(n=0, rate=1.0), dict(n=5, rate=0.0), dict(n=5, rate=math.inf)])
def test_trace_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_trace(**kwargs)
    with pytest.raises(ValueError):
        Lengths(10, 5, 7, 0.5)


def record(i=0, arrival=1.0, first=1.2, finish=2.2, output=11, tokens=None):
    return RequestRecord(i, arrival, 100, output, first, finish, output if tokens is None else tokens)


def test_ttft_tpot_and_meeting_the_slos():
    r = record(first=1.25, finish=2.25, output=5)  # binary fractions: exact comparisons
    assert r.ttft == 0.25 and r.tpot == 0.25
    assert r.meets(Slo(0.25, 0.25)) and not r.meets(Slo(0.2, 0.25)) and not r.meets(Slo(0.25, 0.24))
    unfinished = record(finish=None, tokens=5)
    assert unfinished.tpot is None and not unfinished.meets(Slo(10, 10))
    never = record(first=None, finish=None, tokens=0)
    assert never.ttft is None and not never.meets(Slo(10, 10))
    assert record(output=1, finish=1.2).tpot == 0.0


def test_summarize_counts_unfinished_requests_as_misses():
    log = RunLog([record(0), record(1, first=1.5, finish=2.5), record(2, finish=None, tokens=3),
                  record(3, first=None, finish=None, tokens=0)],
                 [DecodeStep(0.0, 0.01, 2, 2, "16"), DecodeStep(0.02, 0.05, 3, 4, "32"),
                  DecodeStep(0.06, 0.08, 3, 4, "32")], duration=4.0, cut_off=True)
    s = summarize(log, Slo(ttft=0.3, tpot=0.101))
    assert s["requests"] == 4 and s["finished"] == 2
    assert s["attainment"] == 0.25  # only request 0: request 1's TTFT is 0.5 s
    assert s["ttft_met"] == 0.5 and s["tpot_met"] == 0.5
    assert s["ttft_ms"]["n"] == 3 and s["tpot_ms"]["n"] == 2
    assert s["step_ms"]["p50"] == pytest.approx(20.0) and s["step_ms"]["max"] == pytest.approx(30.0)
    assert s["steps_within_tpot"] == 1.0
    assert summarize(log, Slo(0.3, 0.025))["steps_within_tpot"] == pytest.approx(2 / 3)
    assert s["output_tokens"] == 11 + 11 + 3 and s["output_tokens_per_s"] == pytest.approx(25 / 4)
    assert s["steps_per_lane"] == {"16": 1, "32": 2} and s["largest_bucket"] == 4
    empty = summarize(RunLog([record()], [], 1.0, False), Slo(1, 1))
    assert empty["steps_within_tpot"] is None and empty["step_ms"]["p99"] is None


def test_percentile_interpolates_between_ranks():
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0], 25) == 1.25
    assert percentile(list(range(101)), 99) == 99
    with pytest.raises(ValueError):
        percentile([], 50)


def test_goodput_interpolates_between_the_last_rate_meeting_the_target_and_the_next():
    assert goodput([(2.0, 1.0), (4.0, 0.95), (6.0, 0.85)]) == Goodput(pytest.approx(5.0), "interpolated", (4.0, 6.0))
    # Order of the points does not matter; a dip below the target at a lower rate is noise.
    assert goodput([(6.0, 0.5), (2.0, 0.88), (4.0, 0.9)]) == Goodput(4.0, "interpolated", (4.0, 6.0))
    assert goodput([(2.0, 1.0), (4.0, 0.92)]) == Goodput(4.0, "highest measured")
    assert goodput([(2.0, 0.8), (4.0, 0.1)]) == Goodput(0.0, "none met")
    with pytest.raises(ValueError):
        goodput([])
    with pytest.raises(ValueError):
        goodput([(2.0, 1.0), (2.0, 0.5)])
    assert ratio(6.0, 4.0) == 1.5 and ratio(1.0, 0.0) is None


COSTS = Costs(decode_step_s=0.008, decode_batch=32, prefill_s=0.12, prefill_tokens=4096)


def test_slos_capacity_and_rates_come_from_the_measured_costs():
    slo = default_slo(COSTS, ttft_x=5, tpot_x=5)
    assert slo == Slo(ttft=pytest.approx(0.6), tpot=pytest.approx(0.04))
    t = [Request(0, 0.0, 1024, 100), Request(1, 1.0, 2048, 300)]
    per_request = 1536 * 0.12 / 4096 + 200 * 0.008 / 32
    assert capacity(t, COSTS) == pytest.approx(1 / per_request)
    assert rates_from(10.0, (0.3, 0.5, 0.5, 0.123456)) == [1.23, 3.0, 5.0]


def test_the_cap_leaves_time_for_every_request_meeting_its_slos():
    t = make_trace(50, 5.0, seed=2)
    slo = Slo(ttft=0.5, tpot=0.03)
    cap = run_cap(t, slo, margin_s=0.0)
    for r in t:  # the latest a request meeting both SLOs can finish
        assert r.arrival + slo.ttft + (r.output - 1) * slo.tpot <= cap + 1e-9
    assert cap == pytest.approx(t[-1].arrival + 0.5 + (max(r.output for r in t) - 1) * 0.03)
    assert expected_run_s(t, COSTS, cap_s=1.0) == pytest.approx(1.5)  # capped, plus warm-up
    assert expected_run_s(t, COSTS, cap_s=1e9) < cap + 0.5


@pytest.mark.parametrize("name", ["today", "chat", "long-prompt"])
def test_named_workloads_draw_the_lengths_they_describe(name):
    w = WORKLOADS[name]
    t = make_trace(3000, 5.0, seed=2, prompts=w.prompts, outputs=w.outputs)
    prompts, outputs = [r.prompt for r in t], [r.output for r in t]
    assert w.prompts.low <= min(prompts) and max(prompts) <= w.prompts.high
    assert w.outputs.low <= min(outputs) and max(outputs) <= w.outputs.high
    assert statistics.median(prompts) == pytest.approx(w.prompts.median, rel=0.08)
    assert statistics.median(outputs) == pytest.approx(w.outputs.median, rel=0.08)
    assert make_trace(3000, 5.0, seed=3, prompts=w.prompts, outputs=w.outputs) != t


def test_p99_figures_count_requests_without_a_first_token_as_infinitely_late():
    slo = Slo(ttft=1.0, tpot=0.02)
    done = [RequestRecord(i, 0.0, 100, 3, 0.5, 0.54, 3) for i in range(99)]
    log = RunLog(done + [RequestRecord(99, 0.0, 100, 3, 0.9, 0.94, 3)], [], 2.0, False, [0.02] * 198 + [0.01] * 2)
    s = summarize(log, slo)
    assert s["p99_ttft_ms"] == pytest.approx(504.0)  # 99 at 0.5 s, one at 0.9 s
    assert s["itl_ms"]["p99"] == pytest.approx(20.0)
    assert s["p99_margin"] == pytest.approx(1.0)  # the ITL p99 sits at its SLO
    # Two requests never got a first token: the P99 TTFT is infinite, the margin capped.
    cut = RunLog(done[:98] + [RequestRecord(98, 0.0, 100, 3, None, None, 0), RequestRecord(99, 0.0, 100, 3, None,
                                                                                             None, 0)],
                 [], 2.0, True, [0.01] * 10)
    s = summarize(cut, slo)
    assert s["p99_ttft_ms"] is None and s["p99_margin"] == MARGIN_CAP
    assert summarize(RunLog(done, [], 1.0, False, []), slo)["itl_ms"]["n"] == 0


def test_p99_goodput_is_read_where_the_margin_crosses_one():
    points = [(2.0, {"attainment": 1.0, "p99_margin": 0.5}), (4.0, {"attainment": 0.95, "p99_margin": 0.9}),
              (8.0, {"attainment": 0.5, "p99_margin": 1.3})]
    g = metric_goodput(points, "p99")
    assert (g.rate, g.how) == (pytest.approx(4.0 + 0.1 / 0.4 * 4.0), "interpolated")
    assert metric_goodput(points, "distserve").rate == pytest.approx(4.0 + 0.05 / 0.45 * 4.0)
    assert goodput([(1.0, 0.2), (2.0, 0.8)], 1.0, higher=False) == Goodput(2.0, "highest measured")
    assert goodput([(1.0, 1.2)], 1.0, higher=False) == Goodput(0.0, "none met")
    assert passes(1.0, 1.0, False) and not passes(1.01, 1.0, False) and passes(0.9, 0.9, True)
