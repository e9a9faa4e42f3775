"""Which runs the prefill/decode example's sweep makes (examples/pd/search.py): the coarse pass,
the configurations it keeps, the rates around each knee, later seeds, resumed runs and the
time budget. Runs are a made-up function of the rate: no GPU."""

from __future__ import annotations

import time

import pytest

from examples.pd.bench.metrics import metric_goodput
from examples.pd.bench.search import Config, OutOfTime, Sweep, next_rate, reusable, with_earlier


def fake(knees):
    """A run whose attainment falls linearly from 1 at half its knee to 0 at twice it, and whose
    P99 margin is rate / p99 knee: config name -> (DistServe knee, P99 knee)."""
    calls = []

    def run(config, seed, rate):
        calls.append((config.name, seed, rate))
        d_knee, p_knee = knees[config.name]
        d_knee *= 1 + 0.05 * (seed - 1)
        attainment = max(0.0, min(1.0, 1 - (rate - d_knee / 2) / (1.5 * d_knee)))
        return {"attainment": attainment, "p99_margin": rate / p_knee}

    return run, calls


def rates_of(sweep, config, seed):
    return sorted(sweep.points(config, seed))


def test_next_rate_bisects_then_fills_around_the_knee():
    # Passing at 2, failing at 8: the midpoint.
    assert next_rate({2.0: 1.0, 8.0: 0.2}, 0.9, True, 5, 0.1, 0.1) == 5.0
    # A narrow bracket and too few rates: around it.
    assert next_rate({4.0: 1.0, 4.2: 0.5}, 0.9, True, 5, 0.1, 0.1) == 3.2
    # Enough rates and a narrow bracket: done.
    assert next_rate({1.0: 1, 2.0: 1, 3.0: 1, 4.0: 1.0, 4.2: 0.5}, 0.9, True, 5, 0.1, 0.1) is None
    # Nothing passes: halve, down to the floor.
    assert next_rate({2.0: 0.1}, 0.9, True, 5, 0.1, 0.5) == 1.0
    assert next_rate({0.6: 0.1}, 0.9, True, 5, 0.1, 0.5) is None
    # Everything passes: go higher. Lower is better for the P99 margin.
    assert next_rate({2.0: 1.0, 4.0: 0.95}, 0.9, True, 5, 0.1, 0.5) == 6.0
    assert next_rate({2.0: 0.5, 8.0: 2.0}, 1.0, False, 5, 0.1, 0.5) == 5.0


def test_a_family_keeps_its_best_configuration_per_metric_and_brackets_both_knees():
    good_p99 = Config("chunked", "budget 256", 256, "fcfs")
    good_distserve = Config("chunked", "budget 2048", 2048, "fcfs")
    knees = {good_p99.name: (6.0, 5.0), good_distserve.name: (10.0, 1.0)}
    run, calls = fake(knees)
    sweep = Sweep(run, coarse=[2.0, 8.0, 16.0], seeds=[1, 2])
    chosen = sweep.family([good_p99, good_distserve])
    assert chosen == {"distserve": good_distserve, "p99": good_p99}
    for config, metric in ((good_distserve, "distserve"), (good_p99, "p99")):
        for seed in (1, 2):
            measured = sweep.points(config, seed)
            assert len(measured) >= 5
            assert metric_goodput(sorted(measured.items()), metric).how == "interpolated"
    # The P99 knee of budget 256 (margin 1 at 5 req/s) on both seeds.
    for seed in (1, 2):
        g = metric_goodput(sorted(sweep.points(good_p99, seed).items()), "p99")
        assert g.rate == pytest.approx(5.0, rel=0.1)
    # The distserve knee of budget 2048 (90% at 0.6 x 10 = 6 req/s) is found within the resolution.
    g = metric_goodput(sorted(sweep.points(good_distserve, 1).items()), "distserve")
    assert g.rate == pytest.approx(6.0, rel=0.1)
    # No run twice; skipped rates are recorded, not run.
    assert len(calls) == len(set(calls))
    assert all(not r["skipped"] or (r["scheduler"], r["config"], r["seed"], r["rate"]) not in
               [(r2["scheduler"], r2["config"], r2["seed"], r2["rate"]) for r2 in sweep.runs if not r2["skipped"]]
               for r in sweep.runs)


