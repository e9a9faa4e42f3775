"""The simulator end to end (examples/pd/sim, python -m examples.pd.simulate) on a made-up
calibration: every scheduler's real code serves a trace on the simulated GPU; a polling host
skipping looks that find nothing decides as one that looks every interval; runs repeat; the
static planner simulates every split; bad calibrations are refused with what to do. No GPU."""

from __future__ import annotations

import json

import pytest

from examples.pd.bench import cli
from examples.pd.bench.search import Config
from examples.pd.bench.simulate import main
from examples.pd.sim.bench import SimBench
from examples.pd.sim.calibration import CalibrationError, check_matches, load_calibration
from tests.examples.pd import calibration_data
from tests.examples.pd.sim_profile import layout_profile

ARGS = ["--layers", "4", "--max-prompt", "900", "--min-prompt", "64", "--prompt-median", "300", "--max-output", "120",
        "--output-median", "40", "--min-output", "4", "--context", "512", "--tpot-slo-ms", "8", "--ttft-slo-ms", "400",
        "--chunk", "512", "--piece-layers", "1", "--budgets", "128,256", "--overlapped", "16/64,32/32", "--quiet"]
CONFIGS = [Config("chunked", "budget 256", 256, "fcfs"), Config("streams", "", None, "spf"),
           Config("static", "48 SMs", 48, "fcfs"), Config("static-overlap", "16/64", (16, 64), "fcfs"),
           Config("pd", "", 0.5, "fcfs"), Config("pd-overlap", "slack 0", 0.0, "spf")]


@pytest.fixture(scope="module")
def bench() -> SimBench:
    s = cli.parse(ARGS + ["--requests", "60", "--arrival-s", "4"])
    return SimBench(s, calibration_data.calibration(), layout_profile())


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.scheduler}-{c.name}")
def test_every_scheduler_serves_every_request_at_a_light_load(bench, config):
    summary = bench.run(config, 1, 5.0)
    assert summary["simulated"] and not summary["cut_off"] and summary["finished"] == summary["requests"]
    assert summary["attainment"] == 1.0 and summary["step_ms"]["n"] > 100
    lanes = set(summary["steps_per_lane"])
    if config.scheduler == "static":
        assert lanes == {"48"}
    elif config.scheduler == "pd-overlap":
        assert lanes <= {"o0", "o132", "o16/64", "o32/32"}
    elif config.scheduler == "chunked":
        assert lanes <= {"mixed", "decode only"} and "mixed" in lanes


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[2], CONFIGS[4]], ids=lambda c: c.scheduler)
def test_skipping_looks_that_find_nothing_changes_no_decision(bench, config):
    skipped = bench.run(config, 2, 12.0)
    bench.skip_looks = False
    try:
        every_look = bench.run(config, 2, 12.0)
    finally:
        bench.skip_looks = True
    for key in ("attainment", "p99_margin", "step_ms", "itl_ms", "ttft_ms", "output_tokens", "steps_per_lane"):
        assert skipped[key] == pytest.approx(every_look[key], rel=1e-9, abs=1e-9), key  # sums in another order


def test_a_run_repeats_and_load_slows_it(bench):
    config = CONFIGS[4]
    fresh = [SimBench(bench.s, calibration_data.calibration(), layout_profile()) for _ in range(2)]
    assert fresh[0].run(config, 1, 5.0) == fresh[1].run(config, 1, 5.0)  # the policy's state starts the same
    light, heavy = bench.run(config, 1, 2.0), bench.run(config, 1, 2000.0)
    assert heavy["ttft_ms"]["p99"] > 10 * light["ttft_ms"]["p99"] and heavy["p99_margin"] > light["p99_margin"]


def test_the_planner_simulates_every_split_and_keeps_the_best(bench):
    bench.coarse = [20.0, 40.0, 80.0]
    configs, why = bench.static_configs("static", "fcfs")
    assert set(why["predicted_goodput"]) == {f"{k} SMs" for k in (16, 24, 32, 48, 64, 96)}
    best = {m: max(why["predicted_goodput"], key=lambda k: why["predicted_goodput"][k][m]) for m in ("distserve", "p99")}
    labels = [c.label for c in configs]
    assert len(labels) == bench.s.static_candidates and {best["distserve"], best["p99"]} <= set(labels)
    assert why["ranked"]["distserve"][0] == best["distserve"] and why["how"] == "simulated"


def test_calibrations_of_another_model_or_gpu_are_refused(tmp_path):
    calibration = calibration_data.calibration()
    with pytest.raises(CalibrationError, match="at 4 layers, not 32"):
        check_matches(calibration, layers=32, device=None, path="c.json")
    with pytest.raises(CalibrationError, match="measured on Test GPU, not NVIDIA H100"):
        check_matches(calibration, layers=4, device="NVIDIA H100", path="c.json")
    calibration["model"]["hidden"] = 5120
    with pytest.raises(CalibrationError, match="hidden 5120"):
        check_matches(calibration, layers=4, device=None, path="c.json")
    for text, message in (("{}", "is not a calibration"), ("[1", "not JSON"),
                          (json.dumps({"kind": "examples.pd calibration", "version": 0}), "version 0"),
                          (json.dumps({"kind": "examples.pd calibration", "version": 1}), "lacks device")):
        path = tmp_path / "bad.json"
        path.write_text(text)
        with pytest.raises(CalibrationError, match=message):
            load_calibration(str(path))
    with pytest.raises(CalibrationError, match="cannot be read"):
        load_calibration(str(tmp_path / "missing.json"))


