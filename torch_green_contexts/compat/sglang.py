"""SGLang's green-context streams (``sgl_kernel``'s ``spatial`` module, used by its
prefill/decode multiplexing) on torch_green_contexts, without building sgl_kernel.

Replace ``from sgl_kernel import spatial`` with
``from torch_green_contexts.compat import sglang as spatial``::

    total = spatial.get_sm_available(gpu_id)                             # 132 on an H200
    prefill, decode = spatial.create_greenctx_stream_by_value(104, total - 104, gpu_id)  # decode: the rest

Beyond the original: the two partitions come from one split (disjoint on every driver), a
stream keeps its green context alive, and contexts whose streams are dropped are reused.

The overlapped ("protected") variants give prefill and decode each a floor of SMs the other
never runs on and let both use the rest, with the decode stream at the highest priority::

    prefill, decode, counts = spatial.create_overlapped_greenctx_stream_by_value(16, gpu_id)
    prefill_sms, decode_sms, prefill_only, decode_only, shared = counts
"""

from __future__ import annotations

import torch

from .. import _device, _layout_build, _validation
from .._errors import SplitError
from .._native import _C
from .._sm_partition import SMPartition
from . import _streams

__all__ = [
    "create_asymmetric_overlapped_greenctx_stream_by_value", "create_greenctx_stream_by_value",
    "create_overlapped_greenctx_stream_by_value", "get_sm_available",
]


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
    a, b = _validation.as_count("SM_a", SM_a), _validation.as_count("SM_b", SM_b)
    if a <= 0 or b <= 0:
        raise RuntimeError(f"SM counts must be positive, got SM_a={a}, SM_b={b}")
    device = _device.resolve_device(device_id)
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
    except SplitError as error:
        raise RuntimeError(
            f"The SMs of the created streams are not equal to the input SMs, expected: {a}, {b}: "
            f"device {device} cannot be split into exactly these counts ({error})"
        ) from error
    if (first.sm_count, second.sm_count) != (a, b):
        raise RuntimeError(
            f"The SMs of the created streams are not equal to the input SMs, expected: {a}, {b}, "
            f"got: {first.sm_count}, {second.sm_count}"
        )
    stream_a, stream_b = _streams.streams_on(device, [first, second])
    return stream_a, stream_b


def create_overlapped_greenctx_stream_by_value(
    reserved_sm: int, device_id: int | None = None
) -> tuple[torch.cuda.Stream, torch.cuda.Stream, tuple[int, int, int, int, int]]:
    """A prefill and a decode stream on overlapped partitions: ``reserved_sm`` SMs only prefill
    runs on, ``reserved_sm`` only decode runs on, and the rest of the device shared by both.
    Returns ``(prefill_stream, decode_stream, (prefill, decode, prefill_only, decode_only,
    shared))``, the SM counts the driver gave; see
    :func:`create_asymmetric_overlapped_greenctx_stream_by_value`."""
    count = _validation.as_count("reserved_sm", reserved_sm)
    return create_asymmetric_overlapped_greenctx_stream_by_value(count, count, device_id)


def create_asymmetric_overlapped_greenctx_stream_by_value(
    prefill_reserved_sm: int, decode_reserved_sm: int, device_id: int | None = None
) -> tuple[torch.cuda.Stream, torch.cuda.Stream, tuple[int, int, int, int, int]]:
    """A prefill and a decode stream on overlapped partitions of a device (``None``: PyTorch's
    current device): ``prefill_reserved_sm`` SMs only prefill runs on, ``decode_reserved_sm``
    only decode runs on, and the rest shared by both; the decode stream has the highest
    priority, so decode takes shared SMs as they free up.

    Returns ``(prefill_stream, decode_stream, (prefill, decode, prefill_only, decode_only,
    shared))``: each side's SMs (its floor and the shared ones) and the three pieces, as the
    driver gave them. The floors must be positive multiples of the device's smallest partition
    (8 SMs on Hopper) and leave SMs to share, else a RuntimeError naming the allowed counts; the
    counts are exact, never rounded. The streams keep their contexts alive, and contexts whose
    streams are dropped are reused, so calling this in a loop leaks nothing.
    """
    prefill_floor = _validation.as_count("prefill_reserved_sm", prefill_reserved_sm)
    decode_floor = _validation.as_count("decode_reserved_sm", decode_reserved_sm)
    if (prefill_floor <= 0 or decode_floor <= 0) and _validation.device_unreadable(device_id):
        # Not positive on any device. With a device to read, the check below names it with the
        # device's smallest partition; without one (no driver), it is named here.
        raise RuntimeError(
            f"reserved SM counts must be positive multiples of the smallest partition of the device, "
            f"got prefill_reserved_sm={prefill_floor}, decode_reserved_sm={decode_floor}")
    device = _device.resolve_device(device_id)
    step, total = _layout_build.granularity(device), _C.device_sm_count(device)
    if prefill_floor <= 0 or decode_floor <= 0 or prefill_floor % step or decode_floor % step:
        raise RuntimeError(
            f"reserved SM counts must be positive multiples of {step} (the smallest partition of device "
            f"{device}), got prefill_reserved_sm={prefill_floor}, decode_reserved_sm={decode_floor}")
    if prefill_floor + decode_floor >= total:
        raise RuntimeError(
            f"Not enough SMs available for the requested configuration: the reserved SMs "
            f"({prefill_floor} + {decode_floor}) take all {total} SMs of device {device}; at most "
            f"{(total - 1) // step * step} may be reserved so that some are shared")
    try:
        layout = _layout_build.make_overlapped(decode_floor, prefill_floor, step, device,
                                               _validation.highest_priority())
    except SplitError as error:
        raise RuntimeError(f"device {device} cannot be split into floors of {prefill_floor} and "
                           f"{decode_floor} SMs and a shared rest: {error}") from error
    counts = (layout.batch_sm_count, layout.sm_count, layout.batch_floor, layout.latency_floor,
              layout.shared_sm_count)
    return layout.batch_stream, layout.latency_stream, counts


def get_sm_available(device_id: int | None = None) -> int:
    """The number of SMs of a device (``None``: PyTorch's current device)."""
    count: int = _C.device_sm_count(_device.resolve_device(device_id))
    return count
