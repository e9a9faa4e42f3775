"""NumPy and torch values as counts and flags, and integers wider than the core takes, without a
driver: the split options take integer and boolean arrays and tensors as they take lists, every
count takes NumPy's and torch's integer scalars, and what is refused (floats, bools as counts,
arrays of more dimensions, iterators) is refused with one message naming what it got."""

import pytest
import torch

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext
from torch_green_contexts import _validation as v
from torch_green_contexts._split_args import split_groups

np = pytest.importorskip("numpy")


def _groups(num_sms, coscheduled=0, backfill=False, locality=None):
    return split_groups(num_sms, coscheduled, 0, backfill, locality)


@pytest.mark.parametrize("counts", [
    [16, 32], (16, 32), range(16, 33, 16), np.array([16, 32]), np.array([16, 32], dtype=np.uint32),
    torch.tensor([16, 32]), torch.tensor([16, 32], dtype=torch.int32), [np.int64(16), torch.tensor(32)],
])
def test_integer_arrays_and_tensors_are_sequences_of_counts(counts):
    assert _groups(counts) == [(16, 0, 0, False, None), (32, 0, 0, False, None)]
    groups = _groups(counts, coscheduled=np.array([8, 2]), backfill=(False, np.bool_(True)),
                     locality=np.array([0, 1]))
    assert groups == [(16, 8, 0, False, 0), (32, 2, 0, True, 1)]
    assert all(type(x) is int for group in groups for x in group[:3])
    assert all(type(group[3]) is bool for group in groups)


@pytest.mark.parametrize("flags", [
    (False, np.bool_(True)), np.array([False, True]), torch.tensor([False, True]), [torch.tensor(False), True],
])
def test_boolean_arrays_and_scalars_are_backfill_flags(flags):
    assert [g[3] for g in _groups((16, 0), backfill=flags)] == [False, True]


def test_zero_dimensional_arrays_and_numpy_scalars_broadcast_as_scalars():
    for scalar in (np.int64(16), np.array(16), torch.tensor(16)):
        assert _groups(scalar, backfill=np.bool_(False)) == [(16, 0, 0, False, None)]
    assert _groups((16, 24), coscheduled=np.int32(8)) == [(16, 8, 0, False, None), (24, 8, 0, False, None)]
    assert _groups(np.array([8]), backfill=torch.tensor(True))[0][3] is True


@pytest.mark.parametrize("counts, shown", [
    (np.array([16.0, 32.0]), "np.float64(16.0)"),
    (torch.tensor([16.0, 32.0]), "tensor(16.)"),
    (np.array([True, False]), "np.True_"),
    (torch.tensor([True, False]), "tensor(True)"),
    ((16, np.bool_(True)), "np.True_"),
])
def test_float_and_bool_arrays_are_not_counts(counts, shown):
    with pytest.raises(ValueError, match=r"^num_sms entries must be non-negative ints, got ") as error:
        _groups(counts)
    assert shown in str(error.value)


@pytest.mark.parametrize("flags", [np.array([0, 1]), torch.tensor([0, 1]), (False, np.int64(1))])
def test_integers_are_not_backfill_flags(flags):
    with pytest.raises(ValueError, match=r"^backfill entries must be bools, got "):
        _groups((16, 0), backfill=flags)


@pytest.mark.parametrize("value, what", [
    (iter([16, 32]), "a list_iterator"), ((c for c in (16, 32)), "a generator"), ({16, 32}, "a set"),
    ({16: 0}, "a dict"), ({16: 0}.keys(), "a dict_keys"),
])
def test_iterables_without_length_or_order_are_named_for_what_they_are(value, what):
    with pytest.raises(ValueError) as error:
        _groups(value)
    assert str(error.value) == (
        f"num_sms must be a scalar or a sequence (a list, tuple or range, or a one-dimensional NumPy array or "
        f"torch tensor), got {what}; pass list(...) of it")
    with pytest.raises(ValueError, match=f"^backfill must be a scalar or a sequence .*got {what}"):
        _groups(16, backfill=value)


