"""Code written for torch 2.9-2.14's torch.cuda.green_contexts runs unchanged after install():
GreenContext.create(num_sms, device_id) with positions (a FutureWarning naming the keyword
form), against the simulated driver in tests/sim/test_older_torch_code.py
(tests/gpu/test_gpu_older_torch_code.py runs such code on a GPU, set_context/pop_context
included). The signature stays torch 2.15's keyword-only one."""

from __future__ import annotations

import inspect
import warnings

import pytest

import torch_green_contexts as tgc


def test_the_signature_stays_keyword_only():
    params = inspect.signature(tgc.GreenContext.create).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert [p.name for p in params] == ["num_sms", "sm_partition", "workqueue_scope", "workqueue_concurrency_limit",
                                        "device_id"]


@pytest.mark.parametrize("args, kwargs, message", [
    ((16, 0, 3), {}, "at most 2 positional arguments (num_sms, device_id"),
    ((16,), {"num_sms": 8}, "multiple values for argument 'num_sms'"),
    ((16, 0), {"device_id": 1}, "multiple values for argument 'device_id'"),
])
def test_bad_positional_calls_are_type_errors(args, kwargs, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
            tgc.GreenContext.create(*args, **kwargs)


@pytest.mark.parametrize("args, suggested", [
    ((16,), "GreenContext.create(num_sms=16, device_id=0)"),
    ((16, 1), "GreenContext.create(num_sms=16, device_id=1)"),
    ((False,), "GreenContext.create(num_sms=<int>, device_id=0)"),
    (("16", 0.5), "GreenContext.create(num_sms=<int>, device_id=<int>)"),
])
def test_the_warning_suggests_only_values_that_could_be_right(args, suggested):
    from torch_green_contexts._legacy_create import keyword_form

    with pytest.warns(FutureWarning) as caught:
        named = keyword_form(args, {})
    assert suggested in str(caught[0].message)
    assert named["num_sms"] is args[0]
