"""The prefill/decode example's bookkeeping (examples/pd/planning.py): slots and admission,
buckets, chunked-prefill composition, prefill pieces, the static split's candidates from a
profile, layout counts and memory. Plain Python, no GPU."""

from __future__ import annotations

from collections import deque

import pytest

from examples.pd.planning import (Admission, Live, ModelShape, PrefillCursor, bucket_for, bucket_list, bucket_reached,
                                  compose_chunked, kv_cache_bytes, layout_counts, static_candidates, take_prefill)
from examples.pd.workload import Request


def live(i, prompt, output=10, slot=None, prefilled=0, tokens=0):
    return Live(Request(i, 0.0, prompt, output), i if slot is None else slot, prefilled, tokens)


def test_llama3_8b_shape_and_memory():
    shape = ModelShape()
    assert shape.kv_bytes_per_token() == 128 * 1024
    assert shape.weight_bytes() / 1e9 == pytest.approx(16.06, abs=0.01)  # 8.03 B parameters in bf16
    assert ModelShape(layers=8).kv_bytes_per_token() == 32 * 1024
    assert kv_cache_bytes(shape, slots=96, max_len=4608) == 97 * 4608 * 128 * 1024


def test_buckets():
    assert bucket_list((1, 8, 16, 32, 64, 128), 96) == [1, 8, 16, 32, 64, 96]
    assert bucket_list((8, 1, 8), 8) == [1, 8]
    b = [1, 8, 16]
    assert [bucket_for(n, b) for n in (1, 2, 8, 9, 16)] == [1, 8, 8, 16, 16]
    with pytest.raises(ValueError, match="exceeds the largest bucket, 16"):
        bucket_for(17, b)


def test_admission_is_fcfs_into_free_slots():
    trace = [Request(i, 0.1 * i, 100, 10) for i in range(5)]
    a = Admission(list(reversed(trace)), slots=2)
    assert a.next_arrival == 0.0 and not a.drained
    a.arrive(0.25)
    first = a.admit()
    assert [(x.request.id, x.slot) for x in first] == [(0, 0), (1, 1)]
    assert a.admit() == [] and a.held == 2
    a.release(first[1])
    a.arrive(1.0)
    assert [(x.request.id, x.slot) for x in a.admit()] == [(2, 1)]
    assert a.next_arrival is None and not a.drained  # 3 and 4 wait for slots
    with pytest.raises(ValueError):
        Admission(trace, 0)


def test_take_prefill_is_fcfs_and_splits_long_prompts():
    a, b, c = live(0, 300), live(1, 50), live(2, 400)
    q = deque([a, b, c])
    parts = take_prefill(q, 256)
    assert [(p.live, p.start, p.length, p.completes) for p in parts] == [(a, 0, 256, False)]
    parts = take_prefill(q, 256)
    assert [(p.live, p.start, p.length, p.completes) for p in parts] == [
        (a, 256, 44, True), (b, 0, 50, True), (c, 0, 162, False)]
    assert list(q) == [c] and c.prefilled == 162


def test_chunked_plan_puts_every_decode_first_then_fills_the_budget():
    decoding = [live(i, 100, tokens=3) for i in range(5)]
    q = deque([live(10, 2000), live(11, 10)])
    plan = compose_chunked(decoding, q, 512)
    assert plan.decode == tuple(decoding)
    assert [(p.live.request.id, p.length) for p in plan.parts] == [(10, 507)]
    assert plan.tokens == 512
    assert compose_chunked([], deque(), 512).tokens == 0
    assert decoding[0].decode_row() == (0, 103)  # the prompt and three output tokens


def test_prefill_cursor_cuts_batches_into_layer_blocks():
    cursor = PrefillCursor(chunk=100, layers=5, piece_layers=2)
    assert not cursor.busy and cursor.next_piece() is None
    for x in (live(0, 150), live(1, 30)):
        cursor.add(x)
    pieces = []
    while (p := cursor.next_piece()) is not None:
        pieces.append(p)
    assert [(p.batch.id, p.first_layer, p.last_layer) for p in pieces] == [
        (0, 0, 2), (0, 2, 4), (0, 4, 5), (1, 0, 2), (1, 2, 4), (1, 4, 5)]
    assert [p.starts for p in pieces] == [True, False, False, True, False, False]
    assert [p.ends for p in pieces] == [False, False, True, False, False, True]
    assert [(q.live.request.id, q.start, q.length, q.completes) for q in pieces[0].batch.parts] == [(0, 0, 100, False)]
    assert [(q.live.request.id, q.start, q.length, q.completes) for q in pieces[3].batch.parts] == [
        (0, 100, 50, True), (1, 0, 30, True)]
    assert not cursor.busy
    with pytest.raises(ValueError):
        PrefillCursor(0, 5, 1)


class FakeProfile:
    """p99 latency (us) per (bucket, SM count): falls with more SMs, rises with the bucket."""

    def latency(self, p, k):
        return None if k == 132 else 40000 * p / k


def test_static_candidates_start_at_the_smallest_count_meeting_the_slo():
    counts = [0, 16, 24, 32, 48, 64, 96, 132]
    lat = FakeProfile().latency
    # bucket 32: 24 SMs -> 53 ms, 32 -> 40 ms: 32 is the smallest meeting 40 ms.
    assert static_candidates(lat, counts, 132, 32, 40000) == [32, 24, 48]
    assert static_candidates(lat, counts, 132, 32, 40000, n=1) == [32]
    assert static_candidates(lat, counts, 132, 32, 40000, n=5) == [32, 24, 48, 16, 64]
    # Nothing meets: the largest count below all SMs, then its neighbours below.
    assert static_candidates(lat, counts, 132, 128, 1000) == [96, 64, 48]
    assert static_candidates(lat, counts, 132, 1, 1e9) == [16, 24, 32]
    with pytest.raises(ValueError, match="no SM count"):
        static_candidates(lat, [0, 132], 132, 1, 1000)


def test_bucket_reached_prefers_the_runs_that_met_the_slos():
    runs = [{"attainment": 1.0, "largest_bucket": 16}, {"attainment": 0.95, "largest_bucket": 32},
            {"attainment": 0.4, "largest_bucket": 96}]
    assert bucket_reached(runs, 0.9, 96) == 32
    assert bucket_reached(runs[2:], 0.9, 64) == 96
    assert bucket_reached([], 0.9, 64) == 64
    assert bucket_reached([{"attainment": 1.0, "largest_bucket": 0}], 0.9, 64) == 64  # no decode step


def test_layout_counts_keep_the_ends_and_what_the_device_gives():
    available = [8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 132]
    assert layout_counts([0, 16, 24, 32, 48, 64, 96, 132], available, 132) == (
        [0, 16, 24, 32, 48, 64, 96, 132], [])
    assert layout_counts([0, 20, 16, 132, 16], available, 132) == ([0, 16, 132], [20])
