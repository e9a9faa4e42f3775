"""Stand-ins for what needs PyTorch's CUDA runtime, which no simulated driver satisfies:
torch.cuda.Streams (the native context and its raw stream, for the compat modules' streams) and
the runtime's initialisation, which torch.from_dlpack asks for before it hands out a CUDA tensor
(the tensors over the simulated driver's memory are only looked at)."""

from __future__ import annotations

import itertools
import types
from typing import Any

import torch_green_contexts as tgc

from .controls import sms_of_handle


def stream_of(native: Any) -> types.SimpleNamespace:
    """compat._streams._stream_of's stand-in: the native context and its stream."""
    return types.SimpleNamespace(native=native, handle=native.stream(0)[0])


def stream_at(native: Any, priority: int) -> types.SimpleNamespace:
    """_green_context.new_stream's stand-in: the native context and its stream of `priority`."""
    return types.SimpleNamespace(native=native, handle=native.stream(priority)[0], priority=priority)


def skip_cuda_init() -> None:
    """torch.cuda._lazy_init's stand-in: nothing to initialise."""


def check_streams(streams: list, resources: list, counts: list[int]) -> None:
    """Shapes, counts, one context per stream with those SMs, and no SM in two of them."""
    assert len(streams) == len(resources) == len(counts), (len(streams), len(resources), counts)
    assert [r.sm.smCount for r in resources] == counts, ([r.sm.smCount for r in resources], counts)
    seen = [sms_of_handle(s.native.handle) for s in streams]
    assert [len(s) for s in seen] == counts
    for a, b in itertools.combinations(seen, 2):
        assert not (a & b)
    for s, r in zip(streams, resources):
        assert tgc._C.stream_sm_count(s.handle, 0) == r.sm.smCount
