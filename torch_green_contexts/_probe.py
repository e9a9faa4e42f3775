"""Evidence of isolation: which SMs work on a stream actually runs on."""

from __future__ import annotations

import torch

from ._native import _C

_THREADS = 1024
_SPIN_NS = 20_000


def observed_sm_ids(stream: torch.cuda.Stream | None = None) -> list[int]:
    """Run a probe kernel on ``stream`` and return the sorted ids of the SMs it ran on.

    The probe launches four blocks per SM of the device, each recording its SM id (``%smid``)
    and staying busy for a few microseconds, so the blocks spread over every SM the stream
    can use. ``None`` probes PyTorch's current stream. Blocks until the probe has finished.
    Without a usable CUDA driver, the RuntimeError says so (as every call of the package does).
    """
    if stream is not None and not isinstance(stream, torch.cuda.Stream):
        raise TypeError(f"stream must be a torch.cuda.Stream or None, got {type(stream).__name__}")
    _C.device_count()  # no usable driver: the package's error, before PyTorch's
    if stream is None:
        stream = torch.cuda.current_stream()
    device = stream.device_index
    blocks = 4 * _C.device_sm_count(device)
    with torch.cuda.stream(stream):
        sm_ids = torch.full((blocks,), -1, dtype=torch.int32, device=torch.device("cuda", device))
        _C.launch_sm_probe(stream.cuda_stream, sm_ids.data_ptr(), blocks, _THREADS, _SPIN_NS)
    stream.synchronize()
    ids = set(sm_ids.tolist())
    if -1 in ids:
        raise RuntimeError("the SM probe did not run every block")
    return sorted(ids)
