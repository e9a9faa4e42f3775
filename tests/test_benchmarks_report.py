"""The benchmarks' statistics, targets and report, on synthetic results (no GPU needed)."""

import json
import pathlib

import pytest

from benchmarks import report
from benchmarks.stats import interleaved, percentile, summarize, target


def test_percentile_interpolates_between_ranks():
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 3.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 25) == 2.0
    assert percentile([1.0, 2.0], 50) == 1.5
    with pytest.raises(ValueError):
        percentile([], 50)


def test_summary():
    s = summarize(range(1, 101))
    assert s["n"] == 100 and s["median"] == 50.5 and s["min"] == 1 and s["max"] == 100
    assert s["p99"] == pytest.approx(99.01)


def test_interleaving_runs_each_variant_once_per_round_in_varying_order():
    names = ["a", "b", "c", "d"]
    order = list(interleaved(names, 50))
    assert len(order) == 200
    rounds = [[n for r, n in order if r == i] for i in range(50)]
    assert all(sorted(r) == names for r in rounds)
    assert len({tuple(r) for r in rounds}) > 10
    assert {r[0] for r in rounds} == set(names)
    predecessors = {(a, b) for r in rounds for a, b in zip(r, r[1:])}
    assert len(predecessors) == 12  # every ordered pair occurs
    assert list(interleaved(names, 5)) == list(interleaved(names, 5))


def test_target_direction():
    assert target("x", 1.0, 2.0, unit="us")["met"] is True
    assert target("x", 3.0, 2.0, unit="us")["met"] is False
    assert target("x", 0.99, 0.97, unit="x", higher_is_better=True)["met"] is True
    assert target("x", None, 0.97, unit="x")["met"] is None


def _synthetic():
    def s(median, p99=None):
        return summarize([median] * 9 + [p99 if p99 is not None else median])

    return {
        "environment": {"gpu": "Test GPU", "cuda_driver": "13.0", "torch": "2.x"},
        "stream": {"rounds": 10, "results": {report.STREAM_OURS: s(1.5),
                                             "torch built-in: GreenContext.Stream()": s(9.0)}},
        "create": {
            "rounds": 10,
            "create": {report.CREATE_OURS: s(1000.0), report.CREATE_RAW: s(990.0),
                       report.SPLIT_OURS: s(2100.0)},
            "destroy": {report.CREATE_OURS: s(100.0)},
            "granted_sm_counts": {report.CREATE_OURS: [16]},
            "first_stream_of_fresh_context": s(8.0),
            "steps": {"_C._GreenContext.create": s(950.0)},
        },
        "churn": {"results": {"driver: create + destroy only": {
            "cycles": 200, "device_kib_per_cycle": 4096.0, "host_kib_per_cycle": 1696.9}},
            "recovery": {"device_mib_lost_in_all": 800.0}},
        "isolation": {
            "latency_gemm": "2048^3 bf16", "load_gemm": "8192^3 bf16", "rounds": 1,
            "variants": ["ours: 16-SM partition, idle", "ours: 16-SM partition, load on the other 116"],
            "observed_sms": {"ours: 16-SM partition, load on the other 116":
                             {"latency_sms": 16, "load_sms": 116, "shared_sms": 0}},
            "results": {
                "ours: 16-SM partition, idle": {
                    "device_us": s(200.0, 210.0), "host_us": s(220.0), "p50_vs_partition_idle": 1.0,
                    "p99_vs_partition_idle": 1.0, "load_tflops": None, "result_correct": True},
                "ours: 16-SM partition, load on the other 116": {
                    "device_us": s(212.0, 300.0), "host_us": s(230.0), "p50_vs_partition_idle": 1.06,
                    "p99_vs_partition_idle": 1.43, "load_tflops": s(600.0), "result_correct": True},
            },
            "samples_device_us": {"ours: 16-SM partition, idle": [200.0, 201.0],
                                  "ours: 16-SM partition, load on the other 116": [212.0, 300.0]},
        },
        "fidelity": {
            "gemm": "8192^3 bf16", "rounds": 1, "whole_gpu_tflops": 700.0,
            "results": {
                "plain stream": {"sm_count": 132, "tflops": s(700.0), "tflops_sequential_pass": 780.0,
                                 "ratio_to_share_of_whole": 1.0, "ratio_to_plain": 1.0, "sm_clock_mhz": 1700.0},
                "ours: 16 SMs": {"sm_count": 16, "tflops": s(84.0), "tflops_sequential_pass": 84.0,
                                 "ratio_to_share_of_whole": 0.99, "ratio_to_plain": 0.12, "sm_clock_mhz": None},
                "ours: 132 SMs": {"sm_count": 132, "tflops": s(705.0), "tflops_sequential_pass": 700.0,
                                  "ratio_to_share_of_whole": 1.007, "ratio_to_plain": 1.007, "sm_clock_mhz": 1690.0},
            },
            "kernels": {"plain stream": ["gemm_kernel"]},
        },
    }


