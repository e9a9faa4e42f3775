"""The sizing API's logic and argument checks, without a GPU: results built from known figures,
and the checks that come before any driver call. (tests/gpu/test_gpu_sizing.py measures.)"""

import json
import math

import pytest

from torch_green_contexts import sizing
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.sizing import Latency, PlainFigures, SizingResult, SizingRow


def lat(p50, p99, p90=None):
    return Latency(p50=p50, p90=p90 if p90 is not None else (p50 + p99) / 2, p99=p99, mean=p50, samples=20)


def result(with_load=True):
    rows = (
        SizingRow(8, 124, lat(900, 1000), lat(950, 1200) if with_load else None, 40.0 if with_load else None),
        SizingRow(16, 116, lat(500, 560), lat(520, 640) if with_load else None, 37.0 if with_load else None),
        SizingRow(32, 100, lat(260, 300), lat(270, 330) if with_load else None, 31.0 if with_load else None),
        SizingRow(132, 0, lat(100, 120), None, None),
    )
    plain = PlainFigures(idle=lat(100, 125), loaded=lat(800, 2400) if with_load else None,
                         load_rate=30.0 if with_load else None, load_alone_rate=42.0 if with_load else None)
    return SizingResult(rows, plain, {"name": "test GPU", "sm_count": 132}, {"rounds": 1})


def test_smallest_meeting_reads_the_loaded_percentile():
    r = result()
    assert r.smallest_meeting(1200) == 8
    assert r.smallest_meeting(1199.9) == 16
    assert r.smallest_meeting(640) == 16
    assert r.smallest_meeting(330) == 32
    assert r.smallest_meeting(329) is None  # 132 SMs leave nothing for the load: not a candidate
    assert r.smallest_meeting(950, percentile=50) == 8
    assert r.smallest_meeting(520, percentile=50) == 16
    # Idle figures on request, where the row of all SMs qualifies too.
    assert r.smallest_meeting(560, under_load=False) == 16
    assert r.smallest_meeting(120, under_load=False) == 132
    assert r.smallest_meeting(119, under_load=False) is None


def test_without_a_load_the_idle_figures_decide():
    r = result(with_load=False)
    assert not r.has_load()
    assert r.smallest_meeting(560) == 16
    assert r.smallest_meeting(120) == 132


@pytest.mark.parametrize("deadline, error", [(0, ValueError), (-5, ValueError), (math.inf, ValueError),
                                             (math.nan, ValueError), ("1000", TypeError), (True, TypeError),
                                             (None, TypeError)])
def test_smallest_meeting_rejects_bad_deadlines(deadline, error):
    with pytest.raises(error, match="deadline_us"):
        result().smallest_meeting(deadline)


@pytest.mark.parametrize("q", [0, 95, 100, 99.0 + 0.5, True, "99"])
def test_smallest_meeting_rejects_unknown_percentiles(q):
    with pytest.raises(ValueError, match=r"percentile must be one of \(50, 90, 99\)"):
        result().smallest_meeting(1000, percentile=q)


def test_relative_figures_divide_by_the_plain_stream_run():
    r = result()
    rel = r.relative(r.row(16))
    assert rel["idle_p50"] == pytest.approx(5.0)
    assert rel["idle_p99"] == pytest.approx(560 / 125)
    assert rel["loaded_p99"] == pytest.approx(640 / 125)
    assert rel["load_rate"] == pytest.approx(37 / 42)
    whole = r.relative(r.row(132))
    assert whole["loaded_p99"] is None and whole["load_rate"] is None
    with pytest.raises(ValueError, match="24 SMs were not measured"):
        r.row(24)


def test_json_round_trip_and_relative_columns():
    r = result()
    text = r.to_json()
    data = json.loads(text)
    assert [row["sm_count"] for row in data["rows"]] == [8, 16, 32, 132]
    assert data["rows"][1]["relative"]["load_rate"] == pytest.approx(37 / 42)
    back = SizingResult.from_json(text)
    assert back == r
    assert SizingResult.from_json(result(with_load=False).to_json()) == result(with_load=False)
    assert SizingResult.from_json(text.encode()) == back  # UTF-8 bytes, as a file opened in binary gives


def test_table_lists_every_row_and_the_plain_streams():
    text = result().table()
    lines = text.splitlines()
    assert len(lines) == 2 + 4 + 1
    assert lines[3].startswith("| 16 | 116 | 500 | 560 | 520 | 640 | 5.12x | 37.0 | 0.88x |")
    assert lines[-1].startswith("| plain | - | 100 | 125 | 800 | 2400 | 19.20x | 30.0 | 0.71x |")


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "sizing.png"
    assert result().plot(str(path), deadline_us=700) == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result(with_load=False).plot(str(tmp_path / "idle.png"))
    assert (tmp_path / "idle.png").stat().st_size > 1000


def test_latency_of_samples():
    figures = Latency.of([float(x) for x in range(1, 101)])
    assert (figures.p50, figures.p99, figures.samples) == (50.5, pytest.approx(99.01), 100)
    assert figures.at(99) == figures.p99
    with pytest.raises(ValueError):
        Latency.of([])


def fn():
    pass


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(fn=None), TypeError, "fn must be callable"),
    (dict(fn=42), TypeError, "fn must be callable"),
    (dict(load="gemm"), TypeError, "load must be callable or None"),
    (dict(rounds=0), ValueError, "rounds must be 1 or more"),
    (dict(rounds=1.5), TypeError, "rounds must be an int"),
    (dict(rounds=True), TypeError, "rounds must be an int, not bool"),
    (dict(samples=0), ValueError, "samples must be 1 or more"),
    (dict(warmup=-1), ValueError, "warmup must be 0 or more"),
    (dict(seed="x"), TypeError, "seed must be an int"),
])
def test_measure_checks_arguments_before_touching_the_gpu(kwargs, error, match):
    call = dict(fn=fn)
    call.update(kwargs)
    target = call.pop("fn")
    with pytest.raises(error, match=match):
        sizing.measure(target, **call)


def test_measure_is_keyword_only():
    with pytest.raises(TypeError):
        sizing.measure(fn, None)  # type: ignore[misc]


def _check_counts(counts, allowed):
    return sizing._against_device(sizing._requested_counts(counts), allowed)


def test_counts_checks():
    allowed = [8, 16, 24, 132]
    assert _check_counts(None, allowed) == allowed
    assert _check_counts((24, 8, 8), allowed) == [8, 24]
    with pytest.raises(ValueError, match=r"cannot be split exactly into \[12\] SMs.*allowed counts: \[8, 16, 24, 132\]"):
        _check_counts([8, 12], allowed)
    with pytest.raises(ValueError, match="at least one"):
        _check_counts([], allowed)
    with pytest.raises(TypeError, match="counts must be a sequence"):
        _check_counts("8,16", allowed)
    with pytest.raises(TypeError, match="counts entries must be an int"):
        _check_counts([8.0], allowed)
    with pytest.raises(ValueError, match="counts entries must be 1 or more"):
        _check_counts([0], allowed)


@pytest.mark.parametrize("counts, error, match", [
    ("16,32", TypeError, "latency_sms must be a sequence"),
    (16, TypeError, "latency_sms must be a sequence"),
    ([], ValueError, "at least one"),
    ([16, 16], ValueError, "repeated counts"),
    ([16, True], TypeError, "not bool"),
    ([16, 1.5], TypeError, "must be ints"),
])
def test_layouts_check_arguments_before_touching_the_gpu(counts, error, match):
    with pytest.raises(error, match=match):
        Layouts(counts)
