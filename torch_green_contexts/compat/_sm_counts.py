"""SM counts as flashinfer.green_ctx rounds them."""

from __future__ import annotations

from .. import _validation
from .._native import _C
from .._sm_partition import SMPartition

# What flashinfer.green_ctx's callers find in its error for a request that does not fit (they
# match on it): the driver's error as cuda-python words it.
FLASHINFER_DRIVER_ERROR = "CUDA error code=915(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)"


def sm_count_constraint(major: int, minor: int) -> tuple[int, int]:
    """(minimum SMs, alignment) of a group on compute capability ``major.minor``, as the CUDA
    documentation of cuDevSmResourceSplitByCount gives them. ``major`` and ``minor`` are ints
    (TypeError otherwise), 0 or more (ValueError otherwise); ValueError before 6.0."""
    major = _validation.as_count("major", major, "an int (of compute capability 9.0: 9)")
    minor = _validation.as_count("minor", minor, "an int (of compute capability 9.0: 0)")
    if major < 0 or minor < 0:
        raise ValueError(f"major and minor must be 0 or more (a compute capability), got {major}.{minor}")
    if major == 6:
        return (1, 1)
    if major == 7:
        return (2, 2)
    if major == 8:
        return (4, 2)
    if major >= 9:
        return (8, 8)
    raise ValueError(f"Unsupported CUDA capability: {major}.{minor} (the constraints are known for "
                     f"compute capability 6.0 and newer)")


def device_constraint(device: int) -> tuple[int, int]:
    """(minimum SMs, alignment) of a group on ``device`` at its default co-scheduling: the
    documented minimum for its compute capability (or the larger minimum the driver reports,
    13.0+), and the co-scheduling alignment the driver reports for the whole device (drivers
    before 13.0 do not: then the architecture's)."""
    table_minimum, table_alignment = sm_count_constraint(*_C.compute_capability(device))
    whole = SMPartition.from_device(device)
    return max(table_minimum, whole._min_partition_size), whole.coscheduled_sm_count or table_alignment


def round_up(count: int, minimum: int, alignment: int) -> int:
    """``count`` raised to ``minimum``, then up to a multiple of ``alignment``."""
    count = max(count, minimum)
    return -(-count // alignment) * alignment
