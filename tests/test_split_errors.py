"""A count a split cannot give is the same SplitError (a ValueError) on both split paths: on the
native one (driver 13.1+, cuDevSmResourceSplit) it names the group, the count and the nearest
counts, as the emulated path does, in its text and its attributes, against the simulated driver."""

from __future__ import annotations

import pytest

from tests._sim import needs_sim, run_on_sim


@needs_sim
@pytest.mark.parametrize("version", [13000, 13010, 13040])
def test_a_count_the_split_cannot_give_is_a_split_error_naming_group_count_and_nearest(version):
    out = run_on_sim(
        """
        from torch_green_contexts import SMPartition, SplitError
        whole = SMPartition.from_device(0)
        for counts, group, count, nearest in (([13], 0, 13, [8, 16]), ([16, 17], 1, 17, [16, 24])):
            error = raised(lambda: whole.split(num_sms=counts))
            assert type(error) is SplitError and isinstance(error, ValueError), repr(error)
            text = str(error)
            assert f"group {group}: num_sms={count} cannot be given" in text, text
            assert "nearest counts it can give: " + ", ".join(map(str, nearest)) in text, text
            assert (error.group, error.num_sms, error.nearest_counts) == (group, count, nearest), text
        error = raised(lambda: whole.split(num_sms=[100, 100]))
        assert type(error) is SplitError and error.group is None and error.num_sms == 200, repr(error)
        (a, b), _ = whole.split(num_sms=[16, 24])  # and the driver still splits what fits
        assert (a.sm_count, b.sm_count) == (16, 24)
        print("native" if SIM.tgc_sim_calls(b"cuDevSmResourceSplit") else "emulated")
        """,
        version,
    )
    assert out.strip() == ("emulated" if version < 13010 else "native")


@needs_sim
@pytest.mark.parametrize("value, ok", [("abc", False), ("-1", False), ("4k", False), (" 5", False), ("5", True),
                                       ("0", True), ("", True)])
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
