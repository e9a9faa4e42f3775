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
    with pytest.raises(TypeError, match="stream must be a torch.cuda.Stream or None"):
        tgc.observed_sm_ids(stream)  # checked before the driver is looked for


# tests/sim/test_sm_count.py: the native query. A driver without green contexts, or hiding the
# query, needs a process of its own.
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
            print(type(error).__name__, "needs cuStreamGetGreenCtx, a driver entry point" in str(error))
        """,
        13000, TGC_SIM_HIDE="cuStreamGetGreenCtx",
    )
    assert out.strip() == "RuntimeError True"
