"""Plots of the package's results: matplotlib, imported on first use, on its file-only backend."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator


def pyplot(what: str) -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display); RuntimeError saying that
    ``what`` needs matplotlib, and how to install it, where it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RuntimeError(f"{what} needs matplotlib: pip install matplotlib") from error
    return plt


def pyplot_if_installed() -> Any | None:
    """``matplotlib.pyplot`` as :func:`pyplot` gives it; None where matplotlib is missing."""
    try:
        return pyplot("a plot")
    except RuntimeError:
        return None


@contextlib.contextmanager
def sm_count_panels(path: str, what: str) -> Iterator[tuple[Any, Any]]:
    """Two panels over the SM count of a step's partition, written to ``path`` as a PNG when the
    block ends: above, the step's latency (log scale); below, the load's rate, or a note that
    no load was measured where nothing is drawn there. RuntimeError naming ``what`` without
    matplotlib."""
    plt = pyplot(what)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    try:
        yield top, bottom
        top.set_yscale("log")
        top.grid(True, which="both", alpha=0.3)
        bottom.set_xlabel("SMs of the step's partition (k)")
        if not bottom.lines:
            bottom.text(0.5, 0.5, "no load measured", ha="center", va="center", transform=bottom.transAxes)
        bottom.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
