"""Green contexts and one stream each, for SM partitions: how the compat modules make streams."""

from __future__ import annotations

from typing import Sequence

import torch

from .._native import _C
from .._sm_partition import SMPartition
from .._stream import new_stream


def _stream_of(native: _C._GreenContext) -> torch.cuda.Stream:
    """A stream of the context (priority 0); it keeps the context alive."""
    return new_stream(native, 0)


def streams_on(device: int, partitions: Sequence[SMPartition]) -> list[torch.cuda.Stream]:
    """One new green context per partition, made together (idle contexts of the same SMs are
    taken first), and a stream of each. Either every context is made or none is kept."""
    natives = _C._GreenContext.create_all(device, SMPartition._natives(partitions), None, None)
    return [_stream_of(native) for native in natives]
