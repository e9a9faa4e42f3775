"""SGLang's green-context streams (``sgl_kernel``'s ``spatial`` module, used by its
prefill/decode multiplexing) on torch_green_contexts, without building sgl_kernel.

Replace ``from sgl_kernel import spatial`` with
``from torch_green_contexts.compat import sglang as spatial``::

    total = spatial.get_sm_available(gpu_id)                             # 132 on an H200
    prefill, decode = spatial.create_greenctx_stream_by_value(112, 20, gpu_id)

Beyond the original: the two partitions come from one split (disjoint on every driver), a
stream keeps its green context alive, and contexts whose streams are dropped are reused.
"""

from __future__ import annotations

from typing import Any

import torch

from .._device import resolve_device
from .._errors import DriverError
from .._native import _C
from .._sm_partition import SMPartition
from .._validation import as_count
from ._sm_counts import does_not_fit
from ._streams import streams_on

__all__ = ["create_greenctx_stream_by_value", "get_sm_available"]


def create_greenctx_stream_by_value(
    SM_a: int, SM_b: int, device_id: int | None = None
) -> tuple[torch.cuda.Stream, torch.cuda.Stream]:
    """Two streams on disjoint partitions of exactly ``SM_a`` and ``SM_b`` SMs of a device
    (``None``: PyTorch's current device).

    As in sgl_kernel, the counts must be positive and fit in the device (RuntimeError), and a
    count the hardware cannot give exactly is a RuntimeError, not a silently different
    partition: ``SM_a`` must be a size the device splits off (a multiple of 8 on Hopper), and
    ``SM_b`` one too, unless the two take every SM (then ``SM_b`` is the rest, whatever its
    size). The streams keep their green contexts alive.
    """
    device = resolve_device(device_id)
    a, b = _int("SM_a", SM_a), _int("SM_b", SM_b)
    if a <= 0 or b <= 0:
        raise RuntimeError(f"SM counts must be positive, got SM_a={a}, SM_b={b}")
    total = _C.device_sm_count(device)
    if a + b > total:
        raise RuntimeError(
            f"Not enough SMs available for the requested configuration: SM_a + SM_b = {a + b}, "
            f"device {device} has {total} SMs"
        )
    whole = SMPartition.from_device(device)
    takes_the_rest = a + b == total  # then the second is the remainder, in any size
    try:
        (first, second), _ = whole.split(num_sms=(a, b), backfill=(False, takes_the_rest))
    except (ValueError, DriverError) as error:
        if not does_not_fit(error):
            raise
        raise RuntimeError(
            f"The SMs of the created streams are not equal to the input SMs, expected: {a}, {b}: "
            f"device {device} cannot be split into exactly these counts ({error})"
        ) from error
    if (first.sm_count, second.sm_count) != (a, b):
        raise RuntimeError(
            f"The SMs of the created streams are not equal to the input SMs, expected: {a}, {b}, "
            f"got: {first.sm_count}, {second.sm_count}"
        )
    stream_a, stream_b = streams_on(device, [first, second])
    return stream_a, stream_b


def get_sm_available(device_id: int | None = None) -> int:
    """The number of SMs of a device (``None``: PyTorch's current device)."""
    count: int = _C.device_sm_count(resolve_device(device_id))
    return count


def _int(name: str, value: Any) -> int:
    return as_count(name, value)
