"""Split errors against the simulated driver that need a fresh interpreter: a
TORCH_GREEN_CONTEXTS_IDLE_LIMIT that is not a whole number fails every split (the variable is
read once). tests/sim/test_errors.py has a count a split cannot give, the same ValueError on
both split paths."""

from __future__ import annotations

import pytest

from tests._sim import needs_sim, run_on_sim


@needs_sim
@pytest.mark.parametrize("value, ok", [("abc", False), ("-1", False), ("4k", False), (" 5", False), ("5", True),
                                       ("0", True), ("", True), ("99999999999999999999", False),
                                       ("18446744073709551615", True)])
def test_the_idle_limit_variable_is_refused_unless_a_whole_number(value, ok):
    out = run_on_sim(
        f"""
        from torch_green_contexts import GreenContext
        error = None
        try:
            GreenContext(num_sms=8, device_id=0)
            GreenContext.split(num_sms=(8, 8), device_id=0)
        except Exception as e:
            error = e
        if {ok!r}:
            assert error is None, error
        else:
            assert type(error) is ValueError, repr(error)
            assert "TORCH_GREEN_CONTEXTS_IDLE_LIMIT={value!r}" in str(error) and "whole number" in str(error), error
        print("ok")
        """,
        13000, TORCH_GREEN_CONTEXTS_IDLE_LIMIT=value,
    )
    assert out.strip() == "ok"
