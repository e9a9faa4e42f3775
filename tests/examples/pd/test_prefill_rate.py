"""The prefill rate read from a run's TTFT p99 (examples/pd/prefill_rate.py): a queue of known
rate is recovered, traces are rebuilt from a results file, bad input is refused. No GPU."""

from __future__ import annotations

import json

import pytest

from examples.pd.bench import cli
from examples.pd.bench.prefill_rate import fitted_rate, main, p99_ttft_ms, settings_of, table
from examples.pd.engine.request import Request
from examples.pd.bench.traces import trace_for


def test_a_queue_of_known_rate_is_recovered_from_its_p99():
    # Four 1000-token prompts at once, served at 1000 tokens/s: they finish at 1, 2, 3 and 4 s.
    burst = [Request(i, 0.0, 1000, 8) for i in range(4)]
    assert p99_ttft_ms(burst, 1000.0) == pytest.approx(3970.0)  # between 3 and 4 s, near the top
    # A request that arrives after the queue has drained waits only for its own prompt.
    assert p99_ttft_ms([Request(0, 0.0, 500, 8), Request(1, 10.0, 500, 8)], 1000.0) == pytest.approx(500.0)
    for rate in (2_000.0, 18_500.0, 250_000.0):
        assert fitted_rate(burst, p99_ttft_ms(burst, rate)) == pytest.approx(rate, rel=1e-6)
    with pytest.raises(ValueError, match="must be positive, got 0"):
        fitted_rate(burst, 0.0)


def results_for(workload, runs):
    return {"settings": cli.settings_dict(cli.parse(["--workload", workload, "--requests", "120"])), "runs": runs}


def test_the_table_rebuilds_each_runs_trace_and_lists_the_overloaded_runs_only():
    settings = settings_of(results_for("chat", []))
    assert (settings.workload, settings.requests) == ("chat", 120)
    trace = trace_for(settings, 8.0, 2)
    assert trace == trace_for(settings, 8.0, 2) and trace != trace_for(settings, 8.0, 1)
    assert max(r.arrival for r in trace) <= settings.arrival_s
    slow = p99_ttft_ms(trace, 3_000.0)
    assert slow > 1500
    runs = [{"scheduler": "pd", "config": "fcfs", "seed": 2, "rate": 8.0, "summary": {"p99_ttft_ms": slow}},
            {"scheduler": "pd", "config": "fcfs", "seed": 2, "rate": 4.0, "summary": {"p99_ttft_ms": 400.0}},
            {"scheduler": "pd", "config": "fcfs", "seed": 2, "rate": 12.0, "summary": None}]
    lines = table(results_for("chat", runs), 1500.0).splitlines()
    assert len(lines) == 3  # the header, its rule and the one overloaded run
    assert lines[2].startswith(f"| pd | fcfs | 2 | 8 | {len(trace)} |") and lines[2].endswith("| 3,000 |")


def test_a_results_file_whose_traces_cannot_be_rebuilt_is_refused(tmp_path, capsys):
    results = results_for("today", [])
    results["settings"]["requests"] = 0
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    for argv, message in (([str(path)], "requests"), ([str(tmp_path / "none.json")], "No such file")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
