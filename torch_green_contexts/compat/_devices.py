"""The ``dev`` argument of the flashinfer.green_ctx functions: a CUDA ``torch.device``."""

from __future__ import annotations

from typing import Any

import torch

from .. import _device


def check_cuda_device(dev: Any) -> None:
    """That ``dev`` is a CUDA ``torch.device`` (its index is checked against the driver later)."""
    if not isinstance(dev, torch.device):
        raise TypeError(f"dev must be a torch.device, got {type(dev).__name__}")
    if dev.type != "cuda":
        raise ValueError(f"dev must be a CUDA device, got {dev}")


def cuda_device(dev: Any) -> int:
    """The device ordinal of a CUDA ``torch.device`` (index None: PyTorch's current device),
    checked against the devices the driver sees (RuntimeError when out of range)."""
    check_cuda_device(dev)
    return _device.resolve_device(dev.index)
