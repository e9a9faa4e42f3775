"""The prefill/decode example's model (examples/pd/model.py) on the CPU: a tiny float32 model
of the same structure, through the SDPA attention path. Prefill in chunks, decode steps over
the slot cache and mixed passes must give what one full prefill gives. (The flash path is
compared with this one on the GPU, by attention_check.check_attention.)"""

from __future__ import annotations

import pytest
import torch

from examples.pd.engine.model import Model, Part, prompt_tokens
from examples.pd.engine.shape import ModelShape

SHAPE = ModelShape(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=96, vocab=101)
MAX_LEN = 48


def model(slots: int = 3) -> Model:
    return Model(SHAPE, slots=slots, max_len=MAX_LEN, device="cpu", dtype=torch.float32, attention="sdpa", seed=5)


def forward(m: Model, decode=(), parts=()):
    rows, tokens = m.host_rows(list(decode), list(parts))
    return m.run_layers(m.embed(tokens), rows, 0, SHAPE.layers)


def test_chunked_prefill_matches_one_pass():
    m = model()
    whole = forward(m, parts=[Part(7, 1, 0, 20)])
    kv = m.kv[:, :, 1, :20].clone()
    m.kv.zero_()
    outs = [forward(m, parts=[Part(7, 1, start, n)]) for start, n in ((0, 5), (5, 1), (6, 14))]
    torch.testing.assert_close(torch.cat(outs), whole, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(m.kv[:, :, 1, :20], kv, rtol=1e-5, atol=1e-5)
    assert m.kv[:, :, 1, 20:].abs().sum() == 0 and m.kv[:, :, 0].abs().sum() == 0


def test_decode_steps_match_prefill_of_the_longer_prompt():
    """Prefill 12 tokens, then decode 3 tokens (graph-style rows from device tensors): each
    step's hidden state is the last row of a full pass over the 13, 14, 15 tokens."""
    m, ref = model(), model()
    forward(m, parts=[Part(3, 2, 0, 12)])
    positions = torch.arange(15)
    tokens = prompt_tokens(3, positions, SHAPE.vocab)
    for n in range(12, 15):
        m.last_token[2] = tokens[n]  # the decode step's input: token n at position n
        slot, length = torch.tensor([2, m.scratch_slot]), torch.tensor([n + 1, 1])
        rows = m.decode_rows(slot, length)
        h = m.run_layers(m.embed(m.last_token.index_select(0, slot)), rows, 0, SHAPE.layers)
        ref.kv.zero_()
        full = forward(ref, parts=[Part(3, 2, 0, n + 1)])
        torch.testing.assert_close(h[0], full[-1], rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(m.kv[:, :, 2, :n + 1], ref.kv[:, :, 2, :n + 1], rtol=1e-5, atol=1e-5)
    assert m.kv[:, :, 0].abs().sum() == 0 and m.kv[:, :, 1].abs().sum() == 0  # padding wrote the scratch slot only


def test_mixed_pass_matches_separate_passes():
    """One pass of two decode rows and two prompt parts (as a chunked-prefill iteration), one
    of them continuing a prompt, against the same rows in separate passes."""
    m, ref = model(slots=4), model(slots=4)
    for x in (m, ref):
        forward(x, parts=[Part(0, 0, 0, 9)])
        forward(x, parts=[Part(1, 1, 0, 4)])
        forward(x, parts=[Part(3, 3, 0, 2)])
        x.last_token[0], x.last_token[1] = 17, 23
    mixed = forward(m, decode=[(1, 5), (0, 10)], parts=[Part(2, 2, 0, 6), Part(3, 3, 2, 3)])
    separate = torch.cat([forward(ref, decode=[(1, 5), (0, 10)]), forward(ref, parts=[Part(2, 2, 0, 6)]),
                          forward(ref, parts=[Part(3, 3, 2, 3)])])
    torch.testing.assert_close(mixed, separate, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(m.kv, ref.kv, rtol=1e-5, atol=1e-5)
    assert m.kv[:, :, 3, :5].abs().sum() > 0 and m.kv[:, :, 3, 5:].abs().sum() == 0


def test_host_rows_and_device_rows_agree():
    m = model()
    host, tokens = m.host_rows([(2, 7), (0, 1)], [Part(4, 1, 3, 2)])
    dev = m.decode_rows(torch.tensor([2, 0]), torch.tensor([7, 1]))
    assert host.n_decode == dev.n_decode == 2
    assert host.positions.tolist() == [6, 0, 3, 4] and host.write_index.tolist() == [2 * MAX_LEN + 6, 0,
                                                                                      MAX_LEN + 3, MAX_LEN + 4]
    assert torch.equal(host.positions[:2], dev.positions) and torch.equal(host.write_index[:2], dev.write_index)
    assert torch.equal(host.cu_k, dev.cu_k) and host.cu_k.dtype == torch.int32
    assert host.cu_q.tolist() == [0, 1, 2] and host.decode_len.tolist() == [7, 1]
    assert host.parts == ((2, 2, 1, 3),)
    assert tokens[2:].tolist() == prompt_tokens(4, torch.tensor([3, 4]), SHAPE.vocab).tolist()


def test_head_samples_greedily_and_bad_attention_is_refused():
    m = model()
    h = forward(m, parts=[Part(0, 0, 0, 3)])
    logits = torch.nn.functional.linear(
        torch.nn.functional.rms_norm(h, (SHAPE.hidden,), m.final_norm, SHAPE.eps), m.lm_head)
    assert torch.equal(m.head(h), logits.argmax(-1))
    with pytest.raises(ValueError, match="attention must be one of"):
        Model(SHAPE, slots=1, max_len=8, device="cpu", attention="xformers")
