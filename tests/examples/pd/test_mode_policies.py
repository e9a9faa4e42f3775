"""The two-SLO policy's modes as a sweep makes them (examples/pd/bench/policies.py and
layout_profiles.py): a mode's anchor is the planner's best over every split, added to the
layouts the policy chooses among, with figures from the calibration where the layout profile has
none; the P99 mode runs without KV pressure and the mixed-batch fallback. No GPU."""

from __future__ import annotations

import pytest

from examples.pd.bench import cli
from examples.pd.bench.layout_profiles import covering, from_calibration, lacking
from examples.pd.bench.search import Config
from examples.pd.sim.bench import SimBench
from examples.pd.sim.calibration import CalibrationError
from torch_green_contexts.sizing import Latency
from tests.examples.pd import calibration_data
from tests.examples.pd.sim_profile import layout_profile
from tests.examples.pd.test_simulator import ARGS


def test_a_calibrated_lane_gives_the_profile_its_even_rows_beside_prefill():
    calibration = calibration_data.calibration(counts=(16, 40, 64))
    lane = calibration["lanes"]["40"]
    uneven = dict(lane["decode"][-1], longest=lane["decode"][-1]["context_tokens"], idle_us=[1.0], loaded_us=[1.0])
    lane["decode"].append(uneven)
    profile = from_calibration(calibration, [40, 132])
    assert profile.layouts == {40: (40, 92, 0), 132: (132, 132, 0)} and profile.loaded == {40: True, 132: True}
    points = profile.measured[40]
    assert len(points) == len(lane["decode"]) - 1  # the uneven rows are not a profile's point
    first = lane["decode"][0]
    latency = points[(first["bucket"], first["context_tokens"])]
    assert latency == Latency.of(first["loaded_us"]) and latency.p99 > latency.p50 > min(first["idle_us"])


def test_a_layout_without_batch_sms_is_profiled_from_its_steps_alone():
    calibration = calibration_data.calibration()
    calibration["lanes"]["132"]["batch_sms"] = 0
    profile = from_calibration(calibration, [132])
    step = calibration["lanes"]["132"]["decode"][0]
    assert profile.loaded == {132: False}
    assert profile.measured[132][(step["bucket"], step["context_tokens"])].mean == pytest.approx(
        sum(step["idle_us"]) / len(step["idle_us"]))


def test_covering_adds_only_the_layouts_the_profile_lacks_and_names_a_missing_lane():
    calibration = calibration_data.calibration(counts=(16, 24, 32, 40, 48, 64, 96))
    profile = layout_profile()
    assert covering(profile, calibration, [16, 64]) is profile
    joined = covering(profile, calibration, [16, 40])
    assert joined.measured[16] == profile.measured[16] and 40 in joined.measured and set(profile.keys) < set(joined.keys)
    with pytest.raises(CalibrationError, match="no lane for layout '56'"):
        covering(profile, calibration, [56])
    with pytest.raises(CalibrationError, match="no lane for layout 'o8/8'"):
        covering(profile, calibration, [(8, 8)], "o")


def test_a_given_layout_profile_lacking_a_layout_the_policies_choose_among_is_named_before_any_run():
    profile = layout_profile()
    assert lacking(profile, [0, 16, (16, 64)], "p.json") is None
    problem = lacking(profile, [0, 16, (48, 48), 40], "p.json")
    assert problem is not None and problem.startswith("--layout-profile p.json has no figures for the layouts "
                                                      "['48/48', '40']")
    assert "'16/64'" in problem and "leave out --layout-profile" in problem


def test_a_modes_anchor_outside_the_layout_counts_joins_the_policys_layouts():
    calibration = calibration_data.calibration(counts=(16, 24, 32, 40, 48, 64, 96))
    s = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3", "--layout-counts", "0,16,96"])
    bench = SimBench(s, calibration, layout_profile())
    bench.coarse = [20.0, 40.0, 80.0]
    plan = bench.plan("static")[1]
    for mode in ("distserve", "p99"):
        policy = bench.policy("pd", mode)
        best = max(bench.static_keys("static"), key=lambda k: plan["predicted_goodput"][f"{k} SMs"][mode])
        assert policy.options.anchor == best and bench.anchors[f"pd, {mode} mode"] == f"{best} SMs"
        assert set(bench.policy_sets["pd", mode].keys) == {0, 16, 96, 132, best}
        assert best in policy.profile.measured
    summary = bench.run(Config("pd", "p99 mode", "p99", "fcfs"), 1, 5.0)
    assert summary["finished"] == summary["requests"]


def test_the_p99_mode_runs_without_kv_pressure_or_mixed_steps_and_distserve_with_both():
    s = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3"])
    bench = SimBench(s, calibration_data.calibration(), layout_profile())
    bench.coarse = [20.0, 40.0, 80.0]
    p99, distserve = bench.policy("pd", "p99").options, bench.policy("pd", "distserve").options
    assert p99.mode == "p99" and p99.kv_pressure is None and p99.mixed_step_us is None and p99.guard
    assert distserve.kv_pressure == tuple(s.policy_kv_pressure) and distserve.mixed_step_us is not None
    assert not distserve.guard and distserve.dwell_steps == p99.dwell_steps == s.policy_dwell
    assert bench.policy("pd", "p99").stats()["pause"] is None  # no pause unless --policy-pause asks


