"""The plots of the sizing results without matplotlib: one RuntimeError naming the plot and how
to install matplotlib, and no figure left open when a plot is written."""

import sys

import pytest

from torch_green_contexts import _plotting

from .test_profile_policy import make_profile
from .test_sizing import result


def test_without_matplotlib_a_plot_says_what_needs_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    for plot, what in ((result().plot, "SizingResult.plot"), (make_profile().plot, "LatencyProfile.plot")):
        with pytest.raises(RuntimeError, match=f"^{what} needs matplotlib: pip install matplotlib$"):
            plot(str(tmp_path / "x.png"))
    assert _plotting.pyplot_if_installed() is None
    assert not list(tmp_path.iterdir())


def test_a_written_plot_leaves_no_figure_open(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    before = plt.get_fignums()
    result().plot(str(tmp_path / "a.png"))
    make_profile().plot(str(tmp_path / "b.png"))
    assert plt.get_fignums() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]
    with pytest.raises(ZeroDivisionError):
        with _plotting.sm_count_panels(str(tmp_path / "c.png"), "a test plot"):
            raise ZeroDivisionError
    assert plt.get_fignums() == before and not (tmp_path / "c.png").exists()
