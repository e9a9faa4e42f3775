"""Chunked prefill's graphed mixed iterations (examples/pd/mixed.py) on the CPU: the static
inputs a pass is packed into, and the pass over them (decode rows padded to one per slot, the
prompt rows in one variable-length attention call, through the SDPA path) against the eager
mixed pass of model.py. The graphs themselves, with flash attention, are compared on the GPU
(tests/gpu/test_gpu_pd.py)."""

from __future__ import annotations

import pytest
import torch

from examples.pd.engine.mixed import Inputs, mixed_pass, pack, token_buckets
from examples.pd.engine.model import Model, Part, prompt_tokens
from examples.pd.engine.shape import ModelShape

SHAPE = ModelShape(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=96, vocab=101)
MAX_LEN, SLOTS = 48, 4
SCRATCH = SLOTS


def model() -> Model:
    return Model(SHAPE, slots=SLOTS, max_len=MAX_LEN, device="cpu", dtype=torch.float32, attention="sdpa", seed=5)


def packed(decode, parts, completes, tokens):
    return Inputs.split(pack(decode, parts, completes, SLOTS, tokens, MAX_LEN, SCRATCH, SHAPE.vocab), SLOTS, tokens)


def test_token_buckets_grow_by_at_most_15_percent_up_to_the_budget_within_a_slot():
    assert token_buckets(512, 4608) == [64, 128, 192, 256, 320, 384, 448, 512]
    full = token_buckets(2048, 4608)
    assert full[:8] == [64, 128, 192, 256, 320, 384, 448, 512] and full[-1] == 2048
    assert all(b % 64 == 0 and (b - a == 64 or b <= a * 1.15) for a, b in zip(full[:-1], full[1:-1]))
    assert all(b <= a * 1.15 for a, b in zip(full, full[1:]) if a >= 448)
    assert token_buckets(300, 4608) == [64, 128, 192, 256, 300]
    assert token_buckets(2048, 1500)[-1] <= 1500 < token_buckets(2048, 4608)[len(token_buckets(2048, 1500))]
    assert token_buckets(48, 4608) == [48]


def test_pack_lays_out_rows_sequences_padding_and_picks():
    x = packed([(2, 7)], [Part(9, 1, 4, 3), Part(5, 3, 0, 2)], [True, False], 8)
    # The decode region: a row per slot, the unused ones on the scratch slot at length 1.
    assert x.dec_slot.tolist() == [2, SCRATCH, SCRATCH, SCRATCH] and x.dec_len.tolist() == [7, 1, 1, 1]
    # The prompt region: both parts, then 3 padding rows on the scratch slot.
    assert x.positions.tolist() == [4, 5, 6, 0, 1, 0, 1, 2]
    assert x.write.tolist() == [MAX_LEN + 4, MAX_LEN + 5, MAX_LEN + 6, 3 * MAX_LEN, 3 * MAX_LEN + 1,
                                SCRATCH * MAX_LEN, SCRATCH * MAX_LEN + 1, SCRATCH * MAX_LEN + 2]
    assert x.prompt[:3].tolist() == prompt_tokens(9, torch.tensor([4, 5, 6]), SHAPE.vocab).tolist()
    assert x.prompt[5:].tolist() == [0, 0, 0]
    # Its sequences: the two parts, the padding, then empty ones (SLOTS + 1 in all).
    assert x.cu_q.tolist() == [0, 3, 5, 8, 8, 8]
    assert x.cu_k.tolist() == [MAX_LEN, 3 * MAX_LEN, SCRATCH * MAX_LEN, 0, 0, 0]
    assert x.used.tolist() == [7, 2, 3, 0, 0]
    # Sampled: the decode row and the last row of the part completing its prompt (row 4 + 2).
    assert x.pick_row.tolist() == [0, SLOTS + 2, 0, 0] and x.pick_slot.tolist() == [2, 1, SCRATCH, SCRATCH]


def test_pack_refuses_a_pass_that_does_not_fit():
    with pytest.raises(ValueError, match="do not fit a pass of 4 decode rows and 3 prompt rows"):
        pack([(0, 3)], [Part(1, 1, 0, 4)], [True], SLOTS, 3, MAX_LEN, SCRATCH, SHAPE.vocab)
    with pytest.raises(ValueError, match="3 decode rows and 2 parts"):
        pack([(0, 3), (1, 2), (2, 2)], [Part(1, 3, 0, 4), Part(4, 5, 0, 1)], [True, True], SLOTS, 16, MAX_LEN,
             SCRATCH, SHAPE.vocab)


def eager(m: Model, decode, parts, completes):
    """The eager mixed pass (model.host_rows, attention per part) and its sampled tokens."""
    rows, tokens = m.host_rows(decode, parts)
    h = m.run_layers(m.embed(tokens), rows, 0, SHAPE.layers)
    pick = list(range(len(decode))) + [first + length - 1 for (first, length, _, _), done in zip(rows.parts, completes)
                                       if done]
    return m.head(h[pick])


@pytest.mark.parametrize("tokens", [9, 13, 32])
def test_the_packed_pass_matches_the_eager_one(tokens):
    """Two decode rows (padded to four) and a prompt continuing after earlier tokens and a first
    chunk of another (padded to ``tokens`` rows): the same K/V in every request's slot, the same
    sampled tokens, and the padding writes only the scratch slot."""
    graphed, ref = model(), model()
    for m in (graphed, ref):
        for request, slot, n in ((0, 0, 9), (1, 1, 4), (3, 3, 2)):
            rows, toks = m.host_rows([], [Part(request, slot, 0, n)])
            m.run_layers(m.embed(toks), rows, 0, SHAPE.layers)
        m.last_token[0], m.last_token[1] = 17, 23
    decode, parts, completes = [(1, 5), (0, 10)], [Part(3, 3, 2, 3), Part(2, 2, 0, 6)], [True, False]
    sampled = mixed_pass(graphed, packed(decode, parts, completes, tokens), tokens)
    expected = eager(ref, decode, parts, completes)
    assert sampled[:3].tolist() == expected.tolist()
    torch.testing.assert_close(graphed.kv[:, :, :SCRATCH], ref.kv[:, :, :SCRATCH], rtol=1e-5, atol=1e-5)
    pad = tokens - 9
    assert graphed.kv[:, :, SCRATCH, :max(pad, 1)].abs().sum() > 0
    assert graphed.kv[:, :, SCRATCH, max(pad, 1):].abs().sum() == 0
    assert graphed.last_token[[1, 0, 3]].tolist() == expected.tolist()  # next inputs of the rows sampled
    assert graphed.last_token[2] == 0  # a prompt not yet complete samples nothing
