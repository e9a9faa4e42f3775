"""Without an NVIDIA driver: clear RuntimeErrors, and the report command still works."""

import subprocess
import sys

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, SMPartition

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
