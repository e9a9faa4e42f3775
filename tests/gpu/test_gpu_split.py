"""Disjoint splits on a real GPU: sizes, observed SM ids, correctness, errors."""

import gc
import itertools

import pytest
import torch

from torch_green_contexts import GreenContext, SMPartition, SplitError, observed_sm_ids

from .conftest import gemm_check


def check_disjoint_contexts(contexts, expected_counts=None):
    """Each context's observed SMs number its sm_count, siblings' are disjoint, work is right."""
    observed = []
    for i, ctx in enumerate(contexts):
        if expected_counts is not None:
            assert ctx.sm_count == expected_counts[i], (i, ctx.sm_count, expected_counts)
        stream = ctx.Stream()
        ids = observed_sm_ids(stream)
        assert len(ids) == ctx.sm_count, (i, len(ids), ctx.sm_count)
        gemm_check(stream)
        observed.append(set(ids))
    for (i, a), (j, b) in itertools.combinations(enumerate(observed), 2):
        assert not (a & b), f"contexts {i} and {j} share SMs {sorted(a & b)}"
    return observed


def test_split_16_116(whole):
    rest = whole.sm_count - 16
    contexts = GreenContext.split(num_sms=(16, rest))
    check_disjoint_contexts(contexts, [16, rest])


def test_split_24_40():
    contexts = GreenContext.split(num_sms=(24, 40), coscheduled_sm_count=8)
    check_disjoint_contexts(contexts, [24, 40])
    check_disjoint_contexts(GreenContext.split(num_sms=(24, 40)), [24, 40])


def test_split_many_equal_groups(whole, granularity):
    # as many groups of the granularity as the layout holds (15 on an H200)
    fits = 0
    for n in range(whole.sm_count // granularity, 0, -1):
        try:
            contexts = GreenContext.split(num_sms=(granularity,) * n)
        except ValueError as error:
            assert "fit" in str(error)
            continue
        fits = n
        break
    assert fits >= 1
    check_disjoint_contexts(contexts, [granularity] * fits)
    if fits < whole.sm_count // granularity:
        # Either split path names the first group that does not fit.
        with pytest.raises(SplitError) as refused:
            GreenContext.split(num_sms=(granularity,) * (fits + 1))
        assert (refused.value.group, refused.value.num_sms) == (fits, granularity), str(refused.value)


def test_split_discovery_single():
    (ctx,) = GreenContext.split(num_sms=(0,))
    assert ctx.sm_count > 0
    check_disjoint_contexts([ctx])
    (part,), remainder = SMPartition.from_device().split(num_sms=0)
    assert part.sm_count == ctx.sm_count
    assert remainder is None or remainder.sm_count == SMPartition.from_device().sm_count - part.sm_count


def test_split_backfill_last(whole):
    contexts = GreenContext.split(num_sms=(16, 0), backfill=(False, True))
    check_disjoint_contexts(contexts, [16, whole.sm_count - 16])


def test_split_coscheduled_two_even_counts():
    contexts = GreenContext.split(num_sms=(2, 6, 10), coscheduled_sm_count=2)
    check_disjoint_contexts(contexts, [2, 6, 10])


def test_split_chain(whole, granularity):
    (first,), remainder = whole.split(num_sms=2 * granularity)
    assert remainder is not None
    assert first.sm_count + remainder.sm_count == whole.sm_count
    rest_ctx = GreenContext(sm_partition=remainder)
    assert rest_ctx.sm_count == remainder.sm_count
    (second, third), rest2 = rest_ctx.sm_partition.split(num_sms=(granularity, 3 * granularity))
    contexts = [GreenContext(sm_partition=p) for p in (first, second, third)]
    if rest2 is not None:
        contexts.append(GreenContext(sm_partition=rest2))
    counts = [2 * granularity, granularity, 3 * granularity]
    observed = check_disjoint_contexts(contexts)
    assert [c.sm_count for c in contexts[:3]] == counts
    assert sum(len(s) for s in observed) == whole.sm_count


def test_split_remainder_and_groups_disjoint(whole):
    groups, remainder = whole.split(num_sms=(16, 32))
    assert remainder is not None
    assert [g.sm_count for g in groups] + [remainder.sm_count] == [16, 32, whole.sm_count - 48]
    contexts = [GreenContext(sm_partition=p) for p in (*groups, remainder)]
    check_disjoint_contexts(contexts)


def test_split_whole_device_in_one_group(whole):
    groups, remainder = whole.split(num_sms=whole.sm_count)
    assert groups[0].sm_count == whole.sm_count and remainder is None


def test_partitions_keep_parents_alive(whole, granularity, live):
    ctx = GreenContext(num_sms=4 * granularity)
    groups, _ = ctx.sm_partition.split(num_sms=(granularity, granularity))
    del ctx
    gc.collect()
    assert live()["contexts"] == 1
    contexts = [GreenContext(sm_partition=g) for g in groups]
    check_disjoint_contexts(contexts, [granularity, granularity])


def test_internal_contexts_released(whole, live):
    groups, remainder = whole.split(num_sms=(16, 24, 32))
    assert live()["internal_contexts"] >= 1
    del groups, remainder
    gc.collect()
    assert live()["internal_contexts"] == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_sms": 7}, "num_sms=7"),
        ({"num_sms": (16, 9)}, "nearest counts"),
        ({"num_sms": (96, 96)}, "more than"),
        ({"num_sms": (64, 64, 8)}, "more than"),
        ({"num_sms": 10**4}, "more than"),
        ({"num_sms": (0, 16), "backfill": (True, False)}, "last group"),
        ({"num_sms": ()}, "empty"),
        ({"num_sms": (8, 8), "coscheduled_sm_count": (8, 8, 8)}, "same length"),
        ({"num_sms": -8}, "non-negative"),
        ({"num_sms": (8, -8)}, "non-negative"),
        ({"num_sms": True}, "num_sms"),
        ({"num_sms": 8.0}, "num_sms"),
        ({"num_sms": "8"}, "num_sms"),
        ({"num_sms": None}, "num_sms"),
        ({"backfill": 1}, "backfill"),
        ({"backfill": None}, "backfill"),
        ({"coscheduled_sm_count": -2}, "coscheduled_sm_count"),
        ({"coscheduled_sm_count": 1.5}, "coscheduled_sm_count"),
        ({"preferred_coscheduled_sm_count": "x"}, "preferred_coscheduled_sm_count"),
        ({"locality_domain_ids": -1}, "locality_domain_ids"),
    ],
)
def test_bad_split_requests(kwargs, match, whole):
    with pytest.raises(ValueError, match=match):
        whole.split(**kwargs)
    with pytest.raises(ValueError, match=match):
        GreenContext.split(**kwargs)
    gemm_check(torch.cuda.current_stream())


