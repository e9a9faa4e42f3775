"""sm_count(stream): how many SMs work on a stream can use."""

from __future__ import annotations

import torch

from ._native import _C
from ._stream import GreenContextStream


def sm_count(stream: torch.cuda.Stream | None = None) -> int:
    """The number of SMs that kernels launched on ``stream`` can run on.

    For a stream of a green context (this package's, ``torch.cuda.green_contexts``' or one made
    by any other library) the SMs of that context; for a stream of a regular context the whole
    device's SM count. ``None`` asks about PyTorch's current stream on the current device.

    Cheap enough to call per kernel launch, e.g. to size a persistent kernel's grid to the
    partition it runs on instead of the whole device: a stream from
    :meth:`GreenContext.Stream` answers from its context, any other stream is asked of the
    driver (``cuStreamGetGreenCtx``, which touches no GPU). The driver is asked every time
    rather than caching by stream handle, because a destroyed stream's handle can be handed
    out again for a stream of another context.
    """
    if stream is None:
        try:
            count: int = _C.current_stream_sm_count()
        except Exception:
            if _C.installed_driver_version() == 0:
                _C.device_count()  # no driver: its error, not PyTorch's
            raise
        return count
    if isinstance(stream, GreenContextStream):
        return stream._green_context.sm_count
    if not isinstance(stream, torch.cuda.Stream):
        raise TypeError(f"stream must be a torch.cuda.Stream or None, got {type(stream).__name__}")
    count = _C.stream_sm_count(stream.cuda_stream, stream.device_index)
    return count
