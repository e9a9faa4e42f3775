"""The prefill/decode example's command line and report (examples/pd: cli.py, report.py):
option checks, --quick and workloads, goodput per scheduler under both metrics and seeds, the
comparisons with their ties, the tables and the plots."""

from __future__ import annotations

import importlib.util
import json

import pytest

from examples.pd.bench import cli
from examples.pd.bench.report import comparison, plot, refined, schedulers, table
from examples.pd.bench.search import Config, entry


def test_defaults_quick_and_workloads():
    s = cli.parse([])
    assert (s.layers, s.requests, s.arrival_s, s.max_slots, s.budgets) == (32, 300, 15.0, None, (128, 256, 512, 1024, 2048))
    assert s.schedulers == cli.DEFAULT_SCHEDULERS and s.admission == ("fcfs", "spf") and s.seeds == (1, 2)
    assert s.rates is None and s.piece_layers == 4 and s.max_len == 4096 + 512 and s.layout_counts is None
    q = cli.parse(["--quick"])
    assert (q.layers, q.requests, q.budgets, q.load_fractions, q.seeds) == (4, 20, (1024,), (0.4, 0.7), (1,))
    assert q.piece_layers == 1 and q.static_candidates == 1 and (q.max_output, q.output_median) == (128, 48)
    assert q.max_len == 4096 + 128 and q.max_slots == 32
    # What is given on the command line wins over --quick.
    q = cli.parse(["--quick", "--layers", "8", "--budgets", "256,512", "--schedulers", "g,a,g", "--seeds", "3,3,4"])
    assert (q.layers, q.budgets, q.schedulers, q.piece_layers, q.seeds) == (8, (256, 512), ("pd-overlap", "chunked"),
                                                                            1, (3, 4))
    chat = cli.parse(["--workload", "chat"])
    assert (chat.min_prompt, chat.max_prompt, chat.prompt_median, chat.output_median) == (32, 2048, 500, 200)
    long = cli.parse(["--workload", "long-prompt", "--max-output", "64"])
    assert (long.min_prompt, long.max_prompt, long.max_output) == (4096, 16384, 64)
    assert cli.parse(["--overlapped", "16/64,32/32"]).overlapped == ((16, 64), (32, 32))
    assert cli.settings_dict(cli.parse(["--overlapped", "16/64"]))["overlapped"] == [[16, 64]]


def test_a_resumed_sweep_needs_the_same_settings_and_drops_the_runs_of_rerun_schedulers(tmp_path):
    from examples.pd.bench.sweep import load_resume

    runs = [entry(Config("chunked", "budget 1024", 1024, "fcfs"), 1, 2.0, {"attainment": 1.0}),
            entry(Config("streams", "", None, "fcfs"), 1, 2.0, {"attainment": 1.0})]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"settings": cli.settings_dict(cli.parse(["--quick"])), "runs": runs}))
    kept = load_resume(cli.parse(["--quick", "--resume", str(path), "--time-budget-s", "60", "--schedulers", "a,f"]))
    assert [r["scheduler"] for r in kept["runs"]] == ["chunked", "streams"]
    again = cli.parse(["--quick", "--resume", str(path), "--rerun", "a"])  # "a": chunked's alias
    assert again.rerun == ("chunked",)
    assert [r["scheduler"] for r in load_resume(again)["runs"]] == ["streams"]
    # Budgets may change on resuming (a budget's runs do not depend on the others), but each
    # must stay above the resumed engine's slot count.
    path.write_text(json.dumps({"settings": cli.settings_dict(cli.parse(["--quick"])), "runs": runs,
                                "model": {"slots": 100}}))
    assert len(load_resume(cli.parse(["--quick", "--budgets", "128,1024", "--resume", str(path)]))["runs"]) == 2
    with pytest.raises(SystemExit, match="100 slots, so --budgets must exceed 100.*got 64,100"):
        load_resume(cli.parse(["--quick", "--budgets", "64,100,1024", "--resume", str(path)]))
    with pytest.raises(SystemExit, match="settings differ in layers"):
        load_resume(cli.parse(["--quick", "--layers", "8", "--resume", str(path)]))
    with pytest.raises(SystemExit):
        cli.parse(["--rerun", "everything"])


