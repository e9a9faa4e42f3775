"""The Python API against the simulated driver (tests/simdriver), for every driver version.

tests/sim holds the tests; the driver is loaded once per process, so they run in a fresh
``python -m pytest tests/sim`` per driver version, here. What a shared process cannot give (two
devices, the command line) stays below, in interpreters of its own. The library is built by
scripts/run_tests.sh (cmake, tests/cpp/build); without it these skip.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from ._sim import LIBRARY, ROOT, needs_sim, run_on_sim, sim_environment

SIM_TESTS = pathlib.Path(__file__).parent / "sim"


@needs_sim
@pytest.mark.parametrize("version", [12040, 12050, 13000, 13010, 13040])
def test_the_sim_folder_against_the_simulated_driver(version):
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(SIM_TESTS)]
    result = subprocess.run(command, cwd=ROOT, env=sim_environment(version), capture_output=True, text=True,
                            timeout=900)
    output = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"tests/sim at driver {version} failed:\n{output}", pytrace=False)
    if not re.search(r"\b[1-9][0-9]* passed\b", output):
        pytest.fail(f"tests/sim at driver {version} ran no test:\n{output}", pytrace=False)
    print(output.strip().splitlines()[-1])


@needs_sim
def test_two_devices_against_the_simulated_driver():
    out = run_on_sim(
        """
        from torch_green_contexts import GreenContext, SMPartition
        on_one = SMPartition.from_device(device_id=1)
        assert on_one.device_id == 1
        assert GreenContext(num_sms=8, device_id=1).device_id == 1
        assert GreenContext(sm_partition=on_one).device_id == 1
        assert [c.device_id for c in GreenContext.split(num_sms=(8, 8), device_id=1)] == [1, 1]
        groups, _ = SMPartition.from_device(device_id=0).split(num_sms=8)
        other, _ = on_one.split(num_sms=8)
        fails(lambda: SMPartition.union(groups[0], other[0]), ValueError, "of one device")
        fails(lambda: GreenContext(sm_partition=groups[0], device_id=1), ValueError, "device_id=1 disagrees")
        for call in (lambda: GreenContext(num_sms=8, device_id=2), lambda: SMPartition.from_device(device_id=2)):
            fails(call, RuntimeError, "valid device_id: 0..1")
        print("ok")
        """,
        13000, timeout=120, TGC_SIM_DEVICE_COUNT="2",
    )
    assert out.strip() == "ok"


@needs_sim
def test_report_against_the_simulated_driver():
    env = dict(os.environ, TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY=str(LIBRARY), TGC_SIM_DRIVER_VERSION="13000")
    result = subprocess.run([sys.executable, "-m", "torch_green_contexts"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "CUDA driver: 13.0" in out
    assert "native split (cuDevSmResourceSplit)" in out and "no (needs 13.1)" in out
    assert "missing: cuDevSmResourceSplit (13.1+)" in out
    # The simulated GPCs (18 x 6, 16, 8) hold 15 aligned groups of 8, as an H200 does.
    assert "groups that fit at once: 15 of 8 SMs, 7 of 16 SMs" in out, out
    assert f"TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY={LIBRARY}" in out
