"""Which device a call is about, and the checks that need a driver."""

from __future__ import annotations

from ._native import _C
from ._validation import as_device_id


def resolve_device(device_id: object) -> int:
    """`device_id`, or PyTorch's current device when None; RuntimeError when out of range."""
    device = as_device_id(device_id)
    count = _C.device_count()
    if device is None:
        device = _C.current_device()
    if device >= count:
        raise RuntimeError(
            f"device_id {device} is out of range: this machine has {count} CUDA device"
            f"{'' if count == 1 else 's'}"
            + (f" (valid device_id: 0..{count - 1})" if count else "")
        )
    return device
