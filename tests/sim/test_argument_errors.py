"""Bad arguments with a driver: the exceptions and messages they raised before their checks that
need no device were moved ahead of looking the device up (tests/test_no_driver.py has the same
calls without a driver), and the checks that need the device still name its figures."""

import pytest
import torch

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, SMPartition, sizing
from torch_green_contexts.compat import flashinfer, sglang
from torch_green_contexts.layouts import Layouts

pytestmark = pytest.mark.driver_versions(12040, 13000, 13040)

CUDA = torch.device("cuda:0")
NUM_SMS = "num_sms must be between 1 and 132 (the SM count of device 0), got {}"
LATENCY_SMS = ("latency_sms entries must be between 0 (every SM to batch work) and 132 (every SM of device 0 to "
               "the latency side), got {}")
RESERVED = ("reserved SM counts must be positive multiples of 8 (the smallest partition of device 0), got "
            "prefill_reserved_sm={}, decode_reserved_sm={}")
OUT_OF_RANGE = "device_id 5 is out of range: this machine has 1 CUDA device (valid device_id: 0..0)"
WIDE_DEVICE = OUT_OF_RANGE.replace("5", "9223372036854775807 or more", 1)


def _step():
    return None


CASES = [
    ("Layouts([-1])", lambda: Layouts([-1], device_id=0), ValueError, LATENCY_SMS.format([-1])),
    ("Layouts([0, 16, -8, 1000])", lambda: Layouts([0, 16, -8, 1000], device_id=0), ValueError,
     LATENCY_SMS.format([-8, 1000])),
    ("Layouts(overlapped=[(-8, 16)])", lambda: Layouts([], overlapped=[(-8, 16)], device_id=0), ValueError,
     "overlapped layout (-8, 16): floors must be multiples of 8 SMs (the smallest partition of device 0) of 0 or more"),
    ("Layouts(overlapped=[(0, 0)])", lambda: Layouts([], overlapped=[(0, 0)], device_id=0), ValueError,
     "overlapped layout (0, 0): at least one floor must be positive (with no floors both sides share every SM: "
     "that is the end layout 132)"),
    ("Layouts(overlapped=[(12, 16)])", lambda: Layouts([], overlapped=[(12, 16)], device_id=0), ValueError,
     "overlapped layout (12, 16): floors must be multiples of 8 SMs (the smallest partition of device 0) of 0 or more"),
    ("sizing.measure(counts=[-16])", lambda: sizing.measure(_step, counts=[-16], device_id=0), ValueError,
     "counts entries must be 1 or more, got -16"),
    ("sizing.measure(counts=[])", lambda: sizing.measure(_step, counts=[], device_id=0), ValueError,
     "counts must name at least one SM count"),
    ("sizing.measure(counts=[12])", lambda: sizing.measure(_step, counts=[12], device_id=0), ValueError,
     "this device cannot be split exactly into [12] SMs and the rest; allowed counts: "
     "[8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 132]"),
    ("sizing.profile(counts=[-1])", lambda: sizing.profile(lambda p: _step, [1], counts=[-1], device_id=0),
     ValueError, "counts entries must be 1 or more, got -1"),
    ("sglang (-1, 32)", lambda: sglang.create_greenctx_stream_by_value(-1, 32, 0), RuntimeError,
     "SM counts must be positive, got SM_a=-1, SM_b=32"),
    ("sglang (8.0, 8)", lambda: sglang.create_greenctx_stream_by_value(8.0, 8, 0), TypeError,
     "SM_a must be an int, got float (8.0)"),
    ("sglang overlapped (-8)", lambda: sglang.create_overlapped_greenctx_stream_by_value(-8, 0), RuntimeError,
     RESERVED.format(-8, -8)),
    ("sglang overlapped (12, 8)", lambda: sglang.create_asymmetric_overlapped_greenctx_stream_by_value(12, 8, 0),
     RuntimeError, RESERVED.format(12, 8)),
    ("sglang overlapped (8, 1.5)", lambda: sglang.create_asymmetric_overlapped_greenctx_stream_by_value(8, 1.5, 0),
     TypeError, "decode_reserved_sm must be an int, got float (1.5)"),
    ("flashinfer [16, -32]", lambda: flashinfer.split_device_green_ctx_by_sm_count(CUDA, [16, -32]), ValueError,
     "SM count must be positive, got -32"),
    ("flashinfer [1.5]", lambda: flashinfer.split_device_green_ctx_by_sm_count(CUDA, [1.5]), TypeError,
     "sm_counts entries must be an int, got float (1.5)"),
    ("flashinfer cpu", lambda: flashinfer.split_device_green_ctx_by_sm_count(torch.device("cpu"), [-1]),
     ValueError, "dev must be a CUDA device, got cpu"),
    ("flashinfer groups 0", lambda: flashinfer.split_device_green_ctx(CUDA, 0, 16), ValueError,
     "num_groups must be 1 or more, got 0"),
    ("flashinfer min_count -1", lambda: flashinfer.split_device_green_ctx(CUDA, 2, -1), ValueError,
     "min_count must be 0 or more, got -1"),
    ("GreenContext(num_sms=-1)", lambda: GreenContext(num_sms=-1, device_id=0), RuntimeError, NUM_SMS.format(-1)),
    ("GreenContext(num_sms=0)", lambda: GreenContext(num_sms=0, device_id=0), RuntimeError, NUM_SMS.format(0)),
    ("GreenContext.create(num_sms=-1)", lambda: GreenContext.create(num_sms=-1, device_id=0), RuntimeError,
     NUM_SMS.format(-1)),
    ("GreenContext(num_sms=-1, balanced)", lambda: GreenContext(num_sms=-1, workqueue_scope="balanced", device_id=0),
     RuntimeError, NUM_SMS.format(-1)),
    ("GreenContext(num_sms=-1, device_id=-1)", lambda: GreenContext(num_sms=-1, device_id=-1), RuntimeError,
     "device_id must be a CUDA device index (0 or more), got -1"),
    ("GreenContext.split(num_sms=(16, -1))", lambda: GreenContext.split(num_sms=(16, -1), device_id=0), ValueError,
     "num_sms entries must be non-negative ints, got -1"),
    # Integers wider than the core's 64 bits: named as the ends of its range stand for them.
    ("GreenContext(num_sms=2**70)", lambda: GreenContext(num_sms=2**70, device_id=0), RuntimeError,
     NUM_SMS.format("9223372036854775807 or more")),
    ("GreenContext(num_sms=-2**70)", lambda: GreenContext(num_sms=-2**70, device_id=0), RuntimeError,
     NUM_SMS.format("-9223372036854775808 or less")),
    ("GreenContext.create(2**70)", lambda: GreenContext.create(num_sms=2**70, device_id=0), RuntimeError,
     NUM_SMS.format("9223372036854775807 or more")),
    ("GreenContext(device_id=2**80)", lambda: GreenContext(num_sms=16, device_id=2**80), RuntimeError, WIDE_DEVICE),
    ("GreenContext.split(device_id=2**80)", lambda: GreenContext.split(num_sms=16, device_id=2**80), RuntimeError,
     WIDE_DEVICE),
    ("SMPartition.from_device(2**80)", lambda: SMPartition.from_device(2**80), RuntimeError, WIDE_DEVICE),
    ("max_workqueue_concurrency(2**80)", lambda: GreenContext.max_workqueue_concurrency(2**80), RuntimeError,
     WIDE_DEVICE),
    ("get_num_locality_domains(2**80)", lambda: tgc.get_num_locality_domains(2**80), RuntimeError, WIDE_DEVICE),
    ("sizing.available_counts(2**80)", lambda: sizing.available_counts(2**80), RuntimeError, WIDE_DEVICE),
    ("GreenContext(sm_partition, device_id=2**80)",
     lambda: GreenContext(sm_partition=SMPartition.from_device(0), device_id=2**80), ValueError,
     "device_id=9223372036854775807 or more disagrees with the sm_partition's device (0); omit device_id or pass "
     "device_id=0"),
    ("set_idle_context_limit(10**30)", lambda: tgc.set_idle_context_limit(10**30), RuntimeError,
     "limit must be between 0 and 18446744073709551615 idle green contexts, got " + str(10**30)),
]


