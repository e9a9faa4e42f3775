"""Which device a call is about."""

from __future__ import annotations

from ._native import _C
from ._validation import as_device_id


def resolve_device(device_id: object) -> int:
    """`device_id`, or PyTorch's current device when None; RuntimeError when out of range."""
    return _C.resolve_device(as_device_id(device_id))
