"""One split request, one result on every driver: the emulated split (12.4 to 13.0) and the
driver's own (13.1+) give a last group asking for exactly the SMs the groups before it leave,
name the request that gives it the rest where they cannot give its count, and refuse
co-scheduled counts the driver cannot take with one ValueError, before the driver splits."""

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, SMPartition

pytestmark = pytest.mark.driver_versions(12040, 13000, 13010, 13040)

REST_FORM = ("to give the last group every SM the groups before it leave, on every driver, ask for "
             "num_sms=(16, 0), backfill=(False, True)")


def test_a_last_group_asking_for_the_sms_left_gets_them():
    whole = SMPartition.from_device(0)
    for counts in ((16, 116), (24, 40, 68), (132,), (120, 12)):
        groups, remainder = whole.split(num_sms=counts)
        assert tuple(g.sm_count for g in groups) == counts and remainder is None, counts
    contexts = GreenContext.split(num_sms=(16, 116), device_id=0)
    assert [c.sm_count for c in contexts] == [16, 116]
    # The form the errors name gives the same.
    (a, b), remainder = whole.split(num_sms=(16, 0), backfill=(False, True))
    assert (a.sm_count, b.sm_count, remainder) == (16, 116, None)


def test_a_last_count_that_cannot_be_given_names_the_request_for_the_rest(raised):
    whole = SMPartition.from_device(0)
    for call in (lambda: whole.split(num_sms=(16, 100)), lambda: GreenContext.split(num_sms=(16, 100), device_id=0)):
        error = raised(call)
        assert type(error) is tgc.SplitError, repr(error)
        assert (error.group, error.num_sms, error.nearest_counts) == (1, 100, [96, 104]), str(error)
        assert str(error).endswith("nearest counts it can give: 96, 104; " + REST_FORM), str(error)
    error = raised(lambda: whole.split(num_sms=(16, 130)))
    assert type(error) is tgc.SplitError and error.group is None and str(error).endswith(REST_FORM), str(error)
    error = raised(lambda: whole.split(num_sms=(12, 16)))  # about the first group: no such request
    assert type(error) is tgc.SplitError and "every driver" not in str(error), str(error)


@pytest.mark.parametrize("coscheduled", [3, (8, 5), 34])
def test_a_coscheduled_count_the_driver_cannot_take_is_a_value_error_before_it_splits(coscheduled, raised, calls):
    whole = SMPartition.from_device(0)
    native = calls("cuDevSmResourceSplit")
    bad = coscheduled[1] if isinstance(coscheduled, tuple) else coscheduled
    for call in (lambda: whole.split(num_sms=(16, 24), coscheduled_sm_count=coscheduled),
                 lambda: GreenContext.split(num_sms=(16, 24), coscheduled_sm_count=coscheduled, device_id=0)):
        error = raised(call)
        assert type(error) is ValueError, repr(error)
        version = tgc.driver_version()
        expected = f"coscheduled_sm_count={bad} cannot be honoured on driver {version // 1000}.{version % 1000 // 10}"
        assert str(error).startswith(expected) and "allowed there: 0 (the default, 8), 1" in str(error), str(error)
    assert calls("cuDevSmResourceSplit") == native
    # No co-scheduling (1): counts in units of 2 on every driver.
    groups, _ = whole.split(num_sms=(6, 10), coscheduled_sm_count=1)
    assert [g.sm_count for g in groups] == [6, 10]
