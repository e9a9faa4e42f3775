"""The errors Python users get, against the simulated driver: driver failures as DriverError with
the message unchanged, the core's rules with the contract's types and texts, counts a split
cannot give, and an unknown split path from the environment."""

import pickle

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import DriverError, GreenContext, SMPartition

SPELLED = {915: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", 2: "CUDA_ERROR_OUT_OF_MEMORY",
           101: "CUDA_ERROR_INVALID_DEVICE"}


@pytest.mark.driver_versions(12040, 13000, 13040)
def test_driver_failures_raise_it_with_the_message_unchanged(fail_next, raised):
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
        spelled = SPELLED[code]
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
        assert (again.feature, again.needed_version) == (error.feature, error.needed_version)
    # The core works afterwards; nothing was left behind.
    assert GreenContext(num_sms=8, device_id=0).sm_count == 8
    counts = tgc.live_counts()
    assert counts["contexts"] + counts["streams"] == 0, counts


def _fails_exactly(kind, text, call):
    try:
        call()
    except kind as error:
        assert type(error) is kind and str(error) == text, (type(error), str(error))
    else:
        raise AssertionError("no " + kind.__name__)


@pytest.mark.driver_versions(13040)
def test_the_cores_rules_through_the_python_api():
    """A device's range, num_sms's range, a partition on another device, backfill only last."""
    out_of_range = "device_id {} is out of range: this machine has 1 CUDA device (valid device_id: 0..0)"
    for call in (lambda: GreenContext(num_sms=8, device_id=3), lambda: SMPartition.from_device(3),
                 lambda: GreenContext.split(num_sms=(8, 8), device_id=3),
                 lambda: GreenContext(workqueue_scope="device_ctx", device_id=3)):
        _fails_exactly(RuntimeError, out_of_range.format(3), call)
    for count in (0, -3, 133, 1 << 40):
        _fails_exactly(RuntimeError,
                       "num_sms must be between 1 and 132 (the SM count of device 0), got {}".format(count),
                       lambda: GreenContext(num_sms=count, device_id=0))
    whole = SMPartition.from_device(0)
    _fails_exactly(ValueError,
                   "device_id=2 disagrees with the sm_partition's device (0); omit device_id or pass device_id=0",
                   lambda: GreenContext(sm_partition=whole, device_id=2))
    _fails_exactly(ValueError, "device_id={0} disagrees with the sm_partition's device (0); omit device_id or pass "
                   "device_id=0".format(1 << 32), lambda: GreenContext(sm_partition=whole, device_id=1 << 32))
    assert GreenContext(sm_partition=whole, device_id=0).sm_count == 132
    last = ("group 0: num_sms=0 with backfill=True takes all remaining SMs, so it may only be the last group "
            "(there are 2 groups)")
    _fails_exactly(ValueError, last, lambda: whole.split(num_sms=(0, 16), backfill=(True, False)))
    _fails_exactly(ValueError, last, lambda: GreenContext.split(num_sms=(0, 16), backfill=(True, False), device_id=0))
    _fails_exactly(ValueError, "workqueue_scope must be one of 'device_ctx', 'balanced' or None, got 'shared'",
                   lambda: GreenContext(num_sms=8, workqueue_scope="shared"))


@pytest.mark.driver_versions(13000, 13010, 13040)
def test_a_count_the_split_cannot_give_is_a_split_error_naming_group_count_and_nearest(raised, calls):
    """The same SplitError (a ValueError) on both split paths: on the native one (driver 13.1+,
    cuDevSmResourceSplit) it names the group, the count and the nearest counts, as the emulated
    path does, in its text and as attributes."""
    native_splits = calls("cuDevSmResourceSplit")
    whole = SMPartition.from_device(0)
    # Eight groups of 16 where seven fit: the eighth is named, with what it could have after them.
    for counts, group, count, nearest in (([13], 0, 13, [8, 16]), ([16, 17], 1, 17, [16, 24]), ([16] * 8, 7, 16, [8])):
        error = raised(lambda: whole.split(num_sms=counts))
        assert type(error) is tgc.SplitError and isinstance(error, ValueError), repr(error)
        text = str(error)
        assert f"group {group}: num_sms={count} cannot be given" in text, text
        assert "nearest counts it can give: " + ", ".join(map(str, nearest)) in text, text
        assert (error.group, error.num_sms, error.nearest_counts) == (group, count, nearest), text
    error = raised(lambda: whole.split(num_sms=[100, 100]))
    assert type(error) is tgc.SplitError and error.group is None and error.num_sms == 200, repr(error)
    (a, b), _ = whole.split(num_sms=[16, 24])  # and the driver still splits what fits
    assert (a.sm_count, b.sm_count) == (16, 24)
    asked_the_driver = calls("cuDevSmResourceSplit") > native_splits
    assert asked_the_driver == (tgc.driver_version() >= 13010)


@pytest.mark.driver_versions(13000)
def test_an_unknown_split_path_fails_every_split_before_the_driver_splits(monkeypatch, fails, live):
    monkeypatch.setenv("TORCH_GREEN_CONTEXTS_SPLIT_PATH", "quick")
    whole = SMPartition.from_device(0)
    for call in (lambda: whole.split(num_sms=8), lambda: GreenContext.split(num_sms=(8, 8), device_id=0)):
        fails(call, ValueError, "allowed values: auto, native, emulated")
    assert live("green_ctx") == 0