def test_a_calibration_without_the_lanes_a_run_needs_says_which(tmp_path):
    s = cli.parse(ARGS + ["--overlapped", "16/32"])
    bench = SimBench(s, calibration_data.calibration(), layout_profile())
    with pytest.raises(CalibrationError, match=r"no lanes for the layouts \[\(16, 32\)\]"):
        bench.run(Config("pd-overlap", "", 0.5, "fcfs"), 1, 5.0)
    long = cli.parse(ARGS + ["--max-prompt", "4000"])
    with pytest.raises(CalibrationError, match="slots of 2048 tokens"):
        SimBench(long, calibration_data.calibration(), None)
    no_profile = SimBench(s, calibration_data.calibration(), None)
    with pytest.raises(CalibrationError, match="layout profile"):
        no_profile.run(Config("pd", "", 0.5, "fcfs"), 1, 5.0)


def test_simulate_writes_a_results_file_marked_simulated(tmp_path, capsys):
    path = calibration_data.write(tmp_path)
    (tmp_path / "layout-profile.json").write_text(layout_profile().to_json())
    out = tmp_path / "out"
    argv = ARGS + ["--calibration", str(path), "--rates", "10,20", "--seeds", "1", "--requests", "40", "--arrival-s", "3",
                   "--schedulers", "chunked,static,pd", "--admission", "fcfs", "--min-rates", "2", "--max-rates", "3",
                   "--out", str(out)]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["simulated"]["measured_on"] == "Test GPU" and results["device"]["name"] == "Test GPU"
    assert {"chunked", "static", "pd"} == set(results["schedulers"]) and results["static_candidates"]["how"] == "simulated"
    assert all(r["summary"]["simulated"] for r in results["runs"] if not r["skipped"])
    assert "simulated with a calibration from Test GPU" in capsys.readouterr().out
    assert main(ARGS + ["--rates", "10"]) == 2  # no calibration
    assert "needs --calibration" in capsys.readouterr().err


def test_a_simulated_timeline_matches_the_costs_it_was_drawn_from(bench):
    """The timeline report holds a timeline against a calibration: on the simulator's own
    timeline every work's measured over modelled duration is its drawn spread."""
    from examples.pd.bench.timeline_report import compare, report

    bench.record_timelines = True
    for config in (CONFIGS[0], CONFIGS[2]):
        bench.run(config, 1, 20.0)
        timeline = {"scheduler": config.scheduler, "config": config.name, "param": config.param, "seed": 1,
                    "rate": 20.0, "works": bench.last_device.timeline()}
        rows = compare(timeline, calibration_data.calibration())
        assert rows and {r["kind"] for r in rows} >= ({"mixed"} if config.scheduler == "chunked" else {"decode", "prefill"})
        spread = calibration_data.SPREAD
        assert all(min(spread) - 0.02 <= r["ratio"] <= max(spread) + 0.02 for r in rows), report(rows)
        if config.scheduler == "static":
            assert any(0.1 < r["share"] < 1 for r in rows)  # partly beside the other role
        decode = [w for w in timeline["works"] if w["kind"] in ("decode", "mixed") and w["rows"]]
        assert decode and all(w["context"] / w["rows"] <= w["longest"] <= w["context"] for w in decode)
        if config.scheduler == "static":
            assert "| decode bucket | longest row over the mean row |" in report(rows)
    older = [{k: v for k, v in w.items() if k != "longest"} for w in timeline["works"]]
    assert "longest row" not in report(compare({**timeline, "works": older}, calibration_data.calibration()))
    bench.record_timelines = False


def test_the_timeline_report_prices_decode_beside_a_small_piece_as_the_simulator_does():
    """With plain streams' decode timed beside a quarter chunk (a third of the whole chunk's
    slowdown), the simulator's own plain-streams timeline still matches the report's model work
    for work; priced at the whole chunk's slowdown, steps beside small pieces would not."""
    from examples.pd.bench.timeline_report import compare

    calibration = calibration_data.calibration()
    chunk = calibration["settings"]["chunk"]
    lane = calibration["lanes"]["plain streams"]
    lane["decode_beside_pieces"] = [
        {"bucket": p["bucket"], "context_tokens": p["context_tokens"], "longest": p.get("longest"),
         "piece_tokens": chunk // 4,
         "loaded_us": [i + (l - i) / 3 for i, l in zip(p["idle_us"], p["loaded_us"])]} for p in lane["decode"]]
    s = cli.parse(ARGS + ["--requests", "60", "--arrival-s", "4"])
    pieces = SimBench(s, calibration, layout_profile())
    pieces.record_timelines = True
    pieces.run(CONFIGS[1], 1, 20.0)
    timeline = {"scheduler": "streams", "config": "", "param": None, "seed": 1, "rate": 20.0,
                "works": pieces.last_device.timeline()}
    spread = calibration_data.SPREAD
    beside_small = [r for r in compare(timeline, calibration) if r["kind"] == "decode" and r["share"] > 0.5]
    assert beside_small and all(min(spread) - 0.02 <= r["ratio"] <= max(spread) + 0.02 for r in beside_small)
    del calibration["lanes"]["plain streams"]["decode_beside_pieces"]
    whole = [r for r in compare(timeline, calibration) if r["kind"] == "decode" and r["share"] > 0.5]
    assert min(r["ratio"] for r in whole) < min(spread) - 0.02  # too slow a model: the measured steps look fast