def test_the_coarse_pass_stops_above_a_rate_failing_both_metrics():
    config = Config("streams", "", None, "fcfs")
    run, calls = fake({config.name: (2.0, 1.0)})
    sweep = Sweep(run, coarse=[1.0, 4.0, 8.0, 16.0], seeds=[1], min_rates=1, max_rates=4)
    sweep.ascend(config, 1, sweep.coarse)
    assert [c[2] for c in calls] == [1.0, 4.0]  # 4 req/s: attainment 0.33 < 0.6 and margin 4
    assert [(r["rate"], r["skipped"]) for r in sweep.runs] == [(1.0, False), (4.0, False), (8.0, True), (16.0, True)]


def test_runs_done_before_are_reused_and_the_time_budget_stops_the_sweep():
    config = Config("pd", "", None, "spf")
    run, calls = fake({config.name: (8.0, 4.0)})
    first = Sweep(run, coarse=[2.0, 6.0, 12.0], seeds=[1])
    first.family([config])
    n = len(calls)
    again = Sweep(run, coarse=[2.0, 6.0, 12.0], seeds=[1], done=reusable(first.runs))
    again.family([config])
    assert len(calls) == n and again.runs == first.runs  # all reused, the same decisions
    late = Sweep(run, coarse=[2.0], seeds=[1], deadline=time.monotonic() + 5, run_s=60)
    with pytest.raises(OutOfTime, match="pd, spf, seed 1 at 2 req/s"):
        late.family([config])
    assert late.runs == []


def test_a_sweep_stopped_early_keeps_the_earlier_runs_it_has_not_reached():
    """A resumed sweep that makes one scheduler's runs again and runs out of time before the
    next scheduler keeps that scheduler's earlier runs (and drops the earlier skipped marks)."""
    a, b = Config("chunked", "budget 512", 512, "fcfs"), Config("streams", "", None, "fcfs")
    run, _ = fake({a.name: (8.0, 4.0), b.name: (6.0, 3.0)})
    first = Sweep(run, coarse=[2.0, 6.0, 12.0, 18.0], seeds=[1])
    first.family([a])
    first.family([b])
    earlier = [r for r in first.runs if r["scheduler"] == "streams"]
    assert any(r["skipped"] for r in earlier)
    again = Sweep(run, coarse=[2.0, 6.0, 12.0, 18.0], seeds=[1], done=reusable(earlier))
    again.family([a])
    kept = with_earlier(again.runs, earlier)
    assert kept[:len(again.runs)] == again.runs
    assert kept[len(again.runs):] == [r for r in earlier if not r["skipped"]]
    # A rate marked skipped now but measured before keeps its measured run.
    skipped_now = {**earlier[0], "skipped": True, "summary": None}
    assert not earlier[0]["skipped"] and earlier[0] in with_earlier(again.runs + [skipped_now], earlier)
    again.family([b])  # reaching it reuses each run once: nothing is listed twice
    assert with_earlier(again.runs, earlier) == again.runs
    assert [r for r in again.runs if r["scheduler"] == "streams"] == earlier


def test_the_best_configuration_also_runs_in_the_other_admission_order():
    fcfs = [Config("chunked", f"budget {b}", b, "fcfs") for b in (256, 2048)]
    knees = {"budget 256, fcfs": (4.0, 3.0), "budget 2048, fcfs": (8.0, 1.0), "budget 2048, spf": (12.0, 1.0),
             "budget 256, spf": (4.0, 2.0)}
    run, calls = fake(knees)
    sweep = Sweep(run, coarse=[2.0, 8.0], seeds=[1])
    chosen = sweep.family(fcfs, ["spf"])
    # budget 2048 is best under DistServe and improves with spf; budget 256 is best under P99 in fcfs.
    assert {m: c.name for m, c in chosen.items()} == {"distserve": "budget 2048, spf", "p99": "budget 256, fcfs"}
    assert {c[0] for c in calls} == set(knees)  # the spf variant of each metric's best ran too


