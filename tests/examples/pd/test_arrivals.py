"""Arrival processes of the traces (examples/pd/bench/arrivals.py): Poisson as before, bursty
Gamma gaps, a stepped rate; the options and their errors. No GPU."""

from __future__ import annotations

import statistics

import pytest

from examples.pd.bench import cli
from examples.pd.bench.arrivals import Arrivals
from examples.pd.bench.traces import trace_for
from examples.pd.bench.workload import make_trace


def gaps_cv(times):
    gaps = [b - a for a, b in zip(times, times[1:])]
    return statistics.pstdev(gaps) / statistics.fmean(gaps)


def test_poisson_traces_are_the_traces_of_before():
    trace = make_trace(5, 2.0, seed=7)
    assert [round(r.arrival, 6) for r in trace] == [round(t, 6) for t in Arrivals().times(5, 2.0, 7)]
    assert trace[0].arrival == 0.0 and all(a.arrival < b.arrival for a, b in zip(trace, trace[1:]))


@pytest.mark.parametrize("cv", [2.0, 4.0])
def test_gamma_gaps_have_the_mean_rate_and_the_coefficient_of_variation(cv):
    times = Arrivals.parse(f"gamma:{cv:g}").times(20000, 10.0, 3)
    assert len(times) / times[-1] == pytest.approx(10.0, rel=0.1)
    assert gaps_cv(times) == pytest.approx(cv, rel=0.15)
    # A rate only scales the gaps: the same requests arrive in the same order.
    assert Arrivals.parse(f"gamma:{cv:g}").times(50, 5.0, 3) == pytest.approx([t * 2 for t in
                                                                                Arrivals.parse(f"gamma:{cv:g}").times(50, 10.0, 3)])


def test_a_stepped_rate_alternates_between_its_levels_every_period():
    times = Arrivals.parse("rate-step").times(4000, 10.0, 1)
    per_period = [sum(1 for t in times if 10 * k <= t < 10 * (k + 1)) for k in range(6)]
    assert all(per_period[k] < 0.5 * per_period[k + 1] for k in (0, 2, 4))  # 0.4x, then 1.6x
    assert sum(per_period) / 60 == pytest.approx(10.0, rel=0.1)
    slow = Arrivals.parse("rate-step:0.5,1.5,5")
    assert (slow.low, slow.high, slow.period_s) == (0.5, 1.5, 5.0) and slow.label == "rate-step 0.5x/1.5x every 5 s"


def test_labels_and_bad_arrivals():
    assert [Arrivals.parse(t).label for t in ("poisson", "gamma:4")] == ["poisson", "gamma cv 4"]
    for text, message in (("gamma", "gamma:CV"), ("gamma:x", "must be numbers"), ("uniform", "poisson, gamma:CV"),
                          ("gamma:0", "positive coefficient"), ("rate-step:2,1,10", "low <= high"),
                          ("rate-step:1,2", "rate-step")):
        with pytest.raises(ValueError, match=message):
            Arrivals.parse(text)


def test_the_option_reaches_the_trace_and_is_checked(capsys):
    s = cli.parse(["--arrivals", "gamma:4", "--requests", "200"])
    assert s.arrivals == "gamma:4" and cli.settings_dict(s)["arrivals"] == "gamma:4"
    assert gaps_cv([r.arrival for r in trace_for(s, 10.0, 1)]) > 2
    with pytest.raises(SystemExit):
        cli.parse(["--arrivals", "gamma:-1"])
    assert "--arrivals: a Gamma arrival process needs a positive coefficient" in capsys.readouterr().err
