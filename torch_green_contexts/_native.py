"""Loads the compiled core, torch first (the extension links against libtorch), after checking
that the installed torch is the one the extension was built against (once, before loading: a
mismatched extension may not load at all)."""

from __future__ import annotations

import torch

from ._torch_version import check_torch

check_torch(torch.__version__)


def _built_against_torch() -> str | None:
    """The torch the extension was compiled against, as setup.py recorded it; None for a build
    that did not go through setup.py."""
    try:
        from ._build_info import TORCH_VERSION
    except ImportError:  # pragma: no cover - a build that did not go through setup.py
        return None
    return TORCH_VERSION


BUILT_AGAINST_TORCH = _built_against_torch()

REBUILD = (
    "rebuild it against the installed torch: `pip install --no-build-isolation --no-deps "
    "--force-reinstall <this package's source>` (or `pip install --no-build-isolation -e .` in a "
    "checkout)"
)

if BUILT_AGAINST_TORCH is not None and BUILT_AGAINST_TORCH != torch.__version__:
    raise ImportError(
        f"torch_green_contexts was built against torch {BUILT_AGAINST_TORCH}, but torch "
        f"{torch.__version__} is installed; its compiled extension works only with the torch "
        f"it was built against: {REBUILD}"
    )

try:
    from . import _C
except ImportError as error:  # pragma: no cover - only with a broken build
    raise ImportError(
        f"torch_green_contexts' compiled extension could not be loaded ({error}); {REBUILD} "
        f"(installed torch: {torch.__version__})"
    ) from error

__all__ = ["_C", "BUILT_AGAINST_TORCH"]
