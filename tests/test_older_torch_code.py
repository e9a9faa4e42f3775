"""Code written for torch 2.9-2.14's torch.cuda.green_contexts runs unchanged after install():
GreenContext.create(num_sms, device_id) with positions (a FutureWarning naming the keyword
form), against the simulated driver (tests/gpu/test_gpu_older_torch_code.py runs
such code on a GPU, set_context/pop_context included). The signature stays
torch 2.15's keyword-only one."""

from __future__ import annotations

import inspect
import warnings

import pytest

import torch_green_contexts as tgc
from tests._sim import needs_sim, run_on_sim


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


@needs_sim
@pytest.mark.parametrize("version", [12040, 13000])
def test_torch_2_11_code_runs_after_install(version):
    out = run_on_sim(
        """
        import warnings
        import torch, torch_green_contexts as tgc
        tgc.install()
        from torch.cuda.green_contexts import GreenContext
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ctx = GreenContext.create(16, 0)        # as torch 2.9-2.14 code and tests call it
            one = GreenContext.create(8)           # device 0, as there
            two = GreenContext.create(8, device_id=0)
        assert [w.category for w in caught] == [FutureWarning] * 3, caught
        text = str(caught[0].message)
        assert "GreenContext.create(num_sms=16, device_id=0)" in text and "torch 2.15" in text, text
        assert caught[0].filename == "<string>"  # it points at the caller
        assert ctx.sm_count >= 16 and ctx.device_id == 0 and one.device_id == 0 and two.sm_count >= 8
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # the keyword form does not warn
            GreenContext.create(num_sms=16, device_id=0)
        error = raised(lambda: GreenContext.create(16.5, 0))
        assert type(error) is TypeError and "num_sms" in str(error), error
        print("ok")
        """,
        version,
    )
    assert out.strip().splitlines()[-1] == "ok"
