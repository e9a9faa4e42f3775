"""The examples write their results before any plot, and without matplotlib skip the plots
with one line instead of losing the run (no GPU: the results are made up)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    sys.modules["matplotlib"] = None  # as if it were not installed
    sys.path.insert(0, {root!r})
    from examples.pd.bench import cli
    from examples.pd.bench.sweep import finish
    from tests.examples.pd.test_report import RUNS
    from examples import _plots
    s = cli.parse(["--out", {out!r}])
    results = {{"runs": RUNS, "seeds": [1, 2], "workload": "today", "slo": {{"ttft_ms": 500.0, "tpot_ms": 40.0}},
               "model": {{"layers": 4}}, "device": {{"name": "test GPU"}}}}
    finish(results, s, time.perf_counter())
    drawn = []
    assert _plots.optional_plot(lambda path: drawn.append(path), "x.png") is None and not drawn
    print("finished")
    """
)


def test_pd_results_survive_a_missing_matplotlib(tmp_path):
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    code = SCRIPT.format(root=str(root), out=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished" in result.stdout
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["schedulers"]["pd-overlap"]["distserve"]["best"] == "spf" and "comparison" in saved
    assert not list(tmp_path.glob("*.png"))
    lines = [line for line in result.stderr.splitlines() if "matplotlib" in line]
    assert len(lines) == 1 and "pip install -e .[examples]" in lines[0], result.stderr


def test_plots_are_drawn_when_matplotlib_is_there(tmp_path):
    import pytest

    pytest.importorskip("matplotlib")
    from examples import _plots

    drawn = []
    assert _plots.optional_plot(lambda path, dpi: drawn.append((path, dpi)), "a.png", dpi=90) == "a.png"
    assert drawn == [("a.png", 90)]
