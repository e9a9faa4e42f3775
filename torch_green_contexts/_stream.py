"""The torch.cuda.Stream that GreenContext.Stream() hands out."""

from __future__ import annotations

from typing import Any

import torch

from ._native import _C

# torch.cuda.Stream.__new__ only forwards a (stream_id, device_index, device_type) triple to
# its compiled base; calling the base directly saves a Python frame on every Stream().
_base: Any = getattr(torch._C, "_CudaStreamBase", None)
_make_stream: Any = (
    _base.__new__ if isinstance(_base, type) and issubclass(torch.cuda.Stream, _base) else None
)


class GreenContextStream(torch.cuda.Stream):
    """A stream of a green context: a torch.cuda.Stream that keeps its context alive.

    Use it like any custom stream (``with torch.cuda.stream(s):``, events, ``wait_stream``).
    The stream stays valid as long as this object, or the GreenContext, is alive.
    """

    _green_context: _C._GreenContext

    @classmethod
    def _of(cls, native_context: _C._GreenContext, priority: int = 0) -> GreenContextStream:
        """A stream of `native_context` at `priority`, from the context's stream pool."""
        stream_id, device_index, device_type = native_context.stream(priority)
        self: GreenContextStream
        if _make_stream is not None:
            self = _make_stream(cls, stream_id=stream_id, device_index=device_index, device_type=device_type)
        else:
            self = torch.cuda.Stream.__new__(  # type: ignore[no-untyped-call]
                cls, stream_id=stream_id, device_index=device_index, device_type=device_type
            )
        self._green_context = native_context
        return self


if _make_stream is not None:
    # GreenContext.Stream() then makes its stream in one native call (_GreenContext.new_stream).
    _C._set_stream_factory(GreenContextStream, _make_stream)
new_stream: Any = _C._GreenContext.new_stream if _make_stream is not None else GreenContextStream._of
