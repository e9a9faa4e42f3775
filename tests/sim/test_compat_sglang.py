"""torch_green_contexts.compat.sglang, sgl_kernel's green-context streams, against the simulated
driver (streams stand in for torch.cuda.Streams; tests/gpu/test_gpu_compat.py runs the real
thing)."""

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import _green_context, _validation
from torch_green_contexts.compat import _streams
from torch_green_contexts.compat import sglang as spatial

from .stand_ins import stream_at, stream_of

pytestmark = pytest.mark.driver_versions(12040, 13000, 13040)


def test_against_the_simulated_driver(monkeypatch, sms_of_handle, raised, assert_nothing_in_use):
    monkeypatch.setattr(_streams, "_stream_of", stream_of)
    assert spatial.get_sm_available(0) == 132
    # The H200 divisions of SGLang's PD multiplexing (prefill, decode), and two that leave SMs unused.
    for a, b in ((112, 20), (104, 28), (96, 36), (80, 52), (64, 68), (56, 76), (16, 16), (64, 32)):
        stream_a, stream_b = spatial.create_greenctx_stream_by_value(a, b, 0)
        sms_a, sms_b = sms_of_handle(stream_a.native.handle), sms_of_handle(stream_b.native.handle)
        assert (len(sms_a), len(sms_b)) == (a, b) and not (sms_a & sms_b), (a, b)
        assert (tgc._C.stream_sm_count(stream_a.handle, 0), tgc._C.stream_sm_count(stream_b.handle, 0)) == (a, b)
    del stream_a, stream_b
    for args, kind, text in (
        ((20, 16, 0), RuntimeError, "The SMs of the created streams are not equal to the input SMs, expected: 20, 16"),
        ((16, 20, 0), RuntimeError, "not equal to the input SMs"),  # 20 is not the rest: not exact
        ((16, 100, 0), RuntimeError, "not equal to the input SMs"),
        ((100, 32, 0), RuntimeError, "nearest counts it can give: 96, 104"),  # the rest goes second
        ((0, 8, 0), RuntimeError, "SM counts must be positive"),
        ((8, -8, 0), RuntimeError, "SM counts must be positive"),
        ((100, 40, 0), RuntimeError, "Not enough SMs available for the requested configuration"),
        ((8.0, 8, 0), TypeError, "SM_a must be an int"),
        ((8, True, 0), TypeError, "SM_b must be an int, not bool"),
        ((8, 8, 3), RuntimeError, "valid device_id: 0..0"),
    ):
        error = raised(lambda: spatial.create_greenctx_stream_by_value(*args))
        assert type(error) is kind and text in str(error), (args, error)
    assert type(raised(lambda: spatial.get_sm_available(2))) is RuntimeError
    for _ in range(50):  # in a loop: nothing leaks
        spatial.create_greenctx_stream_by_value(96, 36, 0)
    assert_nothing_in_use()


def test_overlapped_streams_against_the_simulated_driver(monkeypatch, sms_of_handle, raised,
                                                         assert_nothing_in_use):
    monkeypatch.setattr(_validation, "_priority_range", lambda: (0, -5))
    monkeypatch.setattr(_green_context, "new_stream", stream_at)
    for prefill_floor, decode_floor in ((16, 16), (64, 16), (8, 96)):
        prefill, decode, counts = spatial.create_asymmetric_overlapped_greenctx_stream_by_value(
            prefill_floor, decode_floor, 0)
        sms_p, sms_d = sms_of_handle(prefill.native.handle), sms_of_handle(decode.native.handle)
        shared = 132 - prefill_floor - decode_floor
        assert counts == (prefill_floor + shared, decode_floor + shared, prefill_floor, decode_floor, shared)
        assert (len(sms_p), len(sms_d), len(sms_p & sms_d)) == counts[:2] + (shared,), counts
        assert decode.priority == -5 and prefill.priority == 0, "decode at the highest priority"
    prefill, decode, counts = spatial.create_overlapped_greenctx_stream_by_value(24, 0)
    assert counts == (108, 108, 24, 24, 84)
    del prefill, decode
    for call, kind, text in (
        (lambda: spatial.create_overlapped_greenctx_stream_by_value(12, 0), RuntimeError, "multiples of 8"),
        (lambda: spatial.create_overlapped_greenctx_stream_by_value(0, 0), RuntimeError, "positive"),
        (lambda: spatial.create_overlapped_greenctx_stream_by_value(72, 0), RuntimeError,
         "Not enough SMs available"),
        (lambda: spatial.create_asymmetric_overlapped_greenctx_stream_by_value(8, 8.0, 0), TypeError,
         "decode_reserved_sm must be an int"),
        (lambda: spatial.create_overlapped_greenctx_stream_by_value(8, 3), RuntimeError, "valid device_id"),
    ):
        error = raised(call)
        assert type(error) is kind and text in str(error), error
    for _ in range(50):  # in a loop: nothing leaks
        spatial.create_overlapped_greenctx_stream_by_value(16, 0)
    assert_nothing_in_use()
