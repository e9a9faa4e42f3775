"""SMPartition.union of split pieces against the simulated driver, and the overlapped layouts
built on it: contexts on exactly the pieces' SMs, and the rules as ValueErrors."""

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, SMPartition
from torch_green_contexts.layouts import Layouts


@pytest.mark.driver_versions(12040, 13000, 13010, 13040)
def test_unions_of_split_pieces_against_the_simulated_driver(fails):
    whole = SMPartition.from_device(0)
    groups, rest = whole.split(num_sms=(8, 16, 0), coscheduled_sm_count=2, backfill=(False, False, True))
    # (8, 16) are two driver splits below 13.1: only pieces of one of them combine there.
    eights, _ = whole.split(num_sms=(8, 8, 8, 0), coscheduled_sm_count=2, backfill=(False, False, False, True))
    shared = eights[3]
    latency = SMPartition.union(eights[0], shared)
    batch = SMPartition.union(eights[1], eights[2], shared)
    assert (latency.sm_count, batch.sm_count) == (8 + shared.sm_count, 16 + shared.sm_count)
    assert latency.device_id == 0 and "SMPartition(" in repr(latency)
    assert GreenContext(sm_partition=latency).sm_count == latency.sm_count
    assert GreenContext(sm_partition=batch).sm_count == batch.sm_count
    assert SMPartition.union(eights[1]).sm_count == 8
    fails(lambda: latency.split(num_sms=8), ValueError, "cannot split again")
    fails(lambda: SMPartition.union(), ValueError, "at least one")
    fails(lambda: SMPartition.union(eights[0], eights[0]), ValueError, "overlap")
    fails(lambda: SMPartition.union(eights[0], groups[1]), ValueError, "different split() calls")
    fails(lambda: SMPartition.union(whole, eights[0]), ValueError, "whole device")
    fails(lambda: SMPartition.union(eights[0], "x"), TypeError, "SMPartition objects")
    default_aligned, remainder = whole.split(num_sms=(8, 8))
    fails(lambda: SMPartition.union(default_aligned[0], remainder), ValueError, "cannot combine")
    if tgc.driver_version() < 13010:
        fails(lambda: SMPartition.union(groups[0], groups[1]), ValueError, "groups of one size")
    else:
        assert SMPartition.union(groups[0], groups[1]).sm_count == 24
    for pairs, text in (([(12, 16)], "multiples of 8"), ([(0, 0)], "at least one floor"),
                        ([(64, 72)], "leaving none to share"), ([(8, 8), (8, 8)], "repeated floors"),
                        ([(8,)], "pairs"), ([(8, -8)], "multiples of 8")):
        fails(lambda: Layouts(overlapped=pairs, device_id=0), ValueError, text)
    fails(lambda: Layouts(device_id=0), ValueError, "at least one layout")
    fails(lambda: Layouts(overlapped=[(8, 8.0)], device_id=0), TypeError, "ints")