def test_resuming_a_file_that_is_not_a_results_file_says_so(tmp_path):
    from examples.pd.bench.sweep import load_resume

    text = tmp_path / "README.md"
    text.write_text("# not JSON")
    other = tmp_path / "profile.json"
    other.write_text(json.dumps({"kind": "LayoutProfile", "layouts": []}))
    for path in (text, other):
        with pytest.raises(SystemExit, match=f"--resume {path}: not a results file of python -m examples.pd"):
            load_resume(cli.parse(["--resume", str(path)]))


def test_a_results_file_older_than_a_setting_resumes_at_its_default(tmp_path):
    from examples.pd.bench.sweep import load_resume

    settings = cli.settings_dict(cli.parse(["--quick"]))
    del settings["arrivals"], settings["trace_runs"]  # written before these options
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"settings": settings, "runs": []}))
    assert load_resume(cli.parse(["--quick", "--resume", str(path)]))["runs"] == []
    with pytest.raises(SystemExit, match="settings differ in arrivals"):
        load_resume(cli.parse(["--quick", "--arrivals", "gamma:2", "--resume", str(path)]))


def test_a_resumed_sweep_and_a_reused_profile_must_come_from_the_same_gpu(tmp_path):
    from examples.pd.bench.sweep import measured_elsewhere

    profile = tmp_path / "layout-profile.json"
    profile.write_text(json.dumps({"settings": {"parts": [{"device": "NVIDIA H200"}, {"device": "NVIDIA H200"}]}}))
    resumed = tmp_path / "results.json"
    resumed.write_text("{}")
    s = cli.parse(["--quick", "--resume", str(resumed), "--layout-profile", str(profile)])
    earlier = {"device": {"name": "NVIDIA H200"}}
    assert measured_elsewhere(s, earlier, "NVIDIA H200") == []
    assert measured_elsewhere(s, {}, "NVIDIA H200") == []
    assert measured_elsewhere(s, earlier, "NVIDIA H100 80GB HBM3") == [
        f"--resume {resumed} ran on NVIDIA H200", f"--layout-profile {profile} was measured on NVIDIA H200"]
    assert measured_elsewhere(cli.parse(["--quick"]), {}, "NVIDIA H100 80GB HBM3") == []
    profile.write_text(json.dumps({"settings": {"device": "NVIDIA H200", "seconds": 3.0}}))  # not merged
    single = cli.parse(["--quick", "--layout-profile", str(profile)])
    assert measured_elsewhere(single, {}, "NVIDIA H100 80GB HBM3") == [
        f"--layout-profile {profile} was measured on NVIDIA H200"]
    assert measured_elsewhere(single, {}, "NVIDIA H200") == []


