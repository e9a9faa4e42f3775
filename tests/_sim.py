"""Running against the simulated driver (tests/simdriver) in a fresh interpreter: the driver is
loaded once per process, and its version and configuration are fixed there by the environment.
The library is built by scripts/run_tests.sh (cmake, tests/cpp/build); without it the tests that
need it skip."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

LIBRARY = pathlib.Path(__file__).parent / "cpp" / "build" / "libtgc_simdriver.so"
ROOT = str(pathlib.Path(__file__).resolve().parent.parent)

needs_sim = pytest.mark.skipif(not LIBRARY.exists(),
                               reason="simulated driver not built: cmake -S tests/cpp -B tests/cpp/build && "
                                      "cmake --build tests/cpp/build --target tgc_simdriver "
                                      "(or scripts/run_tests.sh)")

# Put at the top of every script: the simulated driver's controls and the checks of
# tests/sim/controls.py (fail_next, live, calls, fails, raised, assert_nothing_in_use,
# sms_of_handle).
PRELUDE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from tests.sim.controls import *
    """
)


def sim_environment(version: int, **env: str) -> dict[str, str]:
    """This process's environment with the simulated driver of `version` and no GPU, and `env`."""
    return {**os.environ, "TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY": str(LIBRARY),
            "TGC_SIM_DRIVER_VERSION": str(version), "CUDA_VISIBLE_DEVICES": "", **env}


def run_on_sim(script: str, version: int = 13040, timeout: int = 300, **env: str) -> str:
    """Runs `script` (after PRELUDE) against the simulated driver of `version`; returns its
    standard output, failing the test with its output when it exits non-zero."""
    code = PRELUDE.format(root=ROOT) + textwrap.dedent(script)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=sim_environment(version, **env), timeout=timeout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout
