"""DriverError: every driver failure is one, with the call, the CUresult and its name."""

import pickle

import pytest

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


@needs_sim
@pytest.mark.parametrize("version", [12040, 13000, 13040])
def test_driver_failures_raise_it_with_the_message_unchanged(version):
    run_on_sim(
        """
        import pickle
        import torch_green_contexts as tgc
        from torch_green_contexts import DriverError, GreenContext, SMPartition


        # A failing driver call: the attributes, and the message as the core words it.
        for name, code, call in (
            ("cuDeviceGetDevResource", 915, lambda: SMPartition.from_device(0)),
            ("cuGreenCtxCreate", 2, lambda: GreenContext(num_sms=8, device_id=0)),
            ("cuDeviceGetAttribute", 101, lambda: tgc._C.compute_capability(0)),
        ):
            fail_next(name, code)
            error = raised(call)
            assert type(error) is DriverError, (type(error), error)
            assert error.call == name and error.code == code, (error.call, error.code)
            spelled = {915: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", 2: "CUDA_ERROR_OUT_OF_MEMORY",
                       101: "CUDA_ERROR_INVALID_DEVICE"}[code]
            assert error.name == spelled
            assert str(error) == f"{name} failed: {spelled} ({code}): simulated driver: {spelled}", str(error)
            assert isinstance(error, RuntimeError)
        # A code the driver cannot name keeps a name that says so.
        fail_next("cuGreenCtxCreate", 12345)
        error = raised(lambda: GreenContext(num_sms=8, device_id=0))
        assert error.name == "CUDA_ERROR_UNKNOWN_CODE_12345" and error.code == 12345
        # What is not a driver failure keeps its type.
        error = raised(lambda: GreenContext(num_sms=8, device_id=5))
        assert type(error) is RuntimeError and "valid device_id: 0..0" in str(error)
        error = raised(lambda: SMPartition.from_device(0).split(num_sms=(100, 100)))
        assert type(error) is tgc.SplitError and isinstance(error, ValueError)
        if tgc.driver_version() < 13010:
            error = raised(lambda: GreenContext.max_workqueue_concurrency(0))
            assert type(error) is tgc.FeatureUnavailableError and isinstance(error, RuntimeError), repr(error)
            assert "needs CUDA driver 13.1" in str(error)
            assert (error.needed_version, error.found_version) == (13010, tgc.driver_version()), vars(error)
            assert error.feature and str(error).startswith(error.feature)
            again = pickle.loads(pickle.dumps(error))
            assert type(again) is tgc.FeatureUnavailableError and str(again) == str(error)
        # The core works afterwards; nothing was left behind.
        assert GreenContext(num_sms=8, device_id=0).sm_count == 8
        counts = tgc.live_counts()
        assert counts["contexts"] + counts["streams"] == 0, counts
        print("ok")
        """,
        version,
    )


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
