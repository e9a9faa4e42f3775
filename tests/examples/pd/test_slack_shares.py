"""The two-SLO policy at several slack shares in the prefill/decode example (--more-slack-shares):
each share is a configuration of its own, the default one keeps the label of earlier sweeps, a
resumed sweep may add shares, and the sweep keeps the best share per metric. No GPU."""

from __future__ import annotations

import json

import pytest

from examples.pd.bench import cli
from examples.pd.bench.search import Config, Sweep, entry, reusable


def test_the_default_share_is_unlabelled_and_each_further_share_is_a_configuration():
    assert cli.policy_shares(cli.parse([])) == [("", 0.5)]
    s = cli.parse(["--more-slack-shares", "0,0.25,0"])
    assert s.more_slack_shares == (0.0, 0.25)
    assert cli.policy_shares(s) == [("", 0.5), ("slack 0", 0.0), ("slack 0.25", 0.25)]
    assert cli.policy_shares(cli.parse(["--slack-share", "1", "--more-slack-shares", "0.5"])) == [
        ("", 1.0), ("slack 0.5", 0.5)]


def test_each_family_runs_its_configurations():
    from examples.pd.bench.families import family_configs

    s = cli.parse(["--budgets", "256,1024", "--more-slack-shares", "0", "--policy-modes", "none"])
    assert family_configs("chunked", s, "spf") == [Config("chunked", "budget 256", 256, "spf"),
                                                   Config("chunked", "budget 1024", 1024, "spf")]
    for name in ("pd", "pd-overlap"):
        assert family_configs(name, s, "fcfs") == [Config(name, "", 0.5, "fcfs"), Config(name, "slack 0", 0.0, "fcfs")]
    assert family_configs("streams", s, "fcfs") == [Config("streams", "", None, "fcfs")]
    assert family_configs("pd", cli.parse([]), "fcfs") == [
        Config("pd", "", 0.5, "fcfs"), Config("pd", "distserve mode", "distserve", "fcfs"),
        Config("pd", "p99 mode", "p99", "fcfs")]
    assert cli.parse(["--policy-modes", "p99"]).policy_modes == ("p99",)


def test_a_resumed_sweep_keeps_the_shares_it_ran():
    earlier = cli.settings_dict(cli.parse(["--more-slack-shares", "0"]))
    assert cli.with_earlier_shares(cli.parse([]), earlier).more_slack_shares == (0.0,)
    both = cli.with_earlier_shares(cli.parse(["--more-slack-shares", "0.25"]), earlier)
    assert cli.policy_shares(both) == [("", 0.5), ("slack 0.25", 0.25), ("slack 0", 0.0)]
    same = cli.parse(["--more-slack-shares", "0"])
    assert cli.with_earlier_shares(same, earlier) is same
    older = {k: v for k, v in earlier.items() if k != "more_slack_shares"}  # a file from before the option
    assert cli.with_earlier_shares(cli.parse([]), older).more_slack_shares == ()


def test_a_resumed_sweep_may_add_slack_shares_but_not_change_the_default(tmp_path):
    from examples.pd.bench.sweep import load_resume

    runs = [entry(Config("pd", "", None, "fcfs"), 1, 2.0, {"attainment": 1.0})]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"settings": cli.settings_dict(cli.parse(["--quick"])), "runs": runs}))
    kept = load_resume(cli.parse(["--quick", "--resume", str(path), "--more-slack-shares", "0"]))
    assert [r["config"] for r in kept["runs"]] == ["fcfs"]
    with pytest.raises(SystemExit, match="settings differ in slack_share"):
        load_resume(cli.parse(["--quick", "--resume", str(path), "--slack-share", "0"]))


def test_the_sweep_keeps_the_better_share_per_metric_and_reuses_the_default_shares_runs():
    # The default share serves more under DistServe's metric, share 0 more under the P99 one.
    knees = {"fcfs": (12.0, 3.0), "slack 0, fcfs": (10.0, 8.0)}
    made = []

    def run(config, seed, rate):
        made.append((config.name, seed, rate))
        d_knee, p_knee = knees[config.name]
        attainment = max(0.0, min(1.0, 1 - (rate - d_knee / 2) / (1.5 * d_knee)))
        return {"attainment": attainment, "p99_margin": rate / p_knee}

    default, share_0 = (Config("pd", label, share, "fcfs") for label, share in
                        cli.policy_shares(cli.parse(["--more-slack-shares", "0"])))
    earlier = [entry(default, 1, r, run(default, 1, r)) for r in (4.0, 8.0, 16.0)]
    made.clear()
    sweep = Sweep(run, coarse=[4.0, 8.0, 16.0], seeds=[1], done=reusable(earlier))
    chosen = sweep.family([default, share_0])
    assert chosen == {"distserve": default, "p99": share_0}
    assert ("fcfs", 1, 4.0) not in made and ("slack 0, fcfs", 1, 4.0) in made