@pytest.mark.parametrize("argv, message", [
    (["--layers", "0"], "--layers must be at least 1"),
    (["--layers", "40"], "32 or fewer"),
    (["--budgets", "512,96", "--max-slots", "96"], "--budgets must exceed --max-slots"),
    (["--rates", "1,x"], "comma-separated arrival rates"),
    (["--rates", "2,-1"], "--rates must all be positive"),
    (["--rates", "2,2"], "repeated rates"),
    (["--schedulers", "z"], "schedulers among"),
    (["--admission", "lifo"], "orders among"),
    (["--workload", "code"], "invalid choice"),
    (["--overlapped", "16-64"], "latency/batch floor pairs"),
    (["--tpot-slo-ms", "0"], "--tpot-slo-ms must be positive"),
    (["--aging-ms", "-1"], "--aging-ms must be positive"),
    (["--max-prompt", "100"], "--min-prompt <= --max-prompt"),
    (["--chunk", "9000"], "--chunk (9000) must not exceed"),
    (["--context", "4608"], "--context (4608) must be below"),
    (["--piece-layers", "5", "--layers", "4"], "must not exceed --layers"),
    (["--stop-below", "1.5"], "between 0 and 1"),
    (["--min-rates", "6", "--max-rates", "5"], "--max-rates (5) must be at least --min-rates (6)"),
    (["--policy-headroom", "1"], "--policy-headroom must be at least 0 and below 1"),
    (["--slack-share", "2"], "--slack-share must be between 0 and 1"),
    (["--more-slack-shares", "0,1.5"], "--more-slack-shares must all be between 0 and 1, got 0.0,1.5"),
    (["--more-slack-shares", "0.5"], "--more-slack-shares repeats --slack-share (0.5), which runs anyway"),
    (["--more-slack-shares", "0.1234561,0.1234564"], "differ in digits their labels (6 significant digits)"),
    (["--more-slack-shares", "x"], "comma-separated slack shares"),
    (["--policy-pause", "0"], "--policy-pause must be SLACK_MS[,GAP_SHARE] with SLACK_MS above 0"),
    (["--policy-pause", "600,0.02"], "GAP_SHARE above 0 and below 0.01, got 600.0,0.02"),
    (["--policy-pause", "600,0.001,3"], "--policy-pause must be SLACK_MS[,GAP_SHARE]"),
    (["--ttft-slo-ms-per-token", "0"], "--ttft-slo-ms-per-token must be positive, got 0.0"),
    (["--attention", "xformers"], "invalid choice"),
    (["--layout-profile", "/nonexistent/profile.json"], "--layout-profile /nonexistent/profile.json: no such file"),
    (["--resume", "/nonexistent/results.json"], "no such file"),
    (["--profile", "missing.json"], "--profile missing.json: no such file"),
])
def test_bad_options_exit_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def summary(attainment, margin=0.5, steps_within=0.995):
    return {"attainment": attainment, "p99_margin": margin, "steps_within_tpot": steps_within, "requests": 10,
            "finished": 10, "ttft_ms": {"p50": 100.0, "p99": 300.0}, "tpot_ms": {"p50": 20.0, "p99": 30.0},
            "itl_ms": {"p50": 15.0, "p99": 25.0}, "step_ms": {"p50": 15.0, "p99": 30.0}, "largest_bucket": 32}


B512, B1024 = Config("chunked", "budget 512", 512, "fcfs"), Config("chunked", "budget 1024", 1024, "spf")
PD = Config("pd-overlap", "", None, "spf")
STREAMS = Config("streams", "", None, "fcfs")
RUNS = [
    entry(B512, 1, 2.0, summary(0.95, 0.8)), entry(B512, 1, 4.0, summary(0.5, 3.0)),
    entry(B1024, 1, 2.0, summary(1.0, 1.5)), entry(B1024, 1, 4.0, summary(0.7, 4.0)),
    entry(B1024, 2, 2.0, summary(1.0, 1.5)), entry(B1024, 2, 4.0, summary(0.8, 4.0)),
    entry(PD, 1, 2.0, summary(1.0)), entry(PD, 1, 4.0, summary(0.96)), entry(PD, 1, 6.0, summary(0.4, 2.0)),
    entry(PD, 1, 8.0, None), entry(PD, 2, 2.0, summary(1.0)), entry(PD, 2, 4.0, summary(0.9, 1.2)),
    entry(PD, 2, 6.0, summary(0.3, 2.0)),
    entry(STREAMS, 1, 2.0, summary(0.9)), entry(STREAMS, 1, 4.0, summary(0.3, 5.0)),
    entry(STREAMS, 2, 2.0, summary(0.95)), entry(STREAMS, 2, 4.0, summary(0.3, 5.0)),
]