def test_odd_count_needs_coscheduled_two(whole, driver_version):
    if driver_version >= 13010:
        pytest.skip("the native split applies the driver's own rules")
    with pytest.raises(ValueError, match="nearest counts it can give: 8, 16"):
        whole.split(num_sms=10)
    groups, _ = whole.split(num_sms=10, coscheduled_sm_count=2)
    assert groups[0].sm_count == 10
    with pytest.raises(ValueError, match="nearest"):
        whole.split(num_sms=11, coscheduled_sm_count=2)


def test_unsupported_coscheduled_count_on_emulated_path(whole, driver_version):
    if driver_version >= 13010:
        pytest.skip("native path")
    with pytest.raises(ValueError, match="coscheduled_sm_count=4"):
        whole.split(num_sms=8, coscheduled_sm_count=4)


def test_locality_needs_13_4(whole, driver_version):
    if driver_version >= 13040:
        pytest.skip("driver has locality domains")
    with pytest.raises(RuntimeError, match=r"13\.4"):
        whole.split(num_sms=16, locality_domain_ids=0)
    with pytest.raises(RuntimeError, match=r"13\.4"):
        GreenContext.split(num_sms=(16, 16), locality_domain_ids=(0, None))


def test_resplitting_raw_group_refused(whole):
    groups, remainder = whole.split(num_sms=(16, 16))
    for part in (groups[0], remainder):
        with pytest.raises(ValueError, match="GreenContext"):
            part.split(num_sms=8)
    # the documented way works
    (inner,), _ = GreenContext(sm_partition=groups[0]).sm_partition.split(num_sms=8)
    assert inner.sm_count == 8
    gemm_check(torch.cuda.current_stream())
