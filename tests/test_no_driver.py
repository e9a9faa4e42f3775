"""Without an NVIDIA driver: clear RuntimeErrors, and the report command still works."""

import subprocess
import sys

import pytest
import torch

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, SMPartition, sizing
from torch_green_contexts.compat import flashinfer, sglang
from torch_green_contexts.layouts import Layouts

pytestmark = pytest.mark.skipif(
    tgc._C.installed_driver_version() != 0, reason="a CUDA driver is installed here"
)


@pytest.mark.parametrize(
    "call",
    [
        lambda: GreenContext(num_sms=8),
        lambda: GreenContext(num_sms=8, device_id=0),
        lambda: GreenContext.create(num_sms=8),
        lambda: GreenContext(workqueue_scope="balanced"),
        lambda: GreenContext.split(num_sms=(16, 16)),
        lambda: GreenContext.max_workqueue_concurrency(),
        lambda: SMPartition.from_device(),
        lambda: SMPartition.from_device(0),
        lambda: tgc.driver_version(),
        lambda: tgc.sm_count(),
        lambda: tgc.observed_sm_ids(),
        lambda: tgc.observed_sm_ids(None),
    ],
)
def test_no_driver_is_a_clear_runtime_error(call):
    with pytest.raises(RuntimeError, match="libcuda.so.1.*could not be loaded"):
        call()