def test_policy_pause_pauses_the_p99_mode_only():
    s = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3", "--policy-pause", "300,0.002"])
    bench = SimBench(s, calibration_data.calibration(), layout_profile())
    bench.coarse = [20.0, 40.0, 80.0]
    p99, distserve = bench.policy("pd", "p99"), bench.policy("pd", "distserve")
    assert distserve.stats()["pause"] is None
    pause = p99._pause
    assert pause is not None and pause.slack_us == 300_000 and pause.gap_share == 0.002
    assert p99.stats()["pause"]["allowance"] == pytest.approx(0.002 * 10_000)


def test_policy_guard_names_the_guarded_modes_and_older_files_resume_with_both_guarded(tmp_path):
    import json

    from examples.pd.bench.search import entry
    from examples.pd.bench.sweep import load_resume

    for argv, guarded in (([], ("p99",)), (["--policy-guard", "distserve,p99"], ("distserve", "p99")),
                          (["--policy-guard", "none"], ())):
        s = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3"] + argv)
        assert s.policy_guard == guarded
        bench = SimBench(s, calibration_data.calibration(), layout_profile())
        bench.coarse = [20.0, 40.0, 80.0]
        assert {m for m in ("distserve", "p99") if bench.policy("pd", m).options.guard} == set(guarded)
    older = cli.settings_dict(cli.parse(["--quick"]))
    del older["policy_guard"]  # a results file from before the option: both modes ran guarded
    assert cli.settings_from(older).policy_guard == ("distserve", "p99")
    path = tmp_path / "results.json"
    runs = [entry(Config("pd", "distserve mode", "distserve", "fcfs"), 1, 2.0, {"attainment": 1.0})]
    path.write_text(json.dumps({"settings": older, "runs": runs}))
    with pytest.raises(SystemExit, match="settings differ in policy_guard"):
        load_resume(cli.parse(["--quick", "--resume", str(path)]))
    kept = load_resume(cli.parse(["--quick", "--resume", str(path), "--policy-guard", "p99,distserve"]))
    assert len(kept["runs"]) == 1


def test_a_family_cut_short_by_the_time_budget_keeps_its_modes_anchors(tmp_path):
    from examples.pd.bench import families
    from examples.pd.bench.search import OutOfTime
    from examples.pd.bench.sweep import Progress

    s = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3", "--schedulers", "pd", "--policy-modes", "p99",
                          "--seeds", "1", "--rates", "20,40,80"])
    bench = SimBench(s, calibration_data.calibration(counts=(16, 24, 32, 40, 48, 64, 96)), layout_profile())
    bench.coarse = [20.0, 40.0, 80.0]
    simulate = bench.run

    def run_until_the_p99_mode_ran_once(config, seed, rate, progress=None):
        if any(r["config"].startswith("p99 mode") for r in results.get("runs", [])):
            raise OutOfTime(f"{config.scheduler}, {config.name}, seed {seed} at {rate:.3g} req/s")
        return simulate(config, seed, rate, progress)

    bench.run = run_until_the_p99_mode_ran_once  # type: ignore[method-assign]
    results: dict = {}
    families.run_families(bench, s, results, {}, bench.coarse, str(tmp_path / "results.json"), 0.0, Progress(True))
    assert results["incomplete"] and any(r["config"].startswith("p99 mode") for r in results["runs"])
    assert results["policy_anchors"] == {"pd, p99 mode": bench.anchors["pd, p99 mode"]}
    assert bench.anchors["pd, p99 mode"] is not None


def test_static_splits_run_instead_of_the_planners_candidates_and_the_plan_is_kept(tmp_path):
    from examples.pd.bench import families
    from examples.pd.bench.sweep import Progress

    assert cli.parse([]).static_splits is None
    assert cli.parse(["--static-splits", "64,80,64"]).static_splits == (64, 80)
    s = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3", "--schedulers", "static", "--static-splits", "16,64",
                          "--seeds", "1", "--rates", "20,40", "--admission", "fcfs"])
    bench = SimBench(s, calibration_data.calibration(counts=(16, 24, 32, 40, 48, 64, 96)), layout_profile())
    bench.coarse = [20.0, 40.0]
    results: dict = {}
    families.run_families(bench, s, results, {}, bench.coarse, str(tmp_path / "results.json"), 0.0, Progress(True))
    assert {r["config"] for r in results["runs"]} == {"16 SMs, fcfs", "64 SMs, fcfs"}
    plan = results["static_candidates"]
    assert plan["given"] == ["16 SMs", "64 SMs"] and set(plan["predicted_goodput"]) >= {"16 SMs", "40 SMs", "96 SMs"}
    odd = cli.parse(ARGS + ["--requests", "40", "--arrival-s", "3", "--schedulers", "static", "--static-splits", "20",
                            "--seeds", "1", "--rates", "20,40"])
    bench = SimBench(odd, calibration_data.calibration(counts=(16, 24, 32, 40, 48, 64, 96)), layout_profile())
    bench.coarse = [20.0, 40.0]
    with pytest.raises(SystemExit, match=r"--static-splits 20: not a split of this device; it gives 16 SMs, 24 SMs"):
        families.run_families(bench, odd, {}, {}, bench.coarse, str(tmp_path / "odd.json"), 0.0, Progress(True))
