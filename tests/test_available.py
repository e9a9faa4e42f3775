"""is_available(): a CUDA build of PyTorch, a driver with green contexts and a device; never raises."""

import pytest

import torch_green_contexts as tgc

from ._sim import needs_sim, run_on_sim


@pytest.mark.skipif(tgc._C.installed_driver_version() != 0, reason="a CUDA driver is installed here")
def test_no_driver():
    assert tgc.is_available() is False


# Drivers without green contexts or without a device, each in a process of its own (the
# driver's configuration is read once); tests/sim/test_available.py covers those with both.
@needs_sim
@pytest.mark.parametrize(
    "version, env, expected",
    [
        (12030, {}, False),  # a driver without green contexts
        (13000, {"TGC_SIM_DEVICE_COUNT": "0"}, False),
        (13000, {"TGC_SIM_FAIL_INIT": "100"}, False),  # cuInit: no device
        (13000, {"TGC_SIM_HIDE": "cuGreenCtxCreate"}, False),
    ],
)
def test_against_the_simulated_driver(version, env, expected):
    out = run_on_sim(
        """
        import torch_green_contexts as tgc
        print(tgc.is_available(), tgc.is_available())
        """,
        version, **env,
    )
    assert out.strip() == f"{expected} {expected}"


def test_never_raises_even_in_a_forked_child():
    import os

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os._exit(0 if tgc.is_available() in (True, False) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
