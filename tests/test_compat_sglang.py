"""torch_green_contexts.compat.sglang: sgl_kernel's green-context streams. Without a GPU: the
signatures here, the calls against the simulated driver in tests/sim/test_compat_sglang.py
(streams stand in for torch.cuda.Streams; tests/gpu/test_gpu_compat.py runs the real thing)."""

import inspect

from torch_green_contexts.compat import sglang as spatial

POS = inspect.Parameter.POSITIONAL_OR_KEYWORD


def test_signatures_are_sgl_kernels():
    def params(function):
        return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]

    empty = inspect.Parameter.empty
    assert params(spatial.create_greenctx_stream_by_value) == [("SM_a", POS, empty), ("SM_b", POS, empty),
                                                               ("device_id", POS, None)]
    assert params(spatial.get_sm_available) == [("device_id", POS, None)]
    assert spatial.create_greenctx_stream_by_value.__doc__ and spatial.get_sm_available.__doc__


def test_overlapped_signatures_are_sgl_kernels():
    def params(function):
        return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]

    empty = inspect.Parameter.empty
    assert params(spatial.create_overlapped_greenctx_stream_by_value) == [
        ("reserved_sm", POS, empty), ("device_id", POS, None)]
    assert params(spatial.create_asymmetric_overlapped_greenctx_stream_by_value) == [
        ("prefill_reserved_sm", POS, empty), ("decode_reserved_sm", POS, empty), ("device_id", POS, None)]
