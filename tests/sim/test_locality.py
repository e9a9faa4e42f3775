"""get_num_locality_domains and is_localization_supported refuse a bad device on every driver
(tests/test_locality.py asks before the driver is initialised, in fresh interpreters)."""

import pytest

import torch_green_contexts as tgc


@pytest.mark.driver_versions(13000, 13040)
@pytest.mark.parametrize("query", [tgc.get_num_locality_domains, tgc.is_localization_supported],
                         ids=lambda query: query.__name__)
def test_a_bad_device_is_an_error_on_every_driver(query, raised):
    error = raised(lambda: query(99))
    assert type(error) is RuntimeError and "device_id 99 is out of range" in str(error), error
    error = raised(lambda: query(-1))
    assert type(error) is RuntimeError and "0 or more" in str(error), error
    for wrong in ("x", 1.5, True):
        assert type(raised(lambda: query(wrong))) is TypeError, wrong