def test_goodput_per_scheduler_metric_and_seed():
    fams = schedulers(RUNS, [1, 2])
    assert list(fams) == ["chunked", "streams", "pd-overlap"]
    chunked = fams["chunked"]["distserve"]
    # budget 1024 ran on both seeds: preferred over budget 512 (seed 1 only).
    assert chunked["best"] == "budget 1024, spf"
    assert chunked["seeds"]["1"]["goodput"] == pytest.approx(2.0 + 0.1 / 0.3 * 2.0)
    assert chunked["seeds"]["2"]["goodput"] == pytest.approx(2.0 + 0.1 / 0.2 * 2.0)
    assert chunked["spread"] == pytest.approx(1.0 - 0.1 / 0.3 * 2.0)
    assert chunked["configs"]["budget 512, fcfs"]["all_seeds"] is False
    # Under the P99 metric budget 1024 never passes: none met.
    assert fams["chunked"]["p99"]["seeds"]["1"] == {"goodput": 0.0, "how": "none met", "rates": 2}
    pd = fams["pd-overlap"]
    assert pd["distserve"]["seeds"]["1"]["goodput"] == pytest.approx(4.0 + 0.06 / 0.56 * 2.0)
    assert pd["distserve"]["seeds"]["2"]["goodput"] == pytest.approx(4.0)
    assert pd["p99"]["seeds"]["1"]["goodput"] == pytest.approx(4.0 + 0.5 / 1.5 * 2.0)
    assert pd["p99"]["seeds"]["2"]["goodput"] == pytest.approx(2.0 + 0.5 / 0.7 * 2.0)
    assert pd["distserve"]["seeds"]["1"]["rates"] == 3  # the skipped rate is not a rate measured


def test_the_configuration_refined_for_a_metric_is_reported_when_it_ran_on_every_seed():
    # Budget 256 was refined for P99 (its knee bracketed closely, at 3 req/s); budget 1024 ran on
    # both seeds near its DistServe knee and shows a higher P99 goodput only because it is read
    # between two coarse rates, 2 and 8.
    b256 = Config("chunked", "budget 256", 256, "fcfs")
    b1024 = Config("chunked", "budget 1024", 1024, "fcfs")
    runs = [entry(b1024, seed, rate, summary(1.0 if rate < 8 else 0.5, 0.5 if rate < 8 else 1.5))
            for seed in (1, 2) for rate in (2.0, 8.0)]
    runs += [entry(b256, seed, rate, summary(1.0, margin)) for seed in (1, 2)
             for rate, margin in ((2.0, 0.8), (3.0, 0.99), (3.2, 1.02), (4.0, 1.2))]
    chosen = {"distserve": b1024.name, "p99": b256.name}
    fams = schedulers(runs, [1, 2], {"chunked": chosen})
    assert fams["chunked"]["p99"]["best"] == b256.name
    assert fams["chunked"]["p99"]["chosen_by"] == "refined for this metric"
    assert fams["chunked"]["p99"]["mean"] < fams["chunked"]["p99"]["configs"][b1024.name]["mean"]
    assert fams["chunked"]["distserve"]["best"] == b1024.name
    # Without a record of what was refined: the highest mean among the closely bracketed knees.
    unrecorded = schedulers(runs, [1, 2])["chunked"]["p99"]
    assert unrecorded["best"] == b256.name and unrecorded["chosen_by"] == "highest mean goodput, knee bracketed"
    # None bracketed, and the refined one not run on every seed: the highest mean.
    assert schedulers(runs[:4] + runs[4:8], [1, 2], {"chunked": chosen})["chunked"]["p99"]["chosen_by"] \
        == "highest mean goodput"
    # Older results files list the refined configurations: DistServe's, then P99's unless the same.
    assert schedulers(runs, [1, 2], {"chunked": [b1024.name, b256.name]})["chunked"]["p99"]["best"] == b256.name
    assert refined([b1024.name]) == {"distserve": b1024.name, "p99": b1024.name}
    assert refined(None) == {}


