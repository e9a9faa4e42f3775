"""Running a script against the simulated driver (tests/simdriver), in a fresh interpreter:
the driver is loaded once per process. The library is built by scripts/run_tests.sh (cmake,
tests/cpp/build); without it the tests that need it skip."""

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
                               reason="simulated driver not built (scripts/run_tests.sh builds it)")

# Put at the top of every script: the simulated driver's own controls, through ctypes.
PRELUDE = textwrap.dedent(
    """
    import ctypes, os, sys
    sys.path.insert(0, {root!r})
    SIM = ctypes.CDLL(os.environ["TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY"])
    SIM.tgc_sim_green_ctx_sms.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]

    def fail_next(call, code, skip=0):
        SIM.tgc_sim_fail_next(call.encode(), code, skip)

    def live(kind):
        return SIM.tgc_sim_live(kind.encode())

    def fails(call, error, text):
        # `call` raises `error` (exactly that type or a subclass) with `text` in its message.
        try:
            call()
        except error as caught:
            assert text in str(caught), caught
        else:
            raise AssertionError(f"no {{error.__name__}}")

    def raised(call):
        try:
            call()
        except Exception as error:
            return error
        raise AssertionError("nothing raised")

    def assert_nothing_in_use():
        # Nothing held by the core after a loop of calls, and no green context left once the
        # idle ones are released.
        import gc
        import torch_green_contexts as tgc
        gc.collect()
        counts = tgc.live_counts()
        assert counts["contexts"] + counts["streams"] + counts["internal_contexts"] == 0, counts
        tgc.release_idle_contexts()
        assert live("green_ctx") == 0

    def sms_of_handle(green_ctx):
        out = (ctypes.c_int * 256)()
        n = SIM.tgc_sim_green_ctx_sms(green_ctx, out, 256)
        return set(out[:n])
    """
)


def run_on_sim(script: str, version: int = 13040, timeout: int = 300, **env: str) -> str:
    """Runs `script` (after PRELUDE) against the simulated driver of `version`; returns its
    standard output, failing the test with its output when it exits non-zero."""
    environment = {**os.environ, "TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY": str(LIBRARY),
                   "TGC_SIM_DRIVER_VERSION": str(version), "CUDA_VISIBLE_DEVICES": "", **env}
    code = PRELUDE.format(root=ROOT) + textwrap.dedent(script)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout
