"""Code written for torch 2.9-2.14's torch.cuda.green_contexts runs unchanged after install():
GreenContext.create(num_sms, device_id) with positions, a FutureWarning naming the keyword form."""

import warnings

import pytest

import torch_green_contexts as tgc


@pytest.fixture
def installed():
    tgc.install()
    yield
    tgc.uninstall()


@pytest.mark.driver_versions(12040, 13000)
def test_torch_2_11_code_runs_after_install(installed, raised):
    from torch.cuda.green_contexts import GreenContext

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ctx = GreenContext.create(16, 0)        # as torch 2.9-2.14 code and tests call it
        one = GreenContext.create(8)           # device 0, as there
        two = GreenContext.create(8, device_id=0)
    assert [w.category for w in caught] == [FutureWarning] * 3, caught
    text = str(caught[0].message)
    assert "GreenContext.create(num_sms=16, device_id=0)" in text and "torch 2.15" in text, text
    assert caught[0].filename == __file__  # it points at the caller
    assert ctx.sm_count >= 16 and ctx.device_id == 0 and one.device_id == 0 and two.sm_count >= 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the keyword form does not warn
        GreenContext.create(num_sms=16, device_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        error = raised(lambda: GreenContext.create(16.5, 0))
    assert type(error) is TypeError and "num_sms" in str(error), error
