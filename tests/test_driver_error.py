"""DriverError: every driver failure is one, with the call, the CUresult and its name."""

import pickle

import torch_green_contexts as tgc
from torch_green_contexts import DriverError

from ._sim import needs_sim, run_on_sim


def test_a_runtime_error_with_the_facts_as_attributes():
    error = DriverError("cuGreenCtxCreate failed: CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION (915): text",
                        "cuGreenCtxCreate", 915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION")
    assert isinstance(error, RuntimeError)
    assert (error.call, error.code, error.name) == ("cuGreenCtxCreate", 915,
                                                   "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION")
    assert str(error).startswith("cuGreenCtxCreate failed")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is DriverError and str(again) == str(error)
    assert (again.call, again.code, again.name) == (error.call, error.code, error.name)
    assert DriverError.__doc__ and tgc.DriverError is DriverError


# tests/sim/test_errors.py: driver failures raise it with the message unchanged. A failed cuInit
# needs a process of its own.
@needs_sim
def test_a_failed_cuinit_is_one_too():
    out = run_on_sim(
        """
        import torch_green_contexts as tgc
        for _ in range(2):
            try:
                tgc._C.device_count()
            except tgc.DriverError as error:
                print(error.call, error.code, error.name)
        """,
        13000, TGC_SIM_FAIL_INIT="100",
    )
    assert out.split("\n")[:2] == ["cuInit 100 CUDA_ERROR_NO_DEVICE"] * 2, out