def test_a_closely_bracketed_configuration_above_the_refined_one_is_the_best():
    # A later call refined another split (80 SMs) whose knee is lower than the one an earlier
    # call refined (64 SMs): the strongest measured configuration stays the baseline.
    s64, s80 = Config("static", "64 SMs", 64, "spf"), Config("static", "80 SMs", 80, "spf")
    runs = [entry(s64, seed, rate, summary(1.0, margin)) for seed in (1, 2)
            for rate, margin in ((8.0, 0.9), (10.0, 0.98), (11.0, 1.05), (16.0, 1.5))]
    runs += [entry(s80, seed, rate, summary(1.0, margin)) for seed in (1, 2)
             for rate, margin in ((4.0, 0.9), (5.0, 0.99), (5.5, 1.1), (8.0, 1.3))]
    best = schedulers(runs, [1, 2], {"static": {"distserve": s80.name, "p99": s80.name}})["static"]["p99"]
    assert best["best"] == s64.name and best["chosen_by"] == "highest mean goodput, knee bracketed"
    assert best["bracketed"] and 10.0 < best["mean"] < 11.0
    assert best["configs"][s80.name]["bracketed"] and best["configs"][s80.name]["mean"] < 5.5


def test_comparison_ratios_and_ties():
    fams = schedulers(RUNS, [1, 2])
    c = comparison(fams)
    d = c["distserve"]
    assert d["best_green"] == "pd-overlap" and d["config"] == "spf"
    assert d["over_chunked"]["ratio"] == pytest.approx(fams["pd-overlap"]["distserve"]["mean"]
                                                       / fams["chunked"]["distserve"]["mean"])
    assert d["over_chunked"]["verdict"] == "green wins" and d["over_streams"]["verdict"] == "green wins"
    p = c["p99"]
    assert p["over_chunked"]["ratio"] is None and p["over_chunked"]["verdict"] == "green wins"
    # A gap within the seeds' spread is a tie.
    close = [entry(STREAMS, seed, rate, summary(a)) for seed, rate, a in
             ((1, 2.0, 1.0), (1, 6.0, 0.8), (2, 2.0, 1.0), (2, 6.0, 0.85))]
    fams = schedulers(RUNS[6:13] + close, [1, 2])
    assert comparison(fams)["distserve"]["over_streams"]["verdict"] == "tie"
    assert comparison(schedulers(RUNS[:6], [1, 2])) == {}
    assert "policy_over_static" not in c["distserve"]  # no static split ran


def test_the_policy_is_compared_with_the_best_static_split():
    static64, static48 = Config("static", "64 SMs", 64, "fcfs"), Config("static", "48 SMs", 48, "fcfs")
    mode = Config("pd", "p99 mode", "p99", "fcfs")

    def runs(config, knee_by_seed):
        return [entry(config, seed, rate, summary(1.0 if rate <= knee else 0.5)) for seed, knee in knee_by_seed.items()
                for rate in (2.0, 4.0, 6.0, 8.0)]

    base = runs(static64, {1: 4.0, 2: 4.0}) + runs(static48, {1: 2.0, 2: 2.0})
    wins = comparison(schedulers(base + runs(mode, {1: 6.0, 2: 6.0}), [1, 2]))["distserve"]["policy_over_static"]
    assert (wins["policy"], wins["static"], wins["baseline_config"]) == ("pd", "static", "64 SMs, fcfs")
    assert wins["ratio"] > 1 and wins["verdict"] == "policy wins" and wins["provisional"] == []
    loses = comparison(schedulers(base + runs(mode, {1: 2.0, 2: 2.0}), [1, 2]))["distserve"]["policy_over_static"]
    assert loses["verdict"] == "static wins"
    spread = comparison(schedulers(base + runs(mode, {1: 2.0, 2: 6.0}), [1, 2]))["distserve"]["policy_over_static"]
    assert spread["verdict"] == "tie"  # the policy's own seeds differ by more than the gap