def test_targets_and_table_from_synthetic_results():
    results = _synthetic()
    checks = {t["name"]: t for t in report.targets(results)}
    assert checks["Stream() median host cost"]["met"] is True
    create = checks["GreenContext(num_sms=16) / the bare driver calls"]
    assert create["measured"] == pytest.approx(1000.0 / 990.0) and create["met"] is True
    split = checks["GreenContext.split(num_sms=(16, 116)) / one GreenContext(num_sms=16)"]
    assert split["measured"] == pytest.approx(2.1) and split["met"] is False
    assert checks["isolation p50 under load / idle on the partition"]["met"] is True
    assert checks["isolation p99 under load / idle on the partition"]["met"] is False
    assert checks["GEMM TFLOP/s on a context of all 132 SMs / plain stream"]["met"] is True
    results["targets"] = list(checks.values())
    text = report.markdown(results)
    assert "| Stream() median host cost | 1.50 us | <= 2.0 us | yes |" in text
    assert "16/116/0" in text and "NO" in text
    assert "| _C._GreenContext.create | 950.0 |" in text
    assert "| driver: create + destroy only | 200 | 4096 | 1697 |" in text


def test_sm_count_costs_in_targets_and_table():
    results = _synthetic()
    results["sm_count"] = {
        "rounds": 10, "batch": 50,
        "answers": {"ours: sm_count(GreenContext.Stream())": 16, "ours: sm_count(torch.cuda.Stream())": 132},
        "results": {"ours: sm_count(GreenContext.Stream())": summarize([0.2] * 10),
                    "ours: sm_count(torch.cuda.Stream())": summarize([0.45] * 10),
                    "torch.cuda.get_device_properties(device).multi_processor_count": summarize([2.0] * 10)},
    }
    checks = {t["name"]: t for t in report.targets(results)}
    cost = checks["sm_count(stream) host cost per call, slowest kind of stream (median)"]
    assert cost["measured"] == pytest.approx(0.45) and cost["met"] is True
    assert cost["detail"] == "ours: sm_count(torch.cuda.Stream())"
    text = report.markdown(results)
    assert "## sm_count(stream): host cost per call, us (10 interleaved rounds of 50 calls)" in text
    assert "| ours: sm_count(torch.cuda.Stream()) | 0.450 | 0.450 | 0.450 | 0.450 | 132 |" in text


def test_plots_written_when_matplotlib_is_there(tmp_path):
    pytest.importorskip("matplotlib")
    written = report.plots(_synthetic(), str(tmp_path))
    assert sorted(p.rsplit("/", 1)[1] for p in written) == ["fidelity.png", "latency.png"]
    assert all((tmp_path / name).stat().st_size > 10_000 for name in ("fidelity.png", "latency.png"))


