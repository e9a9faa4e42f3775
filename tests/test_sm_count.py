"""sm_count(stream) without a GPU: argument checks, and the native query against the simulated
driver (PyTorch's own streams need a GPU; tests/gpu/test_gpu_compat.py covers those)."""

import inspect

import pytest

import torch_green_contexts as tgc

from ._sim import needs_sim, run_on_sim


def test_signature():
    parameters = [(p.name, p.default) for p in inspect.signature(tgc.sm_count).parameters.values()]
    assert parameters == [("stream", None)]
    assert inspect.signature(tgc.sm_count).return_annotation == "int"
    assert tgc.sm_count.__doc__


@pytest.mark.parametrize("stream", [0, "cuda:0", 12345678, object()])
def test_anything_but_a_stream_is_a_type_error(stream):
    with pytest.raises(TypeError, match="stream must be a torch.cuda.Stream or None"):
        tgc.sm_count(stream)


@needs_sim
@pytest.mark.parametrize("version", [12040, 12050, 13000, 13040])
def test_the_native_query(version):
    out = run_on_sim(
        """
        import gc
        import torch_green_contexts as tgc
        from torch_green_contexts import GreenContext

        def raw(ctx, priority=0):
            return ctx._native.stream(priority)[0]  # the handle is the stream id of an external stream

        small = GreenContext(num_sms=16, device_id=0)
        a, b = GreenContext.split(num_sms=(24, 0), backfill=(False, True), device_id=0)
        assert tgc._C.stream_sm_count(raw(small), 0) == 16
        assert tgc._C.stream_sm_count(raw(small, -1), 0) == 16
        assert (tgc._C.stream_sm_count(raw(a), 0), tgc._C.stream_sm_count(raw(b), 0)) == (24, 108)
        assert tgc._C.stream_sm_count(0, 0) == 132  # the default stream, no context current
        asked = SIM.tgc_sim_calls(b"cuGreenCtxGetDevResource")
        for _ in range(100):
            tgc._C.stream_sm_count(raw(small), 0)
        assert SIM.tgc_sim_calls(b"cuGreenCtxGetDevResource") == asked, "ours are remembered, not asked"
        assert tgc._C.remembered_green_contexts() == 3
        handle = raw(small)
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
        print("ok")
        """,
        version,
    )
    assert out.strip() == "ok"


@needs_sim
def test_a_driver_without_green_contexts_has_only_whole_devices():
    out = run_on_sim(
        """
        import torch_green_contexts as tgc
        print(tgc._C.stream_sm_count(0, 0), tgc._C.stream_sm_count(0x1234, 0), tgc.is_available())
        """,
        12030,
    )
    assert out.strip() == "132 132 False"


@needs_sim
def test_a_driver_hiding_the_query_says_so():
    out = run_on_sim(
        """
        import torch_green_contexts as tgc
        from torch_green_contexts import GreenContext
        ctx = GreenContext(num_sms=8, device_id=0)
        try:
            tgc._C.stream_sm_count(ctx._native.stream(0)[0], 0)
        except RuntimeError as error:
            print(type(error).__name__, "cuStreamGetGreenCtx) needs a driver entry point" in str(error))
        """,
        13000, TGC_SIM_HIDE="cuStreamGetGreenCtx",
    )
    assert out.strip() == "RuntimeError True"
