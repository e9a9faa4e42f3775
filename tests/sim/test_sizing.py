"""The counts a sizing sweep would measure, read from the driver on the emulated (12.4, 13.0) and
native (13.4) split paths, and the checks that need a device."""

import pytest

from torch_green_contexts import sizing
from torch_green_contexts.layouts import Layouts


@pytest.mark.driver_versions(12040, 13000, 13040)
def test_sizing_counts_and_checks_against_the_simulated_driver(fails):
    counts = sizing.available_counts(0)
    # The simulated GPCs (18 x 6, 16, 8) hold 15 aligned groups of 8: a group and the rest can
    # be 8..120 SMs, and the whole device (132) ends the list.
    assert counts == list(range(8, 121, 8)) + [132], counts
    for call, error, text in (
        (lambda: sizing.measure(lambda: None, counts=[8, 12], device_id=0), ValueError,
         "cannot be split exactly into [12] SMs and the rest; allowed counts: [8, 16,"),
        (lambda: sizing.measure(lambda: None, counts=[128], device_id=0), ValueError, "[128]"),
        (lambda: sizing.measure(lambda: None, device_id=3), RuntimeError, "valid device_id: 0..0"),
        (lambda: Layouts([8, 133], device_id=0), ValueError, "between 0 (every SM to batch work) and 132"),
        (lambda: Layouts([8], device_id=3), RuntimeError, "valid device_id: 0..0"),
    ):
        fails(call, error, text)