def test_tables_and_plots(tmp_path):
    results = {"runs": RUNS, "seeds": [1, 2], "schedulers": schedulers(RUNS, [1, 2]), "workload": "today",
               "slo": {"ttft_ms": 500.0, "tpot_ms": 40.0}, "model": {"layers": 4}, "device": {"name": "test GPU"}}
    text = table(results)
    assert "| two-SLO policy, overlapped layouts | distserve | spf | 4.21 | 4.00 | 4.11 | 0.21 |" in text
    assert "| two-SLO policy, overlapped layouts | spf | 1 | 8.00 | skipped |" in text
    assert "| chunked prefill | budget 512, fcfs | 1 | 2.00 | 95.0% | 0.80 | 100/300 | 20/30 | 15/25 | 99.5% | 0 |" in text
    pytest.importorskip("matplotlib")
    for metric in ("distserve", "p99"):
        path = tmp_path / f"{metric}.png"
        assert plot(results, str(path), metric) == str(path)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_results_file_is_reported_again_without_a_gpu(tmp_path, capsys):
    from examples.pd.bench.report import main

    chosen = {"chunked": {"distserve": "budget 1024, spf", "p99": "budget 1024, spf"}}
    results = {"runs": RUNS, "seeds": [1, 2], "workload": "today", "chosen": chosen, "slo": {"ttft_ms": 500.0,
               "tpot_ms": 40.0}, "model": {"layers": 4}, "device": {"name": "test GPU"}, "schedulers": {}}
    path = tmp_path / "today-results.json"
    path.write_text(json.dumps(results))
    before = path.read_text()
    assert main([str(path)]) == 0  # reads and prints, changes nothing
    out = capsys.readouterr().out
    assert out.startswith("4 layers, today, test GPU; TTFT 500 ms, TPOT 40.0 ms\n")
    assert "| chunked prefill | distserve | budget 1024, spf |" in out and "slack label" not in out
    shares = {**results, "settings": {"slack_share": 0.5, "more_slack_shares": [0.0]}}
    path.write_text(json.dumps(shares))
    assert main([str(path)]) == 0
    assert ("TPOT 40.0 ms\n\nThe two-SLO policies' configurations without a slack label ran at slack share 0.5 "
            "(--slack-share).\n") in capsys.readouterr().out
    path.write_text(json.dumps(results))
    assert path.read_text() == before and not list(tmp_path.glob("*.png"))
    assert main([str(path), "--write"]) == 0
    written = json.loads(path.read_text())
    assert written["schedulers"]["chunked"]["distserve"]["chosen_by"] == "refined for this metric"
    assert written["comparison"]["distserve"]["best_green"] == "pd-overlap"
    assert written["runs"] == RUNS and written["chosen"] == chosen  # nothing else changes
    assert "| chunked prefill | distserve | budget 1024, spf |" in capsys.readouterr().out
    if importlib.util.find_spec("matplotlib"):
        assert sorted(p.name for p in tmp_path.glob("*.png")) == ["today-goodput-distserve.png",
                                                                   "today-goodput-p99.png"]
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps({"runs": []}))
    for argv, message in (([str(bad)], "not a sweep's results file: it has no seeds, slo, model, workload (the "),
                          ([str(tmp_path / "none.json")], "No such file")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_help_states_every_default():
    for action in cli.parser()._actions:
        if action.option_strings and action.dest not in ("help", "quick", "quiet", "calibrate_only", "trace_runs"):
            assert "default" in (action.help or ""), action.option_strings


def test_kv_slots_are_sized_from_the_free_memory():
    from examples.pd.bench.sweep import slots_for
    from examples.pd.engine.shape import ModelShape

    s, shape = cli.parse([]), ModelShape()
    # 32 layers: weights 16.1 GB, a slot of 4608 tokens 0.604 GB, a 10 GB reserve, 85% of the free memory.
    assert slots_for(s, int(150e9), shape) == 96  # an H200: the cap
    assert slots_for(s, int(79e9), shape) == 67  # an 80 GB card with 79 GB free
    assert slots_for(cli.parse(["--budgets", "64,128", "--max-slots", "40"]), int(150e9), shape) == 40
    assert slots_for(cli.parse(["--budgets", "64,512"]), int(150e9), shape) == 63  # below the smallest budget
    assert slots_for(s, int(30e9), shape) == 0  # not one slot: main() refuses with what it needs
    long = cli.parse(["--workload", "long-prompt"])
    assert slots_for(long, int(150e9), shape) == 45


def test_a_reader_that_stops_early_is_no_error(tmp_path, monkeypatch):
    import os

    from examples.pd.bench.report import main

    results = {"runs": RUNS, "seeds": [1, 2], "workload": "today", "chosen": {}, "model": {"layers": 4},
               "slo": {"ttft_ms": 500.0, "tpot_ms": 40.0}, "device": {"name": "test GPU"}}
    path = tmp_path / "today-results.json"
    path.write_text(json.dumps(results))
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head` does once it has its lines
    with os.fdopen(write_end, "w") as closed_pipe:
        monkeypatch.setattr("sys.stdout", closed_pipe)
        assert main([str(path)]) == 0


def test_a_figure_not_run_on_every_seed_is_marked_provisional(tmp_path, capsys):
    from examples.pd.bench.report import main

    static = Config("static", "64 SMs", 64, "fcfs")
    runs = RUNS + [entry(static, 1, 2.0, summary(1.0)), entry(static, 1, 6.0, summary(1.0)),
                   entry(static, 1, 8.0, summary(0.5, 2.0))]
    fams = schedulers(runs, [1, 2])
    assert fams["static"]["distserve"]["all_seeds"] is False
    d = comparison(fams)["distserve"]
    assert d["best_green"] == "static"  # the highest mean, though only seed 1 ran it
    assert d["over_chunked"]["provisional"] == ["static"] and d["over_streams"]["provisional"] == ["static"]
    assert comparison(schedulers(RUNS, [1, 2]))["distserve"]["over_streams"]["provisional"] == []
    results = {"runs": runs, "seeds": [1, 2], "workload": "today", "chosen": {}, "model": {"layers": 4},
               "slo": {"ttft_ms": 500.0, "tpot_ms": 40.0}, "device": {"name": "test GPU"},
               "incomplete": "the time budget ran out before static, 64 SMs, fcfs, seed 2 at 2 req/s"}
    path = tmp_path / "today-results.json"
    path.write_text(json.dumps(results))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 layers, today, test GPU; TTFT 500 ms, TPOT 40.0 ms\n\n"
                          "Incomplete sweep: the time budget ran out before static, 64 SMs, fcfs, seed 2")
    assert "| static split | distserve | 64 SMs, fcfs | 6.40 | - | 6.40 | - |" in out
    assert "A spread of -: the configuration has not run on every seed" in out
    assert "- DistServe: best green-context scheduler static split (64 SMs, fcfs), 6.40 req/s" in out
    assert "provisional: static split not run on every seed" in out
    assert '"best_green"' not in out  # the JSON only with --json
    assert main([str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("\n{") + 1:])["distserve"]["over_chunked"]["provisional"] == ["static"]


def test_the_report_names_a_layout_profile_given_for_a_results_file(tmp_path, capsys):
    from examples.pd.bench.report import main

    for text, message in (('{"kind": "LayoutProfile", "settings": {}}', "is a layout profile (what python -m "
                           "examples.pd --layout-profile reuses), not a sweep's results file"),
                          ("[1, 2]", "is not a sweep's results file: it holds a JSON list")):
        path = tmp_path / "file.json"
        path.write_text(text)
        with pytest.raises(SystemExit) as exit_info:
            main([str(path)])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
