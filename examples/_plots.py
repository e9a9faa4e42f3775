"""Plots are optional in the examples: their results files are written first, and without
matplotlib a plot is skipped with one line on stderr."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any, Callable

INSTALL = "pip install matplotlib (or pip install -e .[examples])"
_said: list[str] = []


def have_matplotlib() -> bool:
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def pyplot() -> Any:
    """``matplotlib.pyplot`` on its file-only backend (Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def optional_plot(draw: Callable[..., Any], path: str, *args: Any, **kwargs: Any) -> str | None:
    """``draw(path, *args, **kwargs)`` when matplotlib is installed; ``path``, or None when the
    plot was skipped (said once per process on stderr)."""
    if not have_matplotlib():
        if not _said:
            print(f"no plots (such as {path}): matplotlib is not installed ({INSTALL}); the results files "
                  "have every figure", file=sys.stderr)
            _said.append(path)
        return None
    draw(path, *args, **kwargs)
    return path
