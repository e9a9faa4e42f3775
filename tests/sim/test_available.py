"""is_available() against simulated drivers with green contexts and a device (tests/test_available.py
covers the drivers without)."""

import pytest

import torch_green_contexts as tgc


@pytest.mark.driver_versions(12040, 13000, 13040)
def test_a_driver_with_green_contexts_and_a_device():
    assert (tgc.is_available(), tgc.is_available()) == (True, True)
