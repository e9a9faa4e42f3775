"""Argument checks that need no driver: they fail the same way with or without a GPU."""

import pytest

from torch_green_contexts import GreenContext, SMPartition
from torch_green_contexts._native import _C
from torch_green_contexts._split_args import split_groups
from torch_green_contexts._validation import check_workqueue


def test_nothing_given_is_runtime_error():
    with pytest.raises(RuntimeError, match="num_sms, sm_partition or workqueue_scope"):
        GreenContext()
    with pytest.raises(RuntimeError):
        GreenContext.create()


def test_num_sms_and_partition_exclusive():
    with pytest.raises(ValueError, match="mutually exclusive"):
        GreenContext(num_sms=8, sm_partition=object())


@pytest.mark.parametrize("value", [True, False, 1.5, "8", b"8", [8], 8.0, object()])
def test_num_sms_type(value):
    with pytest.raises(TypeError, match="num_sms"):
        GreenContext(num_sms=value)
    with pytest.raises(TypeError, match="num_sms"):
        GreenContext.create(num_sms=value)


@pytest.mark.parametrize("value", ["all", 8, 1.0, [1]])
def test_sm_partition_type(value):
    with pytest.raises(TypeError, match="SMPartition"):
        GreenContext(sm_partition=value)


def test_keyword_only():
    with pytest.raises(TypeError):
        GreenContext(8)
    with pytest.raises(TypeError):
        GreenContext.split((8, 8))
    # create alone also takes torch 2.9-2.14's (num_sms, device_id), with a FutureWarning
    # (tests/test_older_torch_code.py); three positions are too many.
    with pytest.raises(TypeError, match="at most 2 positional"):
        GreenContext.create(8, 0, 1)


def test_partition_not_constructible():
    with pytest.raises(TypeError, match="from_device"):
        SMPartition()


@pytest.mark.parametrize("scope", ["", "shared", "BALANCED", 0, 1.0, b"balanced"])
def test_bad_workqueue_scope(scope):
    with pytest.raises(ValueError, match="device_ctx"):
        GreenContext(num_sms=8, workqueue_scope=scope)


def test_limit_needs_scope():
    with pytest.raises(RuntimeError, match="workqueue_scope"):
        GreenContext(num_sms=8, workqueue_concurrency_limit=4)
    with pytest.raises(RuntimeError, match="workqueue_scope"):
        GreenContext.split(num_sms=8, workqueue_concurrency_limit=4)


def test_limit_values():
    # the scope as the bindings take it
    assert check_workqueue("balanced", 4) == (_C.WorkqueueScope.balanced, 4)
    assert check_workqueue("device_ctx", None) == (_C.WorkqueueScope.device_ctx, None)
    assert check_workqueue(None, None) == (None, None)
    with pytest.raises(ValueError, match="1 or more"):
        check_workqueue("balanced", 0)
    with pytest.raises(TypeError):
        check_workqueue("balanced", 2.5)
    with pytest.raises(TypeError):
        check_workqueue("balanced", True)


def test_device_id_type():
    with pytest.raises(TypeError, match="device_id"):
        GreenContext(num_sms=8, device_id="0")
    with pytest.raises(TypeError, match="device_id"):
        GreenContext(num_sms=8, device_id=True)
    with pytest.raises(RuntimeError, match="device_id"):
        GreenContext(num_sms=8, device_id=-1)


