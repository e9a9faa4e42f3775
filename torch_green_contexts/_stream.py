"""The torch.cuda.Stream that GreenContext.Stream() hands out."""

from __future__ import annotations

import torch


class GreenContextStream(torch.cuda.Stream):
    """A stream of a green context: a torch.cuda.Stream that keeps its context alive.

    Use it like any custom stream (``with torch.cuda.stream(s):``, events, ``wait_stream``).
    The stream stays valid as long as this object, or the GreenContext, is alive.
    """

    _green_context: object

    def __new__(cls, native_context: object, priority: int = 0) -> "GreenContextStream":
        stream_id, device_index, device_type = native_context.create_stream(priority)  # type: ignore[attr-defined]
        self = super().__new__(
            cls, stream_id=stream_id, device_index=device_index, device_type=device_type
        )
        self._green_context = native_context
        return self
