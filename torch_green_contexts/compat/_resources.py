"""The device and resource objects of the flashinfer.green_ctx API (cuda-python's CUdevice and
CUdevResource there), backed by this package's SMPartition."""

from __future__ import annotations

from .._sm_partition import SMPartition

CU_DEV_RESOURCE_TYPE_INVALID = 0
CU_DEV_RESOURCE_TYPE_SM = 1


class CUdevice:
    """A CUDA device, as ``get_cudevice`` returns it; ``int(cu_dev)`` is its ordinal."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __int__(self) -> int:
        return self.index

    def __index__(self) -> int:
        return self.index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CUdevice) and other.index == self.index

    def __hash__(self) -> int:
        return hash((CUdevice, self.index))

    def __repr__(self) -> str:
        return f"<CUdevice {self.index}>"


class CUdevSmResource:
    """The SM part of a resource, with cuda-python's field names."""

    __slots__ = ("smCount", "minSmPartitionSize", "smCoscheduledAlignment")

    def __init__(self, sm_count: int, min_partition_size: int, coscheduled_alignment: int) -> None:
        self.smCount = sm_count
        self.minSmPartitionSize = min_partition_size
        self.smCoscheduledAlignment = coscheduled_alignment

    def __repr__(self) -> str:
        return f"CUdevSmResource(smCount={self.smCount})"


class CUdevResource:
    """An SM resource as ``flashinfer.green_ctx`` hands them out: ``resource.sm.smCount`` is its
    SM count. Backed by an :class:`~torch_green_contexts.SMPartition` (``sm_partition``, for
    use with this package's own API), which keeps whatever it came from alive. The remainder
    of a split that used every SM is empty: ``type`` 0 (invalid), ``sm.smCount`` 0 and no
    partition, as the driver reports it; no stream can be made of it.
    """

    __slots__ = ("type", "sm", "device_id", "sm_partition")

    def __init__(self, sm_partition: SMPartition | None, device_id: int) -> None:
        self.sm_partition = sm_partition
        self.device_id = device_id
        if sm_partition is None:
            self.type = CU_DEV_RESOURCE_TYPE_INVALID
            self.sm = CUdevSmResource(0, 0, 0)
        else:
            self.type = CU_DEV_RESOURCE_TYPE_SM
            self.sm = CUdevSmResource(sm_partition.sm_count, sm_partition._min_partition_size,
                                      sm_partition.coscheduled_sm_count)

    def __repr__(self) -> str:
        return f"CUdevResource(device_id={self.device_id}, smCount={self.sm.smCount})"
