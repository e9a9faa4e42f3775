"""Loads the compiled core, torch first (the extension links against libtorch)."""

from __future__ import annotations

import torch  # noqa: F401  (loads libtorch and libc10_cuda for the extension)

try:
    from . import _C
except ImportError as error:  # pragma: no cover - only with a broken build
    raise ImportError(
        "torch_green_contexts' compiled extension could not be loaded "
        f"({error}). It must be built against the installed PyTorch "
        f"({torch.__version__}): run `pip install --no-build-isolation -e .` again."
    ) from error

__all__ = ["_C"]
