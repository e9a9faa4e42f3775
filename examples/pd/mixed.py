"""Chunked prefill's mixed iterations (decode rows and prompt chunks in one forward pass) as
CUDA graphs, as its decode-only iterations are: one graph per lane and token bucket, over
static inputs rewritten before each replay, so that a mixed iteration costs the host what a
decode step costs it, whatever the number of layers and prompts.

A pass is padded to its bucket. Every row's attention is one variable-length call
(``model.Varlen``): each decode row and each prompt part is a sequence, the padding rows one
more on the scratch slot, and the sequences left over are empty. Needs flash attention (the
SDPA fallback reads the sequence bounds on the host); iterations larger than every bucket run
eagerly.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import torch

from torch_green_contexts import sizing

from .events import EventPending, Lane
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
    """The static inputs of a pass of ``T`` rows and ``S`` sequences, views of one int64
    buffer (``split`` makes them): per row the prompt token, the slot whose last token a decode
    row reads, whether it is a decode row, its position and its row of the flattened cache;
    per sequence its first row (``S + 1`` entries), its first cache row (``S + 1``) and its
    length in the cache; per sequence the row whose next token is sampled and the slot it goes
    to."""

    prompt: torch.Tensor
    source: torch.Tensor
    is_decode: torch.Tensor
    positions: torch.Tensor
    write: torch.Tensor
    cu_q: torch.Tensor
    cu_k: torch.Tensor
    used: torch.Tensor
    pick_row: torch.Tensor
    pick_slot: torch.Tensor

    @staticmethod
    def sizes(tokens: int, seqs: int) -> list[int]:
        return [tokens] * 5 + [seqs + 1] * 2 + [seqs] * 3

    @classmethod
    def split(cls, flat: torch.Tensor, tokens: int, seqs: int) -> "Inputs":
        return cls(*flat.split(cls.sizes(tokens, seqs)))


def pack(decode: Sequence[tuple[int, int]], parts: Sequence[Part], completes: Sequence[bool], tokens: int,
         seqs: int, max_len: int, scratch: int, vocab: int) -> torch.Tensor:
    """The flat int64 inputs (:class:`Inputs`) of a pass of ``decode`` rows (slot, KV length)
    and prompt ``parts`` padded to ``tokens`` rows and ``seqs`` sequences; a part's last row is
    sampled when it ``completes`` its prompt, as every decode row is."""
    rows = len(decode) + sum(p.length for p in parts)
    pad = tokens - rows
    if pad < 0 or pad > max_len or len(decode) + len(parts) + 1 > seqs:
        raise ValueError(f"{len(decode)} decode rows and {len(parts)} parts of {rows - len(decode)} tokens do not fit "
                         f"a pass of {tokens} rows and {seqs} sequences")
    prompt: list[int] = []  # per row
    source: list[int] = []
    is_decode: list[int] = []
    positions: list[int] = []
    slots: list[int] = []
    cu_q, cu_k, used = [0], [], []  # per sequence
    pick_row: list[int] = []
    pick_slot: list[int] = []

    def sequence(slot: int, ids: list[int], span: list[int], length_in_cache: int, decoding: bool = False) -> None:
        prompt.extend(ids)
        source.extend([slot if decoding else scratch] * len(span))
        is_decode.extend([int(decoding)] * len(span))
        positions.extend(span)
        slots.extend([slot] * len(span))
        cu_q.append(cu_q[-1] + len(span))
        cu_k.append(slot * max_len)
        used.append(length_in_cache)

    for slot, length in decode:
        pick_row.append(cu_q[-1])
        pick_slot.append(slot)
        sequence(slot, [0], [length - 1], length, decoding=True)
    for part, done in zip(parts, completes):
        if done:
            pick_row.append(cu_q[-1] + part.length - 1)
            pick_slot.append(part.slot)
        span = torch.arange(part.start, part.start + part.length)
        sequence(part.slot, prompt_tokens(part.request, span, vocab).tolist(), span.tolist(), part.start + part.length)
    sequence(scratch, [0] * pad, list(range(pad)), pad)
    empty = seqs - len(used)
    cu_q += [tokens] * empty
    cu_k += [0] * (empty + 1)
    used += [0] * empty
    pick_row += [0] * (seqs - len(pick_row))
    pick_slot += [scratch] * (seqs - len(pick_slot))
    write = [s * max_len + p for s, p in zip(slots, positions)]
    return torch.tensor(prompt + source + is_decode + positions + write + cu_q + cu_k + used + pick_row + pick_slot,
                        dtype=torch.int64)


def mixed_pass(m: Model, x: Inputs, tokens: int) -> torch.Tensor:
    """One pass of ``x`` (``tokens`` rows) through ``m`` with no host work: reads each decode
    row's last token, writes every row's K/V, samples the picked rows' next tokens into the
    last-token entries of their slots; returns the sampled tokens (one per sequence)."""
    token = torch.where(x.is_decode.bool(), m.last_token.index_select(0, x.source), x.prompt)
    varlen = Varlen(x.cu_q.to(torch.int32), x.cu_k.to(torch.int32), x.used.to(torch.int32), tokens)
    rows = Rows(x.positions, x.write, m.cos[x.positions][:, None], m.sin[x.positions][:, None], 0,
                x.source[:0], varlen.used[:0], varlen.cu_q, varlen.cu_k, (), varlen)
    h = m.run_layers(m.embed(token), rows, 0, m.shape.layers)
    nxt = m.head(h.index_select(0, x.pick_row))
    m.last_token.index_copy_(0, x.pick_slot, nxt)
    return nxt


class MixedGraphs:
    """Graphs of mixed passes per (lane, token bucket) over static inputs of ``model``, for
    passes of at most ``seqs`` sequences (decode rows, prompt parts and the padding)."""

    def __init__(self, model: Model, seqs: int) -> None:
        self.model, self.seqs = model, seqs
        self._device: dict[int, torch.Tensor] = {}
        self._host: dict[int, torch.Tensor] = {}
        self._out: dict[int, torch.Tensor] = {}
        self._out_host = torch.zeros(seqs, dtype=torch.int64, pin_memory=True)
        self._graphs: dict[tuple[str, int], object] = {}
        self._buckets: dict[str, list[int]] = {}

    def capture(self, lane: Lane, budget: int) -> None:
        """A graph per token bucket of ``budget`` on ``lane``'s latency stream (once each)."""
        m = self.model
        for tokens in token_buckets(budget, m.max_len):
            if (lane.key, tokens) in self._graphs:
                continue
            if tokens not in self._device:
                size = sum(Inputs.sizes(tokens, self.seqs))
                self._device[tokens] = torch.zeros(size, dtype=torch.int64, device=m.device)
                self._host[tokens] = torch.zeros(size, dtype=torch.int64, pin_memory=True)
                self._out[tokens] = torch.zeros(self.seqs, dtype=torch.int64, device=m.device)
            self._device[tokens].copy_(self._inputs([], [], [], tokens))  # padding only
            torch.cuda.synchronize(m.device)
            self._graphs[(lane.key, tokens)] = sizing.graphed(functools.partial(self.body, tokens), lane.latency)
            self._buckets[lane.key] = sorted({*self._buckets.get(lane.key, []), tokens})

    def bucket(self, lane: Lane, rows: int) -> int | None:
        """The smallest bucket captured on ``lane`` that holds ``rows`` rows (None: none does)."""
        return next((t for t in self._buckets.get(lane.key, []) if t >= rows), None)

    def launch(self, lane: Lane, decode: Sequence[tuple[int, int]], parts: Sequence[Part],
               completes: Sequence[bool]) -> EventPending | None:
        """Replay the pass on ``lane``'s latency stream (None, launching nothing, when no bucket
        holds it or it has more sequences than the graphs); the sampled tokens are copied to
        the host before the returned event."""
        tokens = self.bucket(lane, len(decode) + sum(p.length for p in parts))
        if tokens is None or len(decode) + len(parts) + 1 > self.seqs:
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
        x = Inputs.split(self._device[tokens], tokens, self.seqs)
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
        return pack(decode, parts, completes, tokens, self.seqs, m.max_len, m.scratch_slot, m.shape.vocab)
