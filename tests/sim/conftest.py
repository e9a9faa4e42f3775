"""The Python API against the simulated driver (tests/simdriver), as ordinary tests.

The driver is loaded once per process and its version is fixed there by the environment
(TGC_SIM_DRIVER_VERSION), so this folder runs in a process of its own per driver version:
tests/test_simulated_driver.py starts ``python -m pytest tests/sim`` for each of 12.4, 12.5,
13.0, 13.1 and 13.4. Run alone, the folder skips unless TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY
points at the simulated driver:

    TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY=$PWD/tests/cpp/build/libtgc_simdriver.so \\
    TGC_SIM_DRIVER_VERSION=13040 python -m pytest tests/sim

A test runs at every version unless marked ``@pytest.mark.driver_versions(...)``. Before each
test the contexts kept idle are released and no failure is pending; after it, nothing may be
left in use and no green context alive.

The tests that need what a shared process cannot give stay in tests/ and run a script in a
fresh interpreter of their own (tests/_sim.py's run_on_sim):
- a driver whose configuration is read once, at cuInit: one that finds no device
  (TGC_SIM_FAIL_INIT: test_driver_error.py, test_available.py), none or two devices, another
  architecture (TGC_SIM_DEVICE_COUNT, TGC_SIM_CC_MAJOR, TGC_SIM_SM_COUNT:
  test_simulated_driver.py, test_available.py, test_compat_flashinfer.py) or another count of
  locality domains (TGC_SIM_LOCALITY_DOMAINS: test_locality.py);
- a driver lacking entry points, which the core looks up once (TGC_SIM_HIDE:
  test_available.py, test_sm_count.py);
- a driver older than green contexts (12.3: test_available.py, test_sm_count.py);
- the idle limit, read once from TORCH_GREEN_CONTEXTS_IDLE_LIMIT (test_split_errors.py);
- a driver not yet initialised, and counts of calls since the process began
  (test_locality.py's queries before CUDA is initialised);
- the command line, ``python -m torch_green_contexts`` (test_simulated_driver.py).
"""

from __future__ import annotations

import os

import pytest

from . import controls

HERE = os.path.dirname(os.path.abspath(__file__))


def _in_this_folder(item: pytest.Item) -> bool:
    return str(item.fspath).startswith(HERE + os.sep)


def pytest_configure(config):
    config.addinivalue_line("markers", "driver_versions(*versions): the simulated driver versions a test runs at")


def pytest_collection_modifyitems(config, items):
    if controls.is_simulated_driver(os.environ.get(controls.LIBRARY_ENV)):
        return
    skip = pytest.mark.skip(reason=f"{controls.LIBRARY_ENV} does not point at the simulated driver")
    for item in items:
        if _in_this_folder(item):
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    marker = item.get_closest_marker("driver_versions")
    if marker is None or not _in_this_folder(item):
        return
    version = int(os.environ.get("TGC_SIM_DRIVER_VERSION", "13040"))
    if version not in marker.args:
        pytest.skip(f"runs at driver versions {', '.join(map(str, marker.args))}, not {version}")


@pytest.fixture(autouse=True)
def nothing_left_behind():
    import torch_green_contexts as tgc

    controls.clear_failures()
    tgc.release_idle_contexts()
    yield
    controls.clear_failures()
    controls.assert_nothing_in_use()


def _control(function):
    """A fixture that gives the test `function` of tests/sim/controls.py."""
    return pytest.fixture(name=function.__name__)(lambda: function)


fail_next = _control(controls.fail_next)
live = _control(controls.live)
calls = _control(controls.calls)
sms_of_handle = _control(controls.sms_of_handle)
fails = _control(controls.fails)
raised = _control(controls.raised)
assert_nothing_in_use = _control(controls.assert_nothing_in_use)
