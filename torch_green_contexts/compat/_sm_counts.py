"""SM counts as flashinfer.green_ctx rounds them, and which split errors mean "does not fit"."""

from __future__ import annotations

from .._errors import DriverError
from .._native import _C
from .._sm_partition import SMPartition

# The driver's answers to a request that the SMs cannot satisfy.
_DOES_NOT_FIT = ("CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "CUDA_ERROR_INVALID_RESOURCE_TYPE")

# What flashinfer.green_ctx's callers find in its error for a request that does not fit (they
# match on it): the driver's error as cuda-python words it.
FLASHINFER_DRIVER_ERROR = "CUDA error code=915(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)"


def sm_count_constraint(major: int, minor: int) -> tuple[int, int]:
    """(minimum SMs, alignment) of a group on compute capability ``major.minor``, as the CUDA
    documentation of cuDevSmResourceSplitByCount gives them; ValueError before 6.0."""
    if major == 6:
        return (1, 1)
    if major == 7:
        return (2, 2)
    if major == 8:
        return (4, 2)
    if major >= 9:
        return (8, 8)
    raise ValueError(f"Unsupported CUDA capability: {major}.{minor}")


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


def does_not_fit(error: Exception) -> bool:
    """Whether an error of SMPartition.split means the SMs cannot satisfy the request: the
    emulated split's ValueError (counts it cannot give exactly), the driver refusing the
    resource configuration, or cuDevSmResourceSplit refusing a count that is not a multiple of
    the co-scheduling alignment (CUDA_ERROR_INVALID_VALUE: the only value the compat modules
    leave to the driver is the count). Called only after the arguments were checked."""
    if isinstance(error, DriverError):
        return error.name in _DOES_NOT_FIT or (
            error.call == "cuDevSmResourceSplit" and error.name == "CUDA_ERROR_INVALID_VALUE")
    return isinstance(error, ValueError)
