"""Chunked prefill's mixed iterations (decode rows and prompt chunks in one forward pass) as
CUDA graphs, as its decode-only iterations are: one graph per lane and token bucket, over
static inputs rewritten before each replay, so that a mixed iteration costs the host what a
decode step costs it, whatever the number of layers and prompts.

A pass has two regions. The decode region holds a row per KV slot (the decoding requests'
rows, then padding rows of the scratch slot at length 1); its attention is the decode step's
(one query per row over its slot). The prompt region holds the prompt parts padded to the
token bucket; its attention is one causal variable-length call (``model.Varlen``) in which
each part is a sequence, the padding rows one more on the scratch slot, and the sequences
left over are empty. Needs flash attention (the SDPA fallback reads the sequence bounds on the
host); iterations whose prompt rows exceed every bucket run eagerly.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import torch

from torch_green_contexts import sizing

from .events import EventPending
from .lanes import Lane
from .model import Model, Part, Rows, Varlen, prompt_tokens

BUCKET_STEP = 64  # tokens
BUCKET_RATIO = 1.15


def token_buckets(budget: int, max_len: int, step: int = BUCKET_STEP, ratio: float = BUCKET_RATIO) -> list[int]:
    """Token counts to capture a mixed pass for under ``budget``: multiples of ``step`` from
    ``step``, each at most ``ratio`` times the one before (or ``step`` more), and the budget;
    none above ``max_len`` (the padding rows are one sequence of the scratch slot). A pass is
    padded to the next one: by less than 64 tokens up to 448, by at most 15% above."""
    sizes = [min(step, budget)]
    while sizes[-1] < budget:
        sizes.append(min(budget, max(sizes[-1] + step, int(sizes[-1] * ratio) // step * step)))
    return [t for t in sizes if t <= max_len]


class Inputs(NamedTuple):
    """The static inputs of a pass of ``D`` decode rows (one per KV slot) and ``T`` prompt rows,
    views of one int64 buffer (``split`` makes them). Decode region: each row's slot and KV
    length. Prompt region: each row's prompt token, position and row of the flattened cache;
    per sequence (``D + 1``: the parts, the padding, empty ones) its first prompt row and its
    first cache row (``D + 2`` entries each) and its length in the cache. Then per sampled row
    (``D``: a request decodes or completes its prompt, not both) its row in the pass and its
    slot."""

    dec_slot: torch.Tensor
    dec_len: torch.Tensor
    prompt: torch.Tensor
    positions: torch.Tensor
    write: torch.Tensor
    cu_q: torch.Tensor
    cu_k: torch.Tensor
    used: torch.Tensor
    pick_row: torch.Tensor
    pick_slot: torch.Tensor

    @staticmethod
    def sizes(decode_rows: int, tokens: int) -> list[int]:
        return [decode_rows] * 2 + [tokens] * 3 + [decode_rows + 2] * 2 + [decode_rows + 1] + [decode_rows] * 2

    @classmethod
    def split(cls, flat: torch.Tensor, decode_rows: int, tokens: int) -> "Inputs":
        return cls(*torch.split(flat, cls.sizes(decode_rows, tokens)))


def pack(decode: Sequence[tuple[int, int]], parts: Sequence[Part], completes: Sequence[bool], decode_rows: int,
         tokens: int, max_len: int, scratch: int, vocab: int) -> torch.Tensor:
    """The flat int64 inputs (:class:`Inputs`) of a pass of ``decode`` rows (slot, KV length)
    padded to ``decode_rows`` and prompt ``parts`` padded to ``tokens`` rows; a part's last row
    is sampled when it ``completes`` its prompt, as every decode row is."""
    prompt_rows = sum(p.length for p in parts)
    pad = tokens - prompt_rows
    if pad < 0 or pad > max_len or len(decode) + len(parts) > decode_rows:
        raise ValueError(f"{len(decode)} decode rows and {len(parts)} parts of {prompt_rows} tokens do not fit "
                         f"a pass of {decode_rows} decode rows and {tokens} prompt rows")
    dec_slot = [s for s, _ in decode] + [scratch] * (decode_rows - len(decode))
    dec_len = [n for _, n in decode] + [1] * (decode_rows - len(decode))
    pick_row, pick_slot = list(range(len(decode))), [s for s, _ in decode]
    prompt: list[int] = []
    positions: list[int] = []
    slots: list[int] = []
    cu_q, cu_k, used = [0], [], []
    for part, done in zip(parts, completes):
        if done:
            pick_row.append(decode_rows + cu_q[-1] + part.length - 1)
            pick_slot.append(part.slot)
        span = torch.arange(part.start, part.start + part.length)
        prompt += prompt_tokens(part.request, span, vocab).tolist()
        positions += span.tolist()
        slots += [part.slot] * part.length
        cu_q.append(cu_q[-1] + part.length)
        cu_k.append(part.slot * max_len)
        used.append(part.start + part.length)
    prompt += [0] * pad
    positions += list(range(pad))
    slots += [scratch] * pad
    cu_q.append(tokens)
    cu_k.append(scratch * max_len)
    used.append(pad)
    empty = decode_rows + 1 - len(used)
    cu_q += [tokens] * empty
    cu_k += [0] * (empty + 1)
    used += [0] * empty
    pick_row += [0] * (decode_rows - len(pick_row))
    pick_slot += [scratch] * (decode_rows - len(pick_slot))
    write = [s * max_len + p for s, p in zip(slots, positions)]
    return torch.tensor(dec_slot + dec_len + prompt + positions + write + cu_q + cu_k + used + pick_row + pick_slot,
                        dtype=torch.int64)


def mixed_pass(m: Model, x: Inputs, tokens: int) -> torch.Tensor:
    """One pass of ``x`` (its decode rows, then ``tokens`` prompt rows) through ``m`` with no
    host work: reads each decode row's last token, writes every row's K/V, samples the picked
    rows' next tokens into the last-token entries of their slots; returns them (one per decode
    row's place)."""
    decode = m.decode_rows(x.dec_slot, x.dec_len)
    int32 = torch.int32
    cos = torch.cat([decode.cos, m.cos[x.positions][:, None]])
    sin = torch.cat([decode.sin, m.sin[x.positions][:, None]])
    rows = Rows(torch.cat([decode.positions, x.positions]), torch.cat([decode.write_index, x.write]), cos, sin,
                decode.n_decode, decode.decode_slot, decode.decode_len, decode.cu_q, decode.cu_k, (),
                Varlen(x.cu_q.to(int32), x.cu_k.to(int32), x.used.to(int32), tokens))
    token = torch.cat([m.last_token.index_select(0, x.dec_slot), x.prompt])
    h = m.run_layers(m.embed(token), rows, 0, m.shape.layers)
    nxt = m.head(h.index_select(0, x.pick_row))
    m.last_token.index_copy_(0, x.pick_slot, nxt)
    return nxt