def test_arrays_of_more_dimensions_and_empty_arrays():
    with pytest.raises(ValueError, match="^num_sms must be a scalar or one-dimensional, got a 2-dimensional ndarray$"):
        _groups(np.array([[16, 32]]))
    with pytest.raises(ValueError, match="^backfill must be a scalar or one-dimensional, got a 2-dimensional Tensor$"):
        _groups(16, backfill=torch.tensor([[True]]))
    with pytest.raises(ValueError, match="num_sms is an empty sequence"):
        _groups(np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match=r"same length \(num_sms has 2, coscheduled_sm_count has 3\)"):
        _groups(torch.tensor([16, 32]), coscheduled=np.array([8, 8, 8]))


def test_scalar_counts_take_numpy_and_torch_integers_but_no_bools_floats_or_arrays():
    for value in (np.int64(7), np.uint8(7), np.array(7), torch.tensor(7)):
        assert v.as_count("n", value) == 7 and type(v.as_count("n", value)) is int
        assert v.is_int(value)
    for value in (np.bool_(True), np.array(True), torch.tensor(True)):
        assert not v.is_int(value)
        with pytest.raises(TypeError, match=r"^n must be an int, not bool "):
            v.as_count("n", value)
    for value, name in ((np.float64(7.0), "float64"), (torch.tensor(7.0), "Tensor"), (np.array([7]), "ndarray"),
                        (torch.tensor([7]), "Tensor")):
        assert not v.is_int(value)
        with pytest.raises(TypeError, match=f"^n must be an int, got {name} "):
            v.as_count("n", value)
    for value in (np.bool_(False), np.array(False), torch.tensor(False)):
        assert v.as_bool("flag", value) is False
    with pytest.raises(TypeError, match="^flag must be a bool, got int64$"):
        v.as_bool("flag", np.int64(0))


@pytest.mark.parametrize("value", [np.bool_(True), torch.tensor(True), torch.tensor([16]), np.array([16]),
                                   np.float32(16), torch.tensor(16.0)])
def test_green_context_refuses_what_is_not_an_int_count(value):
    with pytest.raises(TypeError, match="^num_sms must be an int"):
        GreenContext(num_sms=value)


def test_integers_wider_than_the_core_takes_are_named_not_refused_by_the_bindings():
    with pytest.raises(RuntimeError, match=r"^limit must be between 0 and 18446744073709551615 idle green contexts, "
                                           r"got 1000000000000000000000000000000$"):
        tgc.set_idle_context_limit(10**30)
    with pytest.raises(ValueError, match=r"^limit must be 0 or more, got -1$"):
        tgc.set_idle_context_limit(-1)
    with pytest.raises(ValueError, match=r"^workqueue_concurrency_limit must be between 1 and 4294967295, "
                                         r"got 1099511627776$"):
        v.check_workqueue("balanced", 2**40)
    assert v.check_workqueue("balanced", np.int32(3))[1] == 3
    assert [v.for_the_core(n) for n in (5, 2**70, -2**70, 2**63 - 1)] == [5, 2**63 - 1, -2**63, 2**63 - 1]
    assert v.as_device_id(2**80) == 2**63 - 1 and v.as_device_id(np.int64(0)) == 0
    # With or without a driver, never the bindings' "incompatible function arguments".
    for call in (lambda: GreenContext(num_sms=2**70), lambda: GreenContext(num_sms=16, device_id=2**80),
                 lambda: GreenContext.split(num_sms=16, device_id=2**80), lambda: tgc.SMPartition.from_device(2**80),
                 lambda: GreenContext.max_workqueue_concurrency(2**80)):
        with pytest.raises(RuntimeError) as error:
            call()
        assert "incompatible function arguments" not in str(error.value)