def test_when_no_configuration_passes_the_one_nearest_to_passing_at_a_shared_rate_is_refined():
    small, large = (Config("chunked", f"budget {b}", b, "fcfs") for b in (128, 512))
    # Neither passes the P99 SLOs at the coarse rates. At 4 req/s budget 128 is nearly there
    # (margin 1.1); budget 512 has also run at 0.5 req/s, where its margin (1.2) beats what 128
    # shows at 4, and its mean over its rates is lower: neither may decide.
    figures = {small.name: {4.0: 1.1, 8.0: 4.0}, large.name: {0.5: 1.2, 4.0: 1.5, 8.0: 1.6}}

    def run(config, seed, rate):
        return {"attainment": 0.0, "p99_margin": figures[config.name][rate]}

    sweep = Sweep(run, coarse=[4.0, 8.0], seeds=[1])
    for config in (small, large):
        for rate in figures[config.name]:
            sweep.measure(config, 1, rate)
    assert sweep.best([small, large], 1, "p99") == small
    assert sweep.best([large, small], 1, "p99") == small
    # With no rate in common, each one's lowest rate decides.
    only_large = Sweep(run, coarse=[4.0, 8.0], seeds=[1])
    only_large.measure(large, 1, 0.5)
    only_large.measure(small, 1, 8.0)
    assert only_large.best([small, large], 1, "p99") == large
    assert sweep.best([], 1, "p99") is None


def test_configurations_passing_every_coarse_rate_run_higher_until_one_is_ahead():
    # All three pass DistServe's metric at every coarse rate (knees far above 4 req/s); list
    # order put budget 256 first, but budget 1024's knee is the highest.
    configs = [Config("chunked", f"budget {b}", b, "fcfs") for b in (256, 1024, 2048)]
    knees = {"budget 256, fcfs": (12.0, 3.0), "budget 1024, fcfs": (20.0, 1.0), "budget 2048, fcfs": (16.0, 0.5)}
    run, calls = fake(knees)
    sweep = Sweep(run, coarse=[1.0, 2.0, 4.0], seeds=[1])
    for config in configs:
        sweep.ascend(config, 1, sweep.coarse)
    assert sweep.best(configs, 1, "distserve") == configs[0]  # a tie, decided by list order
    sweep.untie(configs, 1, "distserve")
    assert sweep.best(configs, 1, "distserve") == configs[1]
    higher = sorted({rate for _, _, rate in calls if rate > 4.0})
    assert higher == [6.0, 9.0, 13.5]  # steps of 1.5 until budget 256 and 2048 fall behind
    assert {name for name, _, rate in calls if rate == 13.5} == {"budget 1024, fcfs", "budget 2048, fcfs"}
    # The P99 knees lie inside the coarse rates: nothing more to run.
    n = len(calls)
    sweep.untie(configs, 1, "p99")
    assert len(calls) == n
    chosen = Sweep(fake(knees)[0], coarse=[1.0, 2.0, 4.0], seeds=[1]).family(configs)
    assert chosen["distserve"] == configs[1] and chosen["p99"] == configs[0]


def test_a_bounded_leader_is_still_challenged_by_a_configuration_that_never_failed():
    leader, open_ended = Config("streams", "", None, "fcfs"), Config("streams", "", None, "spf")
    figures = {"fcfs": {2.0: 1.0, 4.0: 1.0, 8.0: 0.95, 12.0: 0.5}, "spf": {2.0: 1.0, 4.0: 1.0, 6.0: 1.0, 9.0: 0.95}}

    def run(config, seed, rate):
        return {"attainment": figures[config.name][rate], "p99_margin": 2.0}

    sweep = Sweep(run, coarse=[2.0, 4.0], seeds=[1])
    for rate in figures["fcfs"]:
        sweep.measure(leader, 1, rate)
    for rate in (2.0, 4.0):
        sweep.measure(open_ended, 1, rate)
    assert sweep.best([leader, open_ended], 1, "distserve") == leader
    sweep.untie([leader, open_ended], 1, "distserve")
    # fcfs's knee (about 8.4 req/s) is found; spf passes at 6, then at 9, where it leads alone.
    assert rates_of(sweep, open_ended, 1) == [2.0, 4.0, 6.0, 9.0]
    assert rates_of(sweep, leader, 1) == [2.0, 4.0, 8.0, 12.0]
    assert sweep.best([leader, open_ended], 1, "distserve") == open_ended