@pytest.mark.parametrize("call, kind, message", [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_bad_arguments_raise_as_before_with_a_driver(call, kind, message, raised):
    error = raised(call)
    assert type(error) is kind and str(error) == message, (type(error), str(error))


def test_create_with_torch_2_9_positions(raised):
    with pytest.warns(FutureWarning):
        error = raised(lambda: GreenContext.create(-1, 0))
    assert type(error) is RuntimeError and str(error) == NUM_SMS.format(-1)


def test_a_bad_count_is_named_before_a_device_that_is_not_there(raised):
    # Both wrong: the count, checked without the device, is named first (as split always did).
    for call, kind, text in (
        (lambda: GreenContext(num_sms=-1, device_id=5), RuntimeError,
         "num_sms must be between 1 and the SM count of the device, got -1"),
        (lambda: GreenContext.split(num_sms=(16, -1), device_id=5), ValueError,
         "num_sms entries must be non-negative ints, got -1"),
        (lambda: Layouts([-1], device_id=5), ValueError, "the SM count of the device (every SM to the latency side), "
                                                         "got [-1]"),
        (lambda: sizing.measure(_step, counts=[-16], device_id=5), ValueError, "counts entries must be 1 or more"),
        (lambda: sglang.create_greenctx_stream_by_value(-1, 32, 5), RuntimeError, "SM counts must be positive"),
        (lambda: sglang.create_asymmetric_overlapped_greenctx_stream_by_value(-8, 8, 5), RuntimeError,
         "multiples of the smallest partition of the device, got prefill_reserved_sm=-8"),
        (lambda: flashinfer.split_device_green_ctx_by_sm_count(torch.device("cuda:5"), [-32]), ValueError,
         "SM count must be positive, got -32"),
    ):
        error = raised(call)
        assert type(error) is kind and text in str(error), (type(error), str(error))
    # A count the device decides on: the device is looked up first, and its absence named.
    for call in (lambda: GreenContext(num_sms=8, device_id=5), lambda: Layouts([16], device_id=5),
                 lambda: sglang.create_greenctx_stream_by_value(8, 8, 5)):
        error = raised(call)
        assert type(error) is RuntimeError and str(error) == OUT_OF_RANGE, str(error)