def _synthetic_pd():
    from tests.test_profile_policy import make_profile

    def s(median, p99):
        return summarize([median] * 90 + [p99] * 10)  # p90 = median + (p99 - median) / 10

    prof = make_profile()
    return {
        "model": {"layers": 4, "context_tokens": 2048, "prefill_chunk_tokens": 2048},
        "profile": {"buckets": [8, 32, 64], "counts": list(prof.counts), "seconds": 41.5, "rounds": 3,
                    "samples": 20, "table": prof.table(), "data": prof.to_dict()},
        "policy": {"steps": 1000, "switches": 333, "step_us": s(2.1, 6.0), "done_us": s(1.0, 2.0)},
        "alternating": {"batch": 64, "rounds": 3, "steps_per_round": 200, "variants": {
            "fixed layout (64 SMs)": {"wall_us": s(1700.0, 1800.0), "prefill_tokens_per_s": 150000.0},
            "alternating 64/72, full ordering": {"wall_us": s(5000.0, 9000.0), "prefill_tokens_per_s": 140000.0},
            "alternating 64/72, per-role ordering": {"wall_us": s(1720.0, 1900.0), "prefill_tokens_per_s": 149000.0},
        }},
    }


def test_prefill_decode_targets_and_table():
    pd = _synthetic_pd()
    checks = {t["name"]: t for t in report.targets({"pd": pd})}
    assert checks["profile of 3 decode batch sizes x 4 SM counts"]["met"] is True
    step = checks["SplitPolicy.step host cost (median)"]
    assert step["measured"] == pytest.approx(2.1) and step["met"] is True
    alternating = checks["decode p99, layout alternating every step with per-role ordering / fixed layout"]
    assert alternating["measured"] == pytest.approx(1900.0 / 1800.0) and alternating["met"] is True
    assert "full ordering 9000 us" in alternating["detail"]
    pd["alternating"]["variants"]["alternating 64/72, per-role ordering"]["wall_us"] = s = summarize([2000.0] * 100)
    assert not {t["name"]: t for t in report.targets({"pd": pd})}[alternating["name"]]["met"]
    text = report.markdown({"pd": pd})
    assert "| alternating 64/72, full ordering | 5000 | 5400 | 9000 | 9000 | 140000 |" in text
    assert "| SMs | p=8 | p=32 | p=64 |" in text and s["median"] == 2000.0


def test_prefill_decode_profile_plot(tmp_path):
    pytest.importorskip("matplotlib")
    written = report.plots({"pd": _synthetic_pd()}, str(tmp_path))
    assert [p.rsplit("/", 1)[1] for p in written] == ["profile.png"]


# ---- python -m benchmarks --replot FILE: only a results.json of python -m benchmarks is drawn ----

RESULTS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _replot(path, out, capsys):
    """main(--replot path --out out): the exit status, and the error line when it failed."""
    from benchmarks.__main__ import main

    try:
        status = main(["--replot", str(path), "--out", str(out)])
    except SystemExit as exit:
        status = exit.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == (0 if status == 0 else 1), err
    return status, (errors[0] if errors else "")


def test_replot_of_a_results_file_writes_the_table(tmp_path, capsys):
    results = _synthetic()
    results["targets"] = report.targets(results)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    out = tmp_path / "out"
    status, _ = _replot(path, out, capsys)
    assert status == 0
    table = (out / "table.md").read_text()
    assert table == report.markdown(results) + "\n" and "| Stream() median host cost | 1.50 us |" in table


@pytest.mark.parametrize("name, what", [
    ("2026-12-03-h200/serving.json", "it is the results of examples/serving.py"),
    ("2026-12-03-compat/matrix.json", "it is the compatibility matrix of scripts/compat_matrix.sh"),
    ("2026-12-02-h200/reliability.json", "it is the figures of the GPU reliability tests"),
    ("2026-12-02-h200/distributed-one-gpu.json", "it is the results of python -m benchmarks.distributed"),
    ("2026-12-03-h200-pd-engine/profile.json", "it is a LatencyProfile"),
    ("2026-12-04-h200-pd-sweep/chat-32-layers-layout-profile.json", "it is a LayoutProfile"),
    ("2026-12-04-h200-pd-sweep/chat-32-layers-results.json", "it is the results of python -m examples.pd"),
])
def test_replot_refuses_the_other_results_files_saying_what_they_are(name, what, tmp_path, capsys):
    path = RESULTS / name
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    out = tmp_path / "out"
    status, error = _replot(path, out, capsys)
    assert status == 2
    assert f"--replot: {path} is not a results.json that python -m benchmarks writes" in error
    assert "'environment'" in error and "memory, stream" in error  # what it expects
    assert error.endswith(what) or what + " (" in error, error
    assert not out.exists(), "nothing written for an unusable file"