class MixedGraphs:
    """Graphs of mixed passes per (lane, token bucket) over static inputs of ``model``: a
    decode row per KV slot, then the bucket's prompt rows."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.decode_rows = model.slots
        self._device: dict[int, torch.Tensor] = {}
        self._host: dict[int, torch.Tensor] = {}
        self._out: dict[int, torch.Tensor] = {}
        self._out_host = torch.zeros(self.decode_rows, dtype=torch.int64, pin_memory=True)
        self._graphs: dict[tuple[str, int], object] = {}
        self._buckets: dict[str, list[int]] = {}

    def capture(self, lane: Lane, budget: int) -> None:
        """A graph per token bucket of ``budget`` on ``lane``'s latency stream (once each)."""
        m = self.model
        for tokens in token_buckets(budget, m.max_len):
            if (lane.key, tokens) in self._graphs:
                continue
            if tokens not in self._device:
                size = sum(Inputs.sizes(self.decode_rows, tokens))
                self._device[tokens] = torch.zeros(size, dtype=torch.int64, device=m.device)
                self._host[tokens] = torch.zeros(size, dtype=torch.int64, pin_memory=True)
                self._out[tokens] = torch.zeros(self.decode_rows, dtype=torch.int64, device=m.device)
            self._device[tokens].copy_(self._inputs([], [], [], tokens))  # padding only
            torch.cuda.synchronize(m.device)
            self._graphs[(lane.key, tokens)] = sizing.graphed(functools.partial(self.body, tokens), lane.latency)
            self._buckets[lane.key] = sorted({*self._buckets.get(lane.key, []), tokens})

    def captured(self, lane: Lane) -> list[int]:
        """The token buckets captured on ``lane``, ascending."""
        return list(self._buckets.get(lane.key, []))

    def bucket(self, lane: Lane, rows: int) -> int | None:
        """The smallest bucket captured on ``lane`` that holds ``rows`` prompt rows (None: none
        does)."""
        return next((t for t in self._buckets.get(lane.key, []) if t >= rows), None)

    def launch(self, lane: Lane, decode: Sequence[tuple[int, int]], parts: Sequence[Part],
               completes: Sequence[bool]) -> EventPending | None:
        """Replay the pass on ``lane``'s latency stream (None, launching nothing, when no bucket
        holds its prompt rows); the sampled tokens are copied to the host before the returned
        event."""
        tokens = self.bucket(lane, sum(p.length for p in parts))
        if tokens is None:
            return None
        host = self._host[tokens]
        host.copy_(self._inputs(decode, parts, completes, tokens))
        with torch.cuda.stream(lane.latency):
            self._device[tokens].copy_(host, non_blocking=True)
            self._graphs[(lane.key, tokens)]()  # type: ignore[operator]
            self._out_host.copy_(self._out[tokens], non_blocking=True)
            return EventPending(lane.latency)

    def body(self, tokens: int) -> None:
        """The pass of the ``tokens``-row inputs on the current stream (what the graph holds)."""
        x = Inputs.split(self._device[tokens], self.decode_rows, tokens)
        self._out[tokens].copy_(mixed_pass(self.model, x, tokens))

    def drop(self) -> None:
        self._graphs.clear()
        self._buckets.clear()

    def close(self) -> None:
        self.drop()
        self._host.clear()
        del self._out_host

    def _inputs(self, decode: Sequence[tuple[int, int]], parts: Sequence[Part], completes: Sequence[bool],
                tokens: int) -> torch.Tensor:
        m = self.model
        return pack(decode, parts, completes, self.decode_rows, tokens, m.max_len, m.scratch_slot, m.shape.vocab)