class TestSplitGroups:
    def test_scalars_make_one_group(self):
        assert split_groups(16, 0, 0, False, None) == [(16, 0, 0, False, None)]

    def test_scalars_broadcast(self):
        assert split_groups((16, 24), 8, 0, False, None) == [
            (16, 8, 0, False, None),
            (24, 8, 0, False, None),
        ]
        assert split_groups(8, (2, 8), 0, (False, True), None) == [
            (8, 2, 0, False, None),
            (8, 8, 0, True, None),
        ]

    def test_lists_and_tuples(self):
        assert split_groups([2, 6, 10], [2, 2, 2], 0, False, [None, 1, None]) == [
            (2, 2, 0, False, None),
            (6, 2, 0, False, 1),
            (10, 2, 0, False, None),
        ]

    def test_empty_sequence(self):
        with pytest.raises(ValueError, match="num_sms is an empty sequence"):
            split_groups((), 0, 0, False, None)
        with pytest.raises(ValueError, match="backfill is an empty sequence"):
            split_groups(8, 0, 0, [], None)

    def test_length_mismatch(self):
        with pytest.raises(ValueError, match="same length"):
            split_groups((8, 8), (8, 8, 8), 0, False, None)

    @pytest.mark.parametrize("bad", [-1, True, 1.5, "8", None, 2**40])
    def test_bad_counts(self, bad):
        with pytest.raises(ValueError, match="num_sms"):
            split_groups(bad, 0, 0, False, None)
        with pytest.raises(ValueError, match="num_sms"):
            split_groups((8, bad), 0, 0, False, None)
        with pytest.raises(ValueError, match="coscheduled_sm_count"):
            split_groups(8, bad, 0, False, None)
        with pytest.raises(ValueError, match="preferred_coscheduled_sm_count"):
            split_groups(8, 0, bad, False, None)

    @pytest.mark.parametrize("bad", [1, 0, None, "yes"])
    def test_bad_backfill(self, bad):
        with pytest.raises(ValueError, match="backfill"):
            split_groups(8, 0, 0, bad, None)

    @pytest.mark.parametrize("bad", [-1, True, 0.5, "0"])
    def test_bad_locality(self, bad):
        with pytest.raises(ValueError, match="locality_domain_ids"):
            split_groups(8, 0, 0, False, bad)

    def test_backfill_discovery_only_last(self):
        # a rule between groups: split_groups only broadcasts, the core refuses (before any
        # driver call, so with or without a GPU)
        assert split_groups((16, 0), 0, 0, (False, True), None)[-1] == (0, 0, 0, True, None)
        assert split_groups((0, 16), 0, 0, (True, False), None)[0] == (0, 0, 0, True, None)
        with pytest.raises(ValueError, match=r"group 0: .*only be the last group \(there are 2 groups\)"):
            GreenContext.split(num_sms=(0, 16), backfill=(True, False))
        with pytest.raises(ValueError, match="only be the last group"):
            GreenContext.split(num_sms=(0, 0), backfill=True)

    def test_split_methods_validate_before_the_driver(self):
        # these fail on argument checks alone, with or without a GPU
        with pytest.raises(ValueError, match="empty"):
            GreenContext.split(num_sms=())
        with pytest.raises(ValueError, match="backfill"):
            GreenContext.split(num_sms=8, backfill=1)


def test_the_shared_int_and_number_checks():
    import fractions
    import math

    import numpy as np

    from torch_green_contexts import _validation as v

    assert [v.is_int(x) for x in (3, np.int64(3), True, 3.0, "3", None)] == [True, True, False, False, False, False]
    assert [v.is_number(x) for x in (3, 2.5, np.float32(0.5), fractions.Fraction(1, 2), False, "1", None)] == [
        True, True, True, True, False, False, False]
    assert v.as_count("n", np.int64(7)) == 7 and type(v.as_count("n", np.int64(7))) is int
    with pytest.raises(TypeError, match=r"^n must be an int or None, not bool \(True\)$"):
        v.as_count("n", True, "an int or None")
    with pytest.raises(ValueError, match=r"^n must be 2 or more, got 1$"):
        v.as_int_at_least("n", 1, 2)
    assert v.as_int_at_least("n", 4, 1) == 4
    for bad in (True, 1.5, "4"):
        with pytest.raises(TypeError, match=r"^n must be an int"):
            v.as_int_at_least("n", bad, 1)
    assert v.as_bool("flag", False) is False
    with pytest.raises(TypeError, match="^flag must be a bool, got int$"):
        v.as_bool("flag", 1)
    assert v.as_finite("x", 3) == 3.0
    for bad in (True, "1", None):
        with pytest.raises(TypeError, match="^x must be a finite number, got "):
            v.as_finite("x", bad)
    for bad in (math.inf, -math.inf, math.nan):  # a number of the wrong value: one type
        with pytest.raises(ValueError, match="^x must be a finite number, got "):
            v.as_finite("x", bad)
    assert v.as_number_in("share", 0.5, below=1.0) == 0.5
    with pytest.raises(ValueError, match=r"^share must be at least 0 and below 1 \(a share\), got 1$"):
        v.as_number_in("share", 1, below=1.0, meaning=" (a share)")
    with pytest.raises(ValueError, match="^share must be at least 0, got -1$"):
        v.as_number_in("share", -1)
    assert v.as_positive_us("t", 20) == 20.0
    with pytest.raises(TypeError, match="^t must be a number of microseconds, got '1'$"):
        v.as_positive_us("t", "1")
    for bad in (0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="^t must be a positive number of microseconds, got "):
            v.as_positive_us("t", bad)
