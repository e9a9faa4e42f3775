"""is_available(): whether green contexts can be made here."""

from __future__ import annotations

import torch

from ._native import _C


def is_available() -> bool:
    """Whether green contexts can be used here: a CUDA build of PyTorch, a CUDA driver with
    green contexts (12.4 or newer) and at least one CUDA device. Never raises.

    It loads and initialises the driver (``cuInit``, which makes no context) to count the
    devices, as ``torch.cuda.is_available()`` may.
    """
    try:
        if torch.version.cuda is None or getattr(torch.version, "hip", None) is not None:
            return False
        if _C.installed_driver_version() < _C.feature_version.green_contexts:
            return False
        present, _since = _C.entry_points()["cuGreenCtxCreate"]
        return bool(present) and _C.device_count() > 0
    except Exception:  # noqa: BLE001 - by contract: any failure means "not available"
        return False
