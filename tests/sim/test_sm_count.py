"""The native SM-count query of a stream against the simulated driver: ours are remembered, not
asked, until their contexts are destroyed; a failed query is a DriverError."""

import gc

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext


def _raw(ctx, priority=0):
    return ctx._native.stream(priority)[0]  # the handle is the stream id of an external stream


@pytest.mark.driver_versions(12040, 12050, 13000, 13040)
def test_the_native_query(calls, live, fail_next):
    small = GreenContext(num_sms=16, device_id=0)
    a, b = GreenContext.split(num_sms=(24, 0), backfill=(False, True), device_id=0)
    assert tgc._C.stream_sm_count(_raw(small), 0) == 16
    assert tgc._C.stream_sm_count(_raw(small, -1), 0) == 16
    assert (tgc._C.stream_sm_count(_raw(a), 0), tgc._C.stream_sm_count(_raw(b), 0)) == (24, 108)
    assert tgc._C.stream_sm_count(0, 0) == 132  # the default stream, no context current
    asked = calls("cuGreenCtxGetDevResource")
    for _ in range(100):
        tgc._C.stream_sm_count(_raw(small), 0)
    assert calls("cuGreenCtxGetDevResource") == asked, "ours are remembered, not asked"
    assert tgc._C.remembered_green_contexts() == 3
    handle = _raw(small)
    del small, a, b
    gc.collect()
    assert tgc._C.remembered_green_contexts() == 3  # idle, kept for reuse: still alive
    assert tgc._C.stream_sm_count(handle, 0) == 16
    tgc.release_idle_contexts()
    assert tgc._C.remembered_green_contexts() == 0 and live("green_ctx") == 0
    fail_next("cuStreamGetGreenCtx", 400)
    try:
        tgc._C.stream_sm_count(handle, 0)
    except tgc.DriverError as error:
        assert error.call == "cuStreamGetGreenCtx" and error.name == "CUDA_ERROR_INVALID_HANDLE"
    else:
        raise AssertionError("no DriverError")
