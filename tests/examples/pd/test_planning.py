"""The prefill/decode example's bookkeeping (examples/pd/planning.py): buckets, chunked-prefill
composition, prefill pieces, the static split's candidates from both SLOs, layout counts and
memory. Plain Python, no GPU."""

from __future__ import annotations

import pytest

from examples.pd.engine.admission import Live, PrefillQueue
from examples.pd.engine.shape import ModelShape, kv_cache_bytes
from examples.pd.engine.planning import PrefillCursor, bucket_for, bucket_list, compose_chunked
from examples.pd.bench.candidates import layout_counts
from examples.pd.engine.request import Request


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


def test_chunked_plan_puts_every_decode_first_then_fills_the_budget():
    decoding = [live(i, 100, tokens=3) for i in range(5)]
    q = PrefillQueue()
    for x in (live(10, 2000), live(11, 10)):
        q.add(x)
    plan = compose_chunked(decoding, q, 512)
    assert plan.decode == tuple(decoding)
    assert [(p.live.request.id, p.length) for p in plan.parts] == [(10, 507)]
    assert plan.tokens == 512
    assert compose_chunked([], PrefillQueue(), 512).tokens == 0
    assert decoding[0].decode_row() == (0, 103)  # the prompt and three output tokens


def test_prefill_cursor_cuts_batches_into_layer_blocks():
    cursor = PrefillCursor(chunk=100, layers=5, piece_layers=2)
    assert not cursor.busy and cursor.next_piece() is None and cursor.tokens == 0
    first, second = live(0, 150), live(1, 30)
    for x in (first, second):
        cursor.add(x)
    assert cursor.tokens == 180
    pieces = [cursor.next_piece()]
    assert cursor.in_batch() == [first]
    assert cursor.tokens == 80 + 100 * 3 // 5  # the queue's and three fifths of the batch's layers
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


def test_layout_counts_keep_the_ends_and_what_the_device_gives():
    available = [8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 132]
    assert layout_counts([0, 16, 24, 32, 48, 64, 96, 132], available, 132) == (
        [0, 16, 24, 32, 48, 64, 96, 132], [])
    assert layout_counts([0, 20, 16, 132, 16], available, 132) == ([0, 16, 132], [20])
