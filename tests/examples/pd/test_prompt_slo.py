"""A TTFT SLO that grows with the prompt in the prefill/decode example (--ttft-slo-ms-per-token,
SGLang's rule for 8B models: the larger of 1 s and 1 ms a prompt token): attainment, the P99
margin, the policy's TTFT slack, the run's cap and the results file. No GPU."""

from __future__ import annotations

import json

import pytest

from examples.pd.bench import cli
from examples.pd.bench.estimates import run_cap
from tests.examples.pd.serving import run_overlap
from examples.pd.bench.metrics import RequestRecord, RunLog, slo_from_json, slo_json, summarize
from examples.pd.engine.request import Slo
from torch_green_contexts.sizing import percentile
from examples.pd.engine.planning import PrefillCursor
from examples.pd.engine.request import Request
from tests.examples.pd.test_loops import LAYERS, SimDevice, VirtualClock, check_complete, settings

SGLANG = Slo(ttft=1.0, tpot=0.02, ttft_per_token=1e-3)


def test_a_requests_ttft_slo_is_the_larger_of_the_floor_and_its_prompts_share():
    assert SGLANG.ttft_for(500) == 1.0 and SGLANG.ttft_for(1000) == 1.0
    assert SGLANG.ttft_for(8192) == pytest.approx(8.192)
    assert Slo(1.0, 0.02).ttft_for(16384) == 1.0
    assert SGLANG.describe() == "TTFT max(1000 ms, 1 ms a prompt token), TPOT 20.0 ms"
    assert Slo(1.0, 0.02).describe() == "TTFT 1000 ms, TPOT 20.0 ms"


def test_results_files_record_the_rule_and_older_files_read_as_one_slo():
    assert slo_from_json(json.loads(json.dumps(slo_json(SGLANG)))) == SGLANG
    assert slo_from_json({"ttft_ms": 1000.0, "tpot_ms": 20.0, "ttft_from": "--ttft-slo-ms"}) == Slo(1.0, 0.02)


def record(i, prompt, ttft, first_at=0.0):
    first = first_at + ttft
    return RequestRecord(i, first_at, prompt, 3, first, first + 0.02, 3)


def test_attainment_and_the_p99_margin_judge_each_request_by_its_own_ttft_slo():
    # A 8k-token prompt served in 5 s meets its 8.2 s SLO; a 500-token one served in 1.5 s misses 1 s.
    log = RunLog([record(0, 8192, 5.0), record(1, 500, 1.5), record(2, 500, 0.5), record(3, 4000, 4.5)],
                 [], 10.0, False, [0.01] * 10)
    s = summarize(log, SGLANG)
    assert s["attainment"] == 0.5 and s["ttft_met"] == 0.5  # requests 0 and 2
    # The TTFT part of the margin: the P99 of TTFT over each request's SLO (1.5, 0.61, 0.5, 1.125).
    shares = sorted([1.5, 5.0 / 8.192, 0.5, 4.5 / 4.0])
    assert s["p99_margin"] == pytest.approx(shares[2] + (shares[3] - shares[2]) * 0.97)
    assert s["p99_ttft_ms"] == pytest.approx(4985.0)  # the raw P99 TTFT, as before
    # With one SLO for all, the margin is the P99 TTFT over it, to the bit, as it always was.
    flat = summarize(log, Slo(0.7, 0.02))
    assert flat["p99_margin"] == percentile([5.0, 1.5, 0.5, 4.5], 99) / 0.7 and flat["attainment"] == 0.25


def test_the_cap_leaves_every_request_the_time_its_own_slos_allow():
    trace = [Request(0, 0.0, prompt=16384, output=4), Request(1, 1.0, prompt=500, output=40)]
    assert run_cap(trace, SGLANG, margin_s=0.0) == pytest.approx(1.0 + 16.384 + 39 * 0.02)
    assert run_cap(trace, Slo(1.0, 0.02), margin_s=0.0) == pytest.approx(1.0 + 1.0 + 39 * 0.02)


def test_the_policy_sees_the_ttft_slack_of_the_waiting_prompt_by_its_own_slo():
    clock = VirtualClock()
    slo = Slo(ttft=0.5, tpot=0.01, ttft_per_token=1e-3)  # the 3000-token prompt: 3 s
    requests = [Request(0, 0.0, prompt=20, output=60), Request(1, 0.01, prompt=3000, output=2)]
    device = SimDevice(clock, slots=4, decode_s=(2e-3, 0.0))
    log = run_overlap(requests, device, PrefillCursor(256, LAYERS, 1), 2, settings(slots=4, slo=slo), clock)
    check_complete(log, requests)
    during = [(t, st) for t, st in device.states if 0.011 < t < log.requests[1].first_token - 1e-3]
    assert during
    for t, st in during:
        assert st.ttft_slack_s == pytest.approx(0.01 + 3.0 - t, abs=1e-3)


def test_the_option_must_match_on_resuming(tmp_path):
    from examples.pd.bench.sweep import load_resume

    assert cli.parse([]).ttft_slo_ms_per_token is None
    assert cli.parse(["--ttft-slo-ms-per-token", "1"]).ttft_slo_ms_per_token == 1.0
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"settings": cli.settings_dict(cli.parse(["--quick"])), "runs": []}))
    assert load_resume(cli.parse(["--quick", "--resume", str(path)]))["runs"] == []
    with pytest.raises(SystemExit, match="settings differ in ttft_slo_ms_per_token"):
        load_resume(cli.parse(["--quick", "--ttft-slo-ms-per-token", "1", "--resume", str(path)]))


def test_shortest_prompt_first_ages_each_request_at_half_its_own_ttft_slo():
    from examples.pd.engine.admission import FCFS, Order, order_for

    spf = order_for("spf", SGLANG.ttft, SGLANG.ttft_per_token)
    assert spf == Order("spf", 0.5, 0.5e-3)
    assert spf.label == "SPF, aging max(500 ms, 0.5 ms a prompt token)"
    assert order_for("spf", 1.0) == Order("spf", 0.5) and order_for("fcfs", 1.0, 1e-3) == FCFS
    assert order_for("spf", 1.0, 1e-3, aging_s=0.2) == Order("spf", 0.2)  # --aging-ms: one aging for all
    short, long = Request(0, 3.4, prompt=600, output=2), Request(1, 0.0, prompt=8000, output=2)
    # At 3.5 s the 8000-token prompt has waited 3.5 s of its 4 s aging: the shorter prompt goes first
    # (with one aging of 0.5 s for all, the long one would have gone ahead at 0.5 s).
    waiting = [long, short]
    spf.sort(waiting, 3.5)
    assert waiting == [short, long]
    spf.sort(waiting, 3.8)  # both unaged still
    assert waiting == [short, long]
    spf.sort(waiting, 4.0)  # the long prompt has aged, the short one (0.6 s) too: the older first
    assert waiting == [long, short]
    with pytest.raises(ValueError, match="aging_per_token must not be negative"):
        Order("spf", 1.0, -1.0)
