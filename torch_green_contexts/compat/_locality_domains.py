"""flashinfer.green_ctx's functions for devices with several locality domains (driver 13.4+):
a green context and a stream per domain, and memory placed per domain."""

from __future__ import annotations

import math
import sys
from typing import Any

import torch
from torch.utils.dlpack import from_dlpack

from .. import _validation
from .._errors import SplitError
from .._native import _C
from .._sm_partition import SMPartition
from . import _sm_counts, _streams
from ._devices import check_cuda_device, cuda_device
from ._resources import CUdevResource


def split_device_green_ctx_by_locality_domain(
    dev: torch.device, backfill: bool = True
) -> tuple[list[torch.cuda.Stream], list[CUdevResource]]:
    """A green context of each locality domain of ``dev``, in domain order, and a stream of
    each: work launched on stream ``i`` runs on domain ``i``'s SMs only, so that with memory of
    that domain (:func:`empty_per_locality_domain`) it stays in the domain.

    ``backfill=True`` (the default) asks for ``sm_count // domains`` SMs per domain, which the
    driver fills with the domain's SMs first, then SMs of no domain (and, where those run out,
    of other domains); ``backfill=False`` gives each group the SMs of its domain only, as many
    as the driver groups. Returns ``(streams, resources)``, one of each per domain
    (``resources[i].sm.smCount`` SMs); SMs outside every group are left out.

    Needs CUDA driver 13.4 or newer (:class:`~torch_green_contexts.FeatureUnavailableError`
    naming the feature, the driver needed and the driver found) and a device of at least two
    locality domains (RuntimeError). ``dev`` is a CUDA ``torch.device`` (TypeError, ValueError),
    ``backfill`` a bool (TypeError). Groups the driver cannot give raise RuntimeError
    ("Insufficient SMs ...").
    """
    check_cuda_device(dev)  # the arguments first: their checks need no device
    backfill = _validation.as_bool("backfill", backfill)
    device = cuda_device(dev)
    domains = _domain_count(device, "split_device_green_ctx_by_locality_domain")
    whole = SMPartition.from_device(device)
    each = whole.sm_count // domains if backfill else 0
    try:
        groups, _ = whole.split(num_sms=[each] * domains, backfill=backfill,
                                locality_domain_ids=list(range(domains)))
    except SplitError as error:
        raise RuntimeError(
            f"Insufficient SMs: one group per locality domain of device {device} "
            f"({'backfilled to ' + str(each) + ' SMs each' if backfill else 'each its own SMs'}) cannot be "
            f"made of its {whole.sm_count} SMs ({error}). ({_sm_counts.FLASHINFER_DRIVER_ERROR}, as "
            f"flashinfer.green_ctx reports it)"
        ) from error
    return _streams.streams_on(device, groups), [CUdevResource(group, device) for group in groups]


def empty_per_locality_domain(part_shape: tuple[int, ...], dtype: torch.dtype, dev: torch.device) -> torch.Tensor:
    """An uninitialised tensor of shape ``[domains, *part_shape]`` and ``dtype`` on ``dev``
    whose part ``i`` lives in locality domain ``i``'s memory: one virtual address range over
    one physical allocation per domain. Each part is contiguous; the stride of dimension 0 is
    the part's size rounded up to the allocation granularity the driver reports.

    The memory comes from the CUDA driver (``cuMemCreate`` and ``cuMemMap``), not from PyTorch's
    caching allocator: it does not count in ``torch.cuda.memory_allocated()`` and no other
    tensor reuses it. It is freed once the tensor and all its views are, after the device's
    work is waited for; when that happens during a CUDA graph capture (which forbids the wait),
    at the next such allocation or release outside the capture.

    Needs CUDA driver 13.4 or newer (:class:`~torch_green_contexts.FeatureUnavailableError`)
    and a device of at least two locality domains (RuntimeError). ``part_shape`` is a sequence
    of ints of 0 or more, ``dtype`` a ``torch.dtype``, ``dev`` a CUDA ``torch.device``
    (TypeError or ValueError otherwise).
    """
    shape = _part_shape(part_shape)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__} ({dtype!r})")
    check_cuda_device(dev)
    itemsize = dtype.itemsize
    part_bytes = math.prod(shape) * itemsize
    if part_bytes > sys.maxsize:
        raise ValueError(f"part_shape {tuple(shape)} of {dtype} is {part_bytes} bytes, more than one address "
                         f"range holds")
    device = cuda_device(dev)
    _domain_count(device, "empty_per_locality_domain")
    memory = _C._LocalizedMemory(device, part_bytes)
    # The memory's bytes, [domains, stride] uint8, as one tensor that holds the memory; every
    # part's stride is a multiple of the allocation granularity, so of any element size.
    raw = from_dlpack(_C.bytes_capsule(memory))
    strides = [math.prod(max(n, 1) for n in shape[i + 1:]) for i in range(len(shape))]  # as torch.empty's
    return raw.view(dtype).as_strided([memory.domains, *shape], [memory.stride // itemsize, *strides])


def _part_shape(part_shape: Any) -> list[int]:
    entries = _validation.as_sequence("part_shape", part_shape, "a tuple of ints")
    shape = [_validation.as_int_at_least("part_shape entries", n, 0) for n in entries]
    for n in shape:
        if n > sys.maxsize:
            raise ValueError(f"part_shape entries must be below 2**63, got {n}")
    return shape


def _domain_count(device: int, call: str) -> int:
    """The locality domains of ``device``: FeatureUnavailableError before driver 13.4,
    RuntimeError for fewer than two."""
    domains: int = _C.locality_domain_count(device)
    if domains < 2:
        raise RuntimeError(f"{call} needs a device with at least two locality domains; device {device} has "
                           f"{domains}")
    return domains
