"""The prefill-alone bound (python -m examples.pd.prefill_bound) on a made-up calibration: a
prompt's prefill is its pieces' idle times on the fastest lane, the queue serves one prompt at a
time in either order, and the highest rate stops at the first rate whose TTFT P99 misses. No GPU."""

from __future__ import annotations

import json

import pytest

from examples.pd.bench import cli
from examples.pd.bench.prefill_bound import bound, fastest_prefill_lane, main, prefill_s, ttft_p99_share
from examples.pd.engine.request import Request, Slo
from tests.examples.pd import calibration_data

SLO = Slo(ttft=1.0, tpot=0.02)
ARGS = ["--layers", "4", "--max-prompt", "900", "--min-prompt", "64", "--prompt-median", "300", "--max-output", "120",
        "--output-median", "40", "--min-output", "4", "--ttft-slo-ms", "400", "--tpot-slo-ms", "8", "--seeds", "1",
        "--requests", "200", "--arrival-s", "20", "--chunk", "512", "--piece-layers", "1", "--context", "512"]


def test_a_prompt_is_prefilled_in_chunks_at_the_fastest_lanes_idle_speed() -> None:
    calibration = calibration_data.calibration()
    name, costs = fastest_prefill_lane(calibration)
    assert calibration["lanes"][name]["batch_sms"] == calibration_data.TOTAL
    one_chunk = costs.prefill_us(512, 512 * 513 // 2, 4)[0] * 1e-6
    second = costs.prefill_us(88, 88 * 512 + 88 * 89 // 2, 4)[0] * 1e-6  # the rest sees the first chunk
    assert prefill_s(costs, 512, 512, 4) == pytest.approx(one_chunk)
    assert prefill_s(costs, 600, 512, 4) == pytest.approx(one_chunk + second)


def test_the_queue_serves_one_prompt_at_a_time_in_its_order() -> None:
    trace = [Request(0, 0.0, 1000, 8), Request(1, 0.1, 4000, 8), Request(2, 0.2, 100, 8)]
    seconds = {0: 0.5, 1: 2.0, 2: 0.1}
    # First come: 0 ends at 0.5, 1 at 2.5 (TTFT 2.4), 2 at 2.6 (TTFT 2.4).
    fcfs = ttft_p99_share(trace, seconds, SLO, "fcfs")
    assert fcfs == pytest.approx(2.4)
    # Shortest first: at 0.5 both wait, 2 goes first (ends 0.6, TTFT 0.4), then 1 (ends 2.6, TTFT 2.5);
    # the P99 of 0.4, 0.5 and 2.5 lies 98% of the way from 0.5 to 2.5.
    assert ttft_p99_share(trace, seconds, SLO, "spf") == pytest.approx(0.5 + 0.98 * 2.0)
    # A TTFT SLO that grows with the prompt (1 ms a token) divides each by its own.
    grows = Slo(ttft=1.0, tpot=0.02, ttft_per_token=1e-3)
    assert ttft_p99_share(trace, seconds, grows, "fcfs") == pytest.approx(2.4 * 0.98 + 0.6 * 0.02)


def test_the_highest_rate_is_the_last_before_the_first_miss() -> None:
    calibration = calibration_data.calibration()
    _, costs = fastest_prefill_lane(calibration)
    s = cli.parse([*ARGS, "--ttft-slo-ms", "50"])
    rates = [1.0, 10.0, 100.0, 1000.0, 10_000.0]
    result = bound(s, costs, 512, 4, 1, rates)
    shares = [min(r["ttft_p99_share_fcfs"], r["ttft_p99_share_spf"]) for r in result["rates"]]
    assert shares[0] < 1.0 < shares[-1]  # light load passes, the last rate tried misses
    assert result["highest_rate"] == result["rates"][-2]["rate"]
    assert all(x <= y + 1e-9 for x, y in zip(shares, shares[1:]))


def test_the_command_writes_the_bound_labelled_simulated(tmp_path, capsys) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(calibration_data.calibration()))
    out = tmp_path / "bound.json"
    assert main(["--calibration", str(path), "--json", str(out), "--step", "0.5", *ARGS]) == 0
    written = json.loads(out.read_text())
    assert written["simulated"]["measured_on"] == "Test GPU" and written["seeds"][0]["highest_rate"] > 0
    assert "simulated" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--calibration", str(path), "--step", "0", *ARGS])
    assert "--step must be in (0, 1]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--calibration", str(tmp_path / "missing.json"), *ARGS])
    assert "missing.json: no such file" in capsys.readouterr().err
