"""The prefill/decode example's command line and report (examples/pd: cli.py, report.py):
option checks, --quick, goodput per scheduler, the comparisons, the table and the plot."""

from __future__ import annotations

import pytest

from examples.pd import cli
from examples.pd.report import comparison, plot, run_entry, schedulers, table


def test_defaults_and_quick():
    s = cli.parse([])
    assert (s.layers, s.requests, s.max_slots, s.budgets) == (32, 80, 96, (512, 1024, 2048, 4096))
    assert s.schedulers == cli.SCHEDULERS and s.rates is None and s.piece_layers == 4
    assert s.max_len == 4096 + 512 and s.layout_counts is None
    q = cli.parse(["--quick"])
    assert (q.layers, q.requests, q.budgets, q.load_fractions) == (4, 20, (1024,), (0.4, 0.7))
    assert q.piece_layers == 1 and q.static_candidates == 1 and (q.max_output, q.output_median) == (128, 48)
    assert q.max_len == 4096 + 128
    # What is given on the command line wins over --quick.
    q = cli.parse(["--quick", "--layers", "8", "--budgets", "256,512", "--schedulers", "d,a,d"])
    assert (q.layers, q.budgets, q.schedulers, q.piece_layers) == (8, (256, 512), ("policy", "chunked"), 1)


@pytest.mark.parametrize("argv, message", [
    (["--layers", "0"], "--layers must be at least 1"),
    (["--layers", "40"], "32 or fewer"),
    (["--budgets", "512,96"], "--budgets must exceed --max-slots"),
    (["--rates", "1,x"], "comma-separated arrival rates"),
    (["--rates", "2,-1"], "--rates must all be positive"),
    (["--rates", "2,2"], "repeated rates"),
    (["--schedulers", "e"], "schedulers among"),
    (["--tpot-slo-ms", "0"], "--tpot-slo-ms must be positive"),
    (["--max-prompt", "100"], "--min-prompt <= --max-prompt"),
    (["--chunk", "9000"], "--chunk (9000) must not exceed"),
    (["--context", "4608"], "--context (4608) must be below"),
    (["--piece-layers", "5", "--layers", "4"], "must not exceed --layers"),
    (["--stop-below", "1.5"], "between 0 and 1"),
    (["--policy-headroom", "1"], "--policy-headroom must be at least 0 and below 1"),
    (["--attention", "xformers"], "invalid choice"),
])
def test_bad_options_exit_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def summary(attainment, steps_within=0.995, step_p99=30.0):
    return {"attainment": attainment, "steps_within_tpot": steps_within, "requests": 10, "finished": 10,
            "ttft_ms": {"p50": 100.0, "p99": 300.0}, "tpot_ms": {"p50": 20.0, "p99": 30.0},
            "step_ms": {"p50": 15.0, "p99": step_p99}, "output_tokens_per_s": 1234.0}


RUNS = [
    run_entry("chunked", "budget 512", 2.0, summary(0.95)), run_entry("chunked", "budget 512", 4.0, summary(0.5)),
    run_entry("chunked", "budget 1024", 2.0, summary(1.0)), run_entry("chunked", "budget 1024", 4.0, summary(0.7)),
    run_entry("policy", "split policy", 2.0, summary(1.0)), run_entry("policy", "split policy", 4.0, summary(0.96)),
    run_entry("policy", "split policy", 6.0, summary(0.4, 0.9)), run_entry("policy", "split policy", 8.0, None),
    run_entry("static", "32 SMs", 2.0, summary(0.9)), run_entry("static", "32 SMs", 4.0, summary(0.3)),
]


def test_goodput_per_scheduler_takes_the_best_configuration():
    fams = schedulers(RUNS)
    assert list(fams) == ["chunked", "static", "policy"]
    assert fams["chunked"]["best"] == "budget 1024"
    assert fams["chunked"]["goodput"] == pytest.approx(2.0 + 0.1 / 0.3 * 2.0)
    assert fams["chunked"]["configs"]["budget 512"]["goodput"] == pytest.approx(2.0 + 0.05 / 0.45 * 2.0)
    assert fams["policy"]["goodput"] == pytest.approx(4.0 + 0.06 / 0.56 * 2.0)
    assert fams["static"] == {"best": "32 SMs", "goodput": 2.0, "how": "interpolated",
                              "configs": {"32 SMs": {"goodput": 2.0, "how": "interpolated", "mean_attainment": 0.6}}}
    c = comparison(RUNS, fams)
    assert c["policy_over_chunked"] == pytest.approx(fams["policy"]["goodput"] / fams["chunked"]["goodput"])
    assert c["policy_over_static"] == pytest.approx(fams["policy"]["goodput"] / 2.0)
    assert "policy_over_streams" not in c
    assert c["policy_steps_within_tpot_at_goodput"] == {"rate": 4.0, "share": 0.995}
    assert c["policy_steps_within_tpot_above_goodput"] == {"rate": 6.0, "share": 0.9}
    assert comparison(RUNS[:4], schedulers(RUNS[:4])) == {"target_attainment": 0.9}


def test_table_and_plot(tmp_path):
    results = {"runs": RUNS, "schedulers": schedulers(RUNS), "slo": {"ttft_ms": 500.0, "tpot_ms": 40.0},
               "model": {"layers": 4}, "device": {"name": "test GPU"}}
    text = table(results)
    assert "| split policy | split policy | 4.21 | interpolated |" in text
    assert "| split policy | split policy | 8.00 | skipped |" in text
    assert "| chunked prefill | budget 512 | 2.00 | 95.0% | 100/300 | 20/30 | 15/30 | 99.5% | 1234 | 0 |" in text
    pytest.importorskip("matplotlib")
    path = tmp_path / "attainment.png"
    assert plot(results, str(path)) == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