@pytest.mark.parametrize("text, said", [
    ("not json at all\n", "is not a JSON file (Expecting value"),
    ("{\"environment\": {", "is not a JSON file ("),
    ("[1, 2]", "it holds a JSON list"),
    ("{\"stream\": {}}", "it has no 'environment'"),
    ("{\"environment\": [], \"stream\": {}}", "its 'environment' is no JSON object"),
    ("{\"environment\": {\"gpu\": \"x\"}, \"targets\": []}", "it has the results of none of the suites memory"),
    ("{\"environment\": {\"gpu\": \"x\"}, \"stream\": {\"rounds\": 3}}",
     "is a damaged results.json: its table cannot be made (KeyError: 'results')"),
])
def test_replot_refuses_what_it_cannot_draw_in_one_line(text, said, tmp_path, capsys):
    path = tmp_path / "given.json"
    path.write_text(text)
    out = tmp_path / "out"
    status, error = _replot(path, out, capsys)
    assert status == 2
    assert error.startswith(f"python -m benchmarks: error: --replot: {path} ") and said in error, error
    assert not (out / "table.md").exists()


def test_replot_of_a_binary_or_missing_file_is_a_usage_error(tmp_path, capsys):
    binary = tmp_path / "plot.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    status, error = _replot(binary, tmp_path / "out", capsys)
    assert status == 2 and f"{binary} is not a JSON file" in error
    missing = tmp_path / "missing.json"
    status, error = _replot(missing, tmp_path / "out", capsys)
    assert status == 2 and error.endswith(f"--replot: cannot read {missing}: No such file or directory")
    status, error = _replot(tmp_path, tmp_path / "out", capsys)
    assert status == 2 and f"cannot read {tmp_path}: Is a directory" in error
    assert not (tmp_path / "out").exists()


def test_the_two_slo_policy_host_cost_target():
    from benchmarks.report import targets

    figures = {"median": 3.2, "p90": 7.5}
    results = {"pd_policy": {"steps": 100, "budget rule": {"step_and_done_us": figures},
                             "p99 mode": {"step_and_done_us": {"median": 5.4, "p90": 9.0}}}}
    lines = {t["name"]: t for t in targets(results)}
    assert lines["PrefillDecodePolicy.step() + done() host cost, budget rule (median)"]["met"] is True
    assert lines["PrefillDecodePolicy.step() + done() host cost, p99 mode (median)"]["met"] is False


def test_the_host_cost_target_says_what_it_is_made_of():
    from benchmarks.report import targets

    results = {"pd_policy": {"steps": 100,
                             "budget rule": {"step_and_done_us": {"median": 9.1, "p90": 53.7},
                                             "untimed_step_and_done_us": {"median": 4.2}},
                             "p99 mode": {"step_and_done_us": {"median": 8.8, "p90": 56.9},
                                          "untimed_step_and_done_us": {"median": 4.6}},
                             "parts": {"event_record_us": {"median": 2.3}, "switch_us": {"median": 4.4}}}}
    lines = {t["name"]: t for t in targets(results)}
    detail = lines["PrefillDecodePolicy.step() + done() host cost, p99 mode (median)"]["detail"]
    assert detail == ("p90 56.90 us; without the step timer 4.60 us, one event record 2.30 us, "
                      "one layout switch 4.40 us")
    results["pd_policy"]["budget rule"].update({"sampled_step_and_done_us": {"median": 4.9}, "sample_every": 4})
    lines = {t["name"]: t for t in targets(results)}
    detail = lines["PrefillDecodePolicy.step() + done() host cost, budget rule (median)"]["detail"]
    assert detail.endswith("; timing one step in 4 (sample_every) 4.90 us")
    assert lines["PrefillDecodePolicy.step() + done() host cost, budget rule (median)"]["met"] is False
