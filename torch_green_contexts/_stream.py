"""The torch.cuda.Stream that GreenContext.Stream() hands out, and the one constructor of it."""

from __future__ import annotations

from typing import Callable

import torch

from ._native import _C


class GreenContextStream(torch.cuda.Stream):
    """A stream of a green context: a torch.cuda.Stream that keeps its context alive.

    Use it like any custom stream (``with torch.cuda.stream(s):``, events, ``wait_stream``).
    The stream stays valid as long as this object, or the GreenContext, is alive.
    """

    _green_context: _C._GreenContext


# torch.cuda.Stream.__new__ only forwards (priority, stream_id, device_index, device_type) to its
# compiled base (torch 2.6 to 2.15 alike): the core calls that base directly, so that a stream
# is made in one native call, for GreenContext.Stream(), set_context() and the compat modules.
_C._set_stream_factory(GreenContextStream, torch._C._CudaStreamBase.__new__)


# A stream of a context at a priority, from the context's stream pool: the binding itself, one
# native call with no Python frame around it.
new_stream: Callable[[_C._GreenContext, int], GreenContextStream] = _C._GreenContext.new_stream
