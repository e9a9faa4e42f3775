"""``flashinfer.green_ctx`` on torch_green_contexts, without cuda-python.

Replace ``import flashinfer.green_ctx as green_ctx`` with
``import torch_green_contexts.compat.flashinfer as green_ctx``; the functions, their
parameters and what they return are FlashInfer's::

    streams, resources = green_ctx.split_device_green_ctx_by_sm_count(torch.device("cuda:0"), [8, 16, 24])
    print([r.sm.smCount for r in resources])   # [8, 16, 24, 84] on an H200: the rest comes last
    with torch.cuda.stream(streams[0]):
        z = x @ y                              # on the first 8 SMs

Counts are rounded up as FlashInfer rounds them (to the device's minimum group size and
alignment, read from the driver; 8 and 8 on Hopper and Blackwell), and a request that does not
fit raises a RuntimeError whose message starts with "Insufficient SMs" and names the driver
error FlashInfer's callers look for. Beyond FlashInfer's:

- the groups of one call (and its remainder) never share SMs, whatever the driver version;
- a stream keeps its green context alive, and a dropped stream's context is kept idle for
  reuse, so calling these in a loop leaks nothing (FlashInfer never destroys its contexts);
- a resource that is itself a split's output can be split again (through a green context made
  of it, as ``split_resource_by_sm_count`` does in FlashInfer).

On devices with several locality domains (driver 13.4+), ``split_device_green_ctx_by_locality_domain``
gives a stream per domain and ``empty_per_locality_domain`` memory placed per domain; on other
drivers they raise :class:`~torch_green_contexts.FeatureUnavailableError`.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import _device, _validation
from .._errors import SplitError
from .._green_context import GreenContext
from .._native import _C
from .._sm_partition import SMPartition
from . import _sm_counts, _streams
from ._devices import check_cuda_device as _check_cuda_device
from ._locality_domains import empty_per_locality_domain, split_device_green_ctx_by_locality_domain
from ._resources import CUdevice, CUdevResource, CUdevSmResource

__all__ = [
    "CUdevice",
    "CUdevResource",
    "CUdevSmResource",
    "create_green_ctx_streams",
    "empty_per_locality_domain",
    "get_compute_capability",
    "get_cudevice",
    "get_device_resource",
    "get_sm_count_constraint",
    "split_device_green_ctx",
    "split_device_green_ctx_by_locality_domain",
    "split_device_green_ctx_by_sm_count",
    "split_resource",
    "split_resource_by_sm_count",
]

# What FlashInfer's callers find for a resource no context can be made of (an empty remainder).
_EMPTY_RESOURCE_ERROR = "CUDA error code=914(CUDA_ERROR_INVALID_RESOURCE_TYPE)"


def get_compute_capability(device: torch.device) -> tuple[int, int]:
    """The compute capability ``(major, minor)`` of a CUDA ``torch.device`` (its index ``None``:
    the current device); ValueError for another kind of device."""
    if not isinstance(device, torch.device):
        raise TypeError(f"device must be a torch.device, got {type(device).__name__}")
    if device.type != "cuda":
        raise ValueError("device must be a cuda device")
    major, minor = _C.compute_capability(_device.resolve_device(device.index))
    return major, minor


def get_sm_count_constraint(major: int, minor: int) -> tuple[int, int]:
    """``(minimum, alignment)`` of a group's SM count on compute capability ``major.minor``:
    6.x (1, 1), 7.x (2, 2), 8.x (4, 2), 9.0 and newer (8, 8); ValueError before 6.0."""
    return _sm_counts.sm_count_constraint(major, minor)


def get_cudevice(dev: torch.device) -> CUdevice:
    """The CUDA device of a CUDA ``torch.device`` (index ``None``: the current device), checked
    against the devices the driver sees (RuntimeError when out of range)."""
    _check_cuda_device(dev)
    return CUdevice(_device.resolve_device(dev.index))


def get_device_resource(cu_dev: CUdevice) -> CUdevResource:
    """All SMs of the device, as a resource to split."""
    device = _device_of(cu_dev)
    return CUdevResource(SMPartition.from_device(device), device)


def split_resource(resource: CUdevResource, num_groups: int, min_count: int) -> tuple[list[CUdevResource], CUdevResource]:
    """Split ``resource`` into ``num_groups`` disjoint groups of ``min_count`` SMs each, rounded
    up to the device's minimum and alignment, and the rest.

    Returns ``(groups, remaining)``; ``remaining`` is empty (``sm.smCount`` 0) when the groups
    take every SM. A single group larger than the resource once rounded (but not before) takes
    the whole resource, as the driver gives it. Groups that do not fit raise RuntimeError
    ("Insufficient SMs ...").
    """
    partition = _partition_of("resource", resource)
    groups = _validation.as_int_at_least("num_groups", num_groups, 1)
    count = _validation.as_int_at_least("min_count", min_count, 0)
    minimum, alignment = _sm_counts.device_constraint(resource.device_id)
    size = _sm_counts.round_up(count, minimum, alignment)
    partition = _splittable(partition)
    total = partition.sm_count
    request = (f"{groups} group{'' if groups == 1 else 's'} of {size} SMs (min_count={count} rounded up "
               f"to the device's minimum of {minimum} and a multiple of {alignment})")
    if groups == 1 and size > total >= count:
        return _split(partition, [0], [True], request)  # the driver's answer: all of it
    if groups * size > total:
        raise _insufficient(request, partition, f"{groups * size} SMs asked")
    return _split(partition, [size] * groups, [False] * groups, request)


def split_resource_by_sm_count(
    cu_dev: CUdevice, resource: CUdevResource, sm_counts: list[int]
) -> tuple[list[CUdevResource], CUdevResource]:
    """Split ``resource`` into disjoint groups of ``sm_counts`` SMs, each rounded up to the
    device's minimum and alignment, and the rest, in one split.

    Returns ``(groups, remaining)``; ``remaining`` is empty (``sm.smCount`` 0) when the groups
    take every SM, and ``resource`` itself when ``sm_counts`` is empty. Groups that do not fit
    raise RuntimeError ("Insufficient SMs ...").
    """
    device = _device_of(cu_dev)
    partition = _partition_of("resource", resource)
    if resource.device_id != device:
        raise ValueError(f"resource belongs to device {resource.device_id}, not to cu_dev (device {device})")
    counts = [_validation.as_int_at_least("sm_counts entries", c, 0) for c in _validation.as_sequence("sm_counts", sm_counts, "a list")]
    if not counts:
        return [], resource
    minimum, alignment = _sm_counts.device_constraint(device)
    sizes = [_sm_counts.round_up(c, minimum, alignment) for c in counts]
    partition = _splittable(partition)
    request = (f"groups of {sizes} SMs (sm_counts {counts} rounded up to the device's minimum of {minimum} "
               f"and a multiple of {alignment})")
    if sum(sizes) > partition.sm_count:
        raise _insufficient(request, partition, f"{sum(sizes)} SMs asked")
    return _split(partition, sizes, [False] * len(sizes), request)


def create_green_ctx_streams(cu_dev: CUdevice, resources: list[CUdevResource]) -> list[torch.cuda.Stream]:
    """A green context of each resource and a stream of it, in order.

    The streams are ``torch.cuda.Stream`` objects that keep their contexts alive; a dropped stream's
    context is kept idle and reused for the same SMs. Every resource is checked before any
    context is made; an empty one (the remainder of a split that used every SM) raises
    RuntimeError ("Insufficient SMs ...").
    """
    device = _device_of(cu_dev)
    partitions = []
    for i, resource in enumerate(_validation.as_sequence("resources", resources, "a list")):
        partition = _partition_of(f"resources[{i}]", resource, allow_empty=True)
        if resource.device_id != device:
            raise ValueError(f"resources[{i}] belongs to device {resource.device_id}, not to cu_dev (device {device})")
        if partition is None:
            raise RuntimeError(
                f"Insufficient SMs: resources[{i}] is empty (the remainder of a split that used every SM "
                f"of device {device}), and no green context can be made of no SMs. Please reduce the "
                f"number of groups or the SM counts, so that SMs remain. ({_EMPTY_RESOURCE_ERROR}, as "
                f"flashinfer.green_ctx reports it)"
            )
        partitions.append(partition)
    return _streams.streams_on(device, partitions)


def split_device_green_ctx(
    dev: torch.device, num_groups: int, min_count: int
) -> tuple[list[torch.cuda.Stream], list[CUdevResource]]:
    """Split a device into ``num_groups`` disjoint groups of at least ``min_count`` SMs (rounded
    up to the device's minimum and alignment) and the rest, with a green context and a stream
    of each.

    Returns ``(streams, resources)``, ``num_groups + 1`` of each, the remaining SMs last; the
    SMs of each are ``resources[i].sm.smCount``. A request that does not fit, or that leaves no
    SM for the remainder, raises RuntimeError ("Insufficient SMs ...").

    >>> streams, resources = split_device_green_ctx(torch.device("cuda:0"), 2, 16)
    >>> [r.sm.smCount for r in resources]      # an H200
    [16, 16, 100]
    """
    _check_cuda_device(dev)  # the arguments first: their checks need no device
    _validation.as_int_at_least("num_groups", num_groups, 1)
    _validation.as_int_at_least("min_count", min_count, 0)
    cu_dev = get_cudevice(dev)
    results, remaining = split_resource(get_device_resource(cu_dev), num_groups, min_count)
    _check_remainder(remaining, f"{num_groups} group{'' if num_groups == 1 else 's'} of min_count={min_count}")
    resources = results + [remaining]
    return create_green_ctx_streams(cu_dev, resources), resources


def split_device_green_ctx_by_sm_count(
    dev: torch.device, sm_counts: list[int]
) -> tuple[list[torch.cuda.Stream], list[CUdevResource]]:
    """Split a device into disjoint groups of ``sm_counts`` SMs (each rounded up to the device's
    minimum and alignment) and the rest, with a green context and a stream of each.

    Returns ``(streams, resources)``, ``len(sm_counts) + 1`` of each, the remaining SMs last.
    A count of 0 or less is a ValueError; a request that does not fit, or that leaves no SM for
    the remainder, raises RuntimeError ("Insufficient SMs ...").

    >>> streams, resources = split_device_green_ctx_by_sm_count(torch.device("cuda:0"), [8, 16, 24])
    >>> [r.sm.smCount for r in resources]      # an H200
    [8, 16, 24, 84]
    """
    _check_cuda_device(dev)  # the arguments first: their checks need no device
    counts = _validation.as_sequence("sm_counts", sm_counts, "a list")
    for count in counts:
        if _validation.as_count("sm_counts entries", count) <= 0:
            raise ValueError(f"SM count must be positive, got {count}")
    cu_dev = get_cudevice(dev)
    resource = get_device_resource(cu_dev)
    results, remaining = split_resource_by_sm_count(cu_dev, resource, counts)
    _check_remainder(remaining, f"SM counts {list(counts)}")
    resources = results + [remaining]
    return create_green_ctx_streams(cu_dev, resources), resources


# ---- checks and errors ---------------------------------------------------------------------


def _device_of(cu_dev: Any) -> int:
    """The device ordinal of a CUdevice (or a plain int, as cuda-python accepts), checked."""
    if isinstance(cu_dev, CUdevice):
        return _device.resolve_device(cu_dev.index)
    if _validation.is_int(cu_dev):
        return _device.resolve_device(cu_dev)
    raise TypeError(f"cu_dev must be a CUdevice (from get_cudevice), got {type(cu_dev).__name__}")


def _partition_of(name: str, resource: Any, allow_empty: bool = False) -> Any:
    if not isinstance(resource, CUdevResource):
        raise TypeError(f"{name} must be a CUdevResource (from get_device_resource or a split), "
                        f"got {type(resource).__name__}")
    if resource.sm_partition is None and not allow_empty:
        raise ValueError(f"{name} is empty (the remainder of a split that used every SM): nothing to split")
    return resource.sm_partition


def _splittable(partition: SMPartition) -> SMPartition:
    """``partition``, or the same SMs as a green context's resource when the driver refuses to
    split it (a split's output); the context lives as long as that resource."""
    if partition._splittable:
        return partition
    return GreenContext(sm_partition=partition).sm_partition


def _split(partition: SMPartition, sizes: list[int], backfill: list[bool],
           request: str) -> tuple[list[CUdevResource], CUdevResource]:
    try:
        groups, rest = partition.split(num_sms=sizes, backfill=backfill)
    except SplitError as error:
        raise _insufficient(request, partition, str(error)) from error
    device = partition.device_id
    return [CUdevResource(g, device) for g in groups], CUdevResource(rest, device)


def _insufficient(request: str, partition: SMPartition, reason: str) -> RuntimeError:
    return RuntimeError(
        f"Insufficient SMs: {request} cannot be made of the {partition.sm_count} SMs of device "
        f"{partition.device_id} ({reason}). Please reduce the number of groups or the SM counts. "
        f"({_sm_counts.FLASHINFER_DRIVER_ERROR}, as flashinfer.green_ctx reports it)"
    )


def _check_remainder(remaining: CUdevResource, request: str) -> None:
    if remaining.sm_partition is None:
        raise RuntimeError(
            f"Insufficient SMs: {request} would leave no SM of device {remaining.device_id} for the "
            f"remainder, which is always returned last. Please reduce the number of groups or the SM "
            f"counts. ({_EMPTY_RESOURCE_ERROR}, as flashinfer.green_ctx reports it)"
        )