def test_driver_library_override_named_in_error(tmp_path):
    code = (
        "import torch_green_contexts as t\n"
        "try:\n    t.SMPartition.from_device(0)\n"
        "except RuntimeError as e:\n    print(e)\n"
    )
    missing = tmp_path / "libcuda-missing.so"
    env = {"TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY": str(missing), "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0
    assert str(missing) in out.stdout


def test_main_reports_missing_driver_and_exits_zero():
    out = subprocess.run(
        [sys.executable, "-m", "torch_green_contexts"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "CUDA driver: none found" in out.stdout
    assert "torch" in out.stdout


def test_main_names_the_split_path_variable_as_the_package_reads_it(monkeypatch, capsys):
    from torch_green_contexts import __main__ as report
    from torch_green_contexts import _sm_partition

    monkeypatch.setattr(_sm_partition, "_SPLIT_PATH_ENV", "TGC_TEST_SPLIT_PATH")
    monkeypatch.setenv("TGC_TEST_SPLIT_PATH", "emulated")
    monkeypatch.setenv("TORCH_GREEN_CONTEXTS_SPLIT_PATH", "native")
    assert report.main([]) == 0
    out = capsys.readouterr().out
    assert "TGC_TEST_SPLIT_PATH=emulated" in out
    assert "TORCH_GREEN_CONTEXTS_SPLIT_PATH" not in out


def test_main_answers_help_and_refuses_unknown_options():
    import subprocess
    import sys

    usage = subprocess.run([sys.executable, "-m", "torch_green_contexts", "--help"], capture_output=True,
                           text=True, timeout=120)
    assert usage.returncode == 0 and "usage: python -m torch_green_contexts" in usage.stdout
    assert "--no-demo" in usage.stdout and "Reports what this machine offers" in usage.stdout
    wrong = subprocess.run([sys.executable, "-m", "torch_green_contexts", "--bogus"], capture_output=True,
                           text=True, timeout=120)
    assert wrong.returncode == 2 and "unrecognized arguments: --bogus" in wrong.stderr


# ---- bad arguments: named, not hidden behind the missing driver ----------------------------------
# What needs no device is checked before the device is looked up. Each call keeps the exception
# type it raises with a driver (tests/sim/test_argument_errors.py pins those messages); where the
# driver's message names the device's figures, the one here says "the device" instead.

def _step():
    return None


CUDA = torch.device("cuda:0")
NUM_SMS = "num_sms must be between 1 and the SM count of the device, got {}"
LATENCY_SMS = ("latency_sms entries must be between 0 (every SM to batch work) and the SM count of the device "
               "(every SM to the latency side), got {}")
RESERVED = ("reserved SM counts must be positive multiples of the smallest partition of the device, got "
            "prefill_reserved_sm={}, decode_reserved_sm={}")
BAD_ARGUMENTS = [
    ("Layouts([-1])", lambda: Layouts([-1]), ValueError, LATENCY_SMS.format([-1])),
    ("Layouts([0, 16, -8, -1])", lambda: Layouts([0, 16, -8, -1], device_id=0), ValueError,
     LATENCY_SMS.format([-8, -1])),
    ("Layouts(overlapped=[(-8, 16)])", lambda: Layouts([], overlapped=[(-8, 16)]), ValueError,
     "overlapped layout (-8, 16): floors must be multiples of the smallest partition of the device, of 0 or more"),
    ("Layouts(overlapped=[(0, 0)])", lambda: Layouts([], overlapped=[(0, 0)]), ValueError,
     "overlapped layout (0, 0): at least one floor must be positive (with no floors both sides share every SM: "
     "that is the end layout of all the device's SMs)"),
    ("Layouts([1.5])", lambda: Layouts([1.5]), TypeError, "latency_sms entries must be ints, got float (1.5)"),
    ("sizing.measure(counts=[-16])", lambda: sizing.measure(_step, counts=[-16]), ValueError,
     "counts entries must be 1 or more, got -16"),
    ("sizing.measure(counts=[])", lambda: sizing.measure(_step, counts=[]), ValueError,
     "counts must name at least one SM count"),
    ("sizing.measure(counts=[True])", lambda: sizing.measure(_step, counts=[True]), TypeError,
     "counts entries must be an int, not bool (True)"),
    ("sizing.profile(counts=[-1])", lambda: sizing.profile(lambda p: _step, [1], counts=[-1]), ValueError,
     "counts entries must be 1 or more, got -1"),
    ("sglang.create_greenctx_stream_by_value(-1, 32)", lambda: sglang.create_greenctx_stream_by_value(-1, 32),
     RuntimeError, "SM counts must be positive, got SM_a=-1, SM_b=32"),
    ("sglang.create_greenctx_stream_by_value(16, 0, 0)", lambda: sglang.create_greenctx_stream_by_value(16, 0, 0),
     RuntimeError, "SM counts must be positive, got SM_a=16, SM_b=0"),
    ("sglang.create_greenctx_stream_by_value(8.0, 8)", lambda: sglang.create_greenctx_stream_by_value(8.0, 8),
     TypeError, "SM_a must be an int, got float (8.0)"),
    ("sglang.create_overlapped_greenctx_stream_by_value(-8)",
     lambda: sglang.create_overlapped_greenctx_stream_by_value(-8), RuntimeError, RESERVED.format(-8, -8)),
    ("sglang.create_asymmetric_overlapped_greenctx_stream_by_value(16, 0)",
     lambda: sglang.create_asymmetric_overlapped_greenctx_stream_by_value(16, 0), RuntimeError,
     RESERVED.format(16, 0)),
    ("sglang.create_asymmetric_overlapped_greenctx_stream_by_value(8, 1.5)",
     lambda: sglang.create_asymmetric_overlapped_greenctx_stream_by_value(8, 1.5), TypeError,
     "decode_reserved_sm must be an int, got float (1.5)"),
    ("flashinfer.split_device_green_ctx_by_sm_count(dev, [16, -32])",
     lambda: flashinfer.split_device_green_ctx_by_sm_count(CUDA, [16, -32]), ValueError,
     "SM count must be positive, got -32"),
    ("flashinfer.split_device_green_ctx_by_sm_count(dev, [1.5])",
     lambda: flashinfer.split_device_green_ctx_by_sm_count(CUDA, [1.5]), TypeError,
     "sm_counts entries must be an int, got float (1.5)"),
    ("flashinfer.split_device_green_ctx(dev, 0, 16)", lambda: flashinfer.split_device_green_ctx(CUDA, 0, 16),
     ValueError, "num_groups must be 1 or more, got 0"),
    ("flashinfer.split_device_green_ctx(dev, 2, -1)", lambda: flashinfer.split_device_green_ctx(CUDA, 2, -1),
     ValueError, "min_count must be 0 or more, got -1"),
    ("GreenContext(num_sms=-1)", lambda: GreenContext(num_sms=-1), RuntimeError, NUM_SMS.format(-1)),
    ("GreenContext(num_sms=0, device_id=0)", lambda: GreenContext(num_sms=0, device_id=0), RuntimeError,
     NUM_SMS.format(0)),
    ("GreenContext.create(num_sms=-1)", lambda: GreenContext.create(num_sms=-1), RuntimeError, NUM_SMS.format(-1)),
    ("GreenContext(num_sms=-1, workqueue_scope='balanced')",
     lambda: GreenContext(num_sms=-1, workqueue_scope="balanced"), RuntimeError, NUM_SMS.format(-1)),
    ("GreenContext.split(num_sms=(16, -1))", lambda: GreenContext.split(num_sms=(16, -1)), ValueError,
     "num_sms entries must be non-negative ints, got -1"),
]


@pytest.mark.parametrize("call, kind, message", [pytest.param(*case[1:], id=case[0]) for case in BAD_ARGUMENTS])
def test_a_bad_argument_is_named_without_a_driver(call, kind, message):
    with pytest.raises(Exception) as raised:
        call()
    assert type(raised.value) is kind, (type(raised.value), str(raised.value))
    assert str(raised.value) == message


def test_create_with_torch_2_9_positions_names_a_bad_count_without_a_driver():
    with pytest.warns(FutureWarning, match="torch 2.9-2.14's form"):
        with pytest.raises(RuntimeError) as raised:
            GreenContext.create(-1)
    assert str(raised.value) == NUM_SMS.format(-1)


@pytest.mark.parametrize("call", [
    pytest.param(lambda: GreenContext(num_sms=1000), id="GreenContext(num_sms=1000)"),
    pytest.param(lambda: Layouts([0, 1000]), id="Layouts([0, 1000])"),
    pytest.param(lambda: Layouts([], overlapped=[(12, 16)]), id="Layouts(overlapped=[(12, 16)])"),
    pytest.param(lambda: sizing.measure(_step, counts=[12]), id="sizing.measure(counts=[12])"),
    pytest.param(lambda: sglang.create_greenctx_stream_by_value(8, 1000), id="sglang (8, 1000)"),
    pytest.param(lambda: sglang.create_asymmetric_overlapped_greenctx_stream_by_value(12, 8), id="sglang floors 12, 8"),
    pytest.param(lambda: flashinfer.split_device_green_ctx_by_sm_count(CUDA, [1000]), id="flashinfer [1000]"),
])
def test_what_only_the_device_can_decide_still_needs_the_driver(call):
    # Ranges against the device's SM count, multiples of its smallest partition, splits it can give.
    with pytest.raises(RuntimeError, match="libcuda.so.1.*could not be loaded"):
        call()
