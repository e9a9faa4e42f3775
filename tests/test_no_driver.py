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
        lambda: tgc.sm_count(),
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
