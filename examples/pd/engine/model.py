"""A Llama-3-8B-shaped decoder with random weights and a KV cache of preallocated slots.

Shapes as :class:`planning.ModelShape` (hidden 4096, 32 query and 8 KV heads of 128, SwiGLU
intermediate 14336, RMSNorm, rotary embeddings; 32 layers by default), weights drawn at random
(nothing is downloaded). Every request holds one slot of ``max_len`` tokens in the cache; slot
``slots`` is a scratch slot that padded decode rows point at.

One forward pass handles any mix of token rows (:class:`Rows`): decode rows first (one token
per request, attending over its slot's first ``length`` tokens) and then prefill parts (a run
of prompt tokens of one request, attending causally over its slot's earlier tokens and
themselves). Linear layers see all rows at once; attention runs per part. Attention is
``flash`` (``aten._flash_attention_forward``: variable-length decode over the slot cache, reading
each request's own length, CUDA-graph capturable; causal prefill aligned to the bottom right)
or ``sdpa`` (``scaled_dot_product_attention`` over a padded gather with a length mask, a
fallback that reads every slot in full); ``attention_check.py`` compares the two.

The module runs on any device with ``attention="sdpa"`` (the CPU tests use it); ``flash``
needs a CUDA GPU.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Sequence

import torch
import torch.nn.functional as F

from .shape import ModelShape

ATTENTION = ("flash", "sdpa")


def decode_attention(kind: str, q: torch.Tensor, k_slots: torch.Tensor, v_slots: torch.Tensor,
                     slot: torch.Tensor, length: torch.Tensor, cu_q: torch.Tensor, cu_k: torch.Tensor) -> torch.Tensor:
    """One query per row ``q`` [B, heads, dim] over the first ``length[i]`` (int32) tokens of
    slot ``slot[i]`` of ``k_slots``/``v_slots`` [slots, max_len, kv_heads, dim]. ``cu_q``
    (0..B) and ``cu_k`` (each slot's first row in the flattened cache, and one more entry)
    are the flash kernel's int32 offsets."""
    max_len, kv_heads, dim = k_slots.shape[1:]
    if kind == "flash":
        out = torch.ops.aten._flash_attention_forward(
            q, k_slots.view(-1, kv_heads, dim), v_slots.view(-1, kv_heads, dim), cu_q, cu_k, 1, max_len,
            0.0, False, False, scale=None, seqused_k=length)
        result: torch.Tensor = out[0]
        return result
    # The query heads sharing a KV head become that head's queries, so that K and V are not
    # repeated per query head: [B, kv_heads, heads / kv_heads, dim].
    batch, heads = q.shape[:2]
    k = k_slots.index_select(0, slot).transpose(1, 2)  # [B, kv_heads, max_len, dim]
    v = v_slots.index_select(0, slot).transpose(1, 2)
    mask = torch.arange(max_len, device=q.device)[None, :] < length[:, None]
    out = F.scaled_dot_product_attention(q.view(batch, kv_heads, heads // kv_heads, dim), k, v,
                                         attn_mask=mask[:, None, None, :])
    return out.reshape(batch, heads, dim)


def prefill_attention(kind: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention of the last ``T`` positions ``q`` [T, heads, dim] over ``k``/``v``
    [S, kv_heads, dim] (S >= T: the request's earlier tokens, then these): query i sees keys
    up to S - T + i (the causal mask aligned to the bottom right)."""
    t, s = q.shape[0], k.shape[0]
    if kind == "flash":
        out = torch.ops.aten._flash_attention_forward(q[None], k[None], v[None], None, None, t, s, 0.0, True, False,
                                                      scale=None)
        result: torch.Tensor = out[0][0]
        return result
    mask = torch.arange(s, device=q.device)[None, :] <= torch.arange(t, device=q.device)[:, None] + (s - t)
    out = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None],
                                         attn_mask=mask, enable_gqa=True)
    return out[0].transpose(0, 1)


@dataclasses.dataclass(frozen=True)
class Varlen:
    """The prompt rows of a pass (those after its decode rows) in one attention call: sequence
    ``i`` is those rows ``cu_q[i]:cu_q[i+1]`` over the cache rows ``cu_k[i]:cu_k[i] + used[i]``
    of the flattened slot cache (its earlier tokens, then its own), causal with the mask
    aligned to the bottom right. ``cu_q``, ``cu_k`` and ``used`` are int32 device tensors whose
    values a CUDA graph reads when replayed; ``max_q`` bounds a sequence's rows."""

    cu_q: torch.Tensor
    cu_k: torch.Tensor
    used: torch.Tensor
    max_q: int


def varlen_attention(kind: str, q: torch.Tensor, k_slots: torch.Tensor, v_slots: torch.Tensor,
                     varlen: Varlen) -> torch.Tensor:
    """Attention of the rows ``q`` [T, heads, dim] as :class:`Varlen` describes them."""
    max_len, kv_heads, dim = k_slots.shape[1:]
    k, v = k_slots.view(-1, kv_heads, dim), v_slots.view(-1, kv_heads, dim)
    if kind == "flash":
        out = torch.ops.aten._flash_attention_forward(q, k, v, varlen.cu_q, varlen.cu_k, varlen.max_q, max_len,
                                                      0.0, True, False, scale=None, seqused_k=varlen.used)
        result: torch.Tensor = out[0]
        return result
    cu_q, cu_k, used = varlen.cu_q.tolist(), varlen.cu_k.tolist(), varlen.used.tolist()
    out = torch.zeros_like(q)
    for i, n in enumerate(used):
        if cu_q[i + 1] > cu_q[i]:
            out[cu_q[i]:cu_q[i + 1]] = prefill_attention(kind, q[cu_q[i]:cu_q[i + 1]], k[cu_k[i]:cu_k[i] + n],
                                                          v[cu_k[i]:cu_k[i] + n])
    return out


@dataclasses.dataclass
class Rows:
    """The token rows of one forward pass: ``n_decode`` decode rows, then prefill ``parts``
    (first row, length, slot, start position). Per row: ``positions`` and ``write_index`` (the
    row of the flattened cache its K/V goes to), and the rotary ``cos``/``sin``. With ``varlen``
    the rows after the decode rows are its sequences, and ``parts`` is empty."""

    positions: torch.Tensor
    write_index: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor
    n_decode: int
    decode_slot: torch.Tensor
    decode_len: torch.Tensor  # int32
    cu_q: torch.Tensor
    cu_k: torch.Tensor
    parts: tuple[tuple[int, int, int, int], ...]
    varlen: Varlen | None = None

    def tensors(self) -> list[torch.Tensor]:
        extra = [self.varlen.cu_q, self.varlen.cu_k, self.varlen.used] if self.varlen is not None else []
        return [self.positions, self.write_index, self.cos, self.sin, self.decode_slot, self.decode_len,
                self.cu_q, self.cu_k, *extra]


class Part(NamedTuple):
    """Prompt tokens ``[start, start + length)`` of request ``request`` in slot ``slot``."""

    request: int
    slot: int
    start: int
    length: int


class Layer(NamedTuple):
    attn_norm: torch.Tensor
    qkv: torch.Tensor
    o: torch.Tensor
    mlp_norm: torch.Tensor
    gate_up: torch.Tensor
    down: torch.Tensor


def prompt_tokens(request: int, positions: torch.Tensor, vocab: int) -> torch.Tensor:
    """The made-up prompt of ``request``: a fixed token id per (request, position)."""
    return (positions * 7919 + request * 104729 + 1) % vocab


class Model:
    """Weights, rotary tables and the slot KV cache (zeroed) on ``device``."""

    def __init__(self, shape: ModelShape, *, slots: int, max_len: int, device: torch.device | str,
                 dtype: torch.dtype = torch.bfloat16, attention: str = "flash", seed: int = 0) -> None:
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
        self.shape, self.slots, self.max_len, self.attention = shape, slots, max_len, attention
        self.device, self.dtype = torch.device(device), dtype
        s = shape
        generator = torch.Generator(device=self.device).manual_seed(seed)

        def weight(rows: int, cols: int, std: float | None = None) -> torch.Tensor:
            w = torch.randn(rows, cols, generator=generator, device=self.device, dtype=dtype)
            return w.mul_(cols ** -0.5 if std is None else std)

        def ones() -> torch.Tensor:
            return torch.ones(s.hidden, device=self.device, dtype=dtype)

        self.embedding = weight(s.vocab, s.hidden, std=1.0)
        self.layers = [Layer(ones(), weight((s.heads + 2 * s.kv_heads) * s.head_dim, s.hidden),
                             weight(s.hidden, s.heads * s.head_dim), ones(),
                             weight(2 * s.intermediate, s.hidden), weight(s.hidden, s.intermediate))
                       for _ in range(s.layers)]
        self.final_norm = ones()
        self.lm_head = weight(s.vocab, s.hidden)
        self.kv = torch.zeros(s.layers, 2, slots + 1, max_len, s.kv_heads, s.head_dim, device=self.device, dtype=dtype)
        self.last_token = torch.zeros(slots + 1, device=self.device, dtype=torch.int64)
        half = s.head_dim // 2
        inv_freq = 1.0 / (s.rope_theta ** (torch.arange(half, dtype=torch.float64) * 2 / s.head_dim))
        angles = torch.outer(torch.arange(max_len, dtype=torch.float64), inv_freq)
        self.cos = angles.cos().to(device=self.device, dtype=dtype)
        self.sin = angles.sin().to(device=self.device, dtype=dtype)

    @property
    def scratch_slot(self) -> int:
        return self.slots

    def decode_rows(self, slot: torch.Tensor, length: torch.Tensor) -> Rows:
        """Rows of a decode step from device tensors (int64 slots and KV lengths): no host
        work, so that a CUDA graph of the step reads whatever they hold when it is replayed."""
        positions = length - 1
        n = slot.shape[0]
        zero = torch.zeros(1, device=slot.device, dtype=slot.dtype)
        return Rows(positions, slot * self.max_len + positions, self.cos[positions][:, None], self.sin[positions][:, None],
                    n, slot, length.to(torch.int32), torch.arange(n + 1, device=slot.device, dtype=torch.int32),
                    torch.cat([slot * self.max_len, zero]).to(torch.int32), ())

    def host_rows(self, decode: Sequence[tuple[int, int]], parts: Sequence[Part]) -> tuple[Rows, torch.Tensor]:
        """Rows for ``decode`` (slot, KV length) rows and prompt ``parts``, built on the host
        and copied in one transfer; also the token ids (decode rows read their last token)."""
        n_decode = len(decode)
        dec_slot = torch.tensor([s for s, _ in decode], dtype=torch.int64)
        dec_len = torch.tensor([n for _, n in decode], dtype=torch.int64)
        positions, slots, tokens, layout, row = [dec_len - 1], [dec_slot], [torch.zeros(n_decode, dtype=torch.int64)], [], n_decode
        for p in parts:
            pos = torch.arange(p.start, p.start + p.length, dtype=torch.int64)
            positions.append(pos)
            slots.append(torch.full((p.length,), p.slot, dtype=torch.int64))
            tokens.append(prompt_tokens(p.request, pos, self.shape.vocab))
            layout.append((row, p.length, p.slot, p.start))
            row += p.length
        pos_all = torch.cat(positions)
        packed = torch.cat([pos_all, torch.cat(slots) * self.max_len + pos_all, torch.cat(tokens), dec_slot, dec_len])
        if self.device.type == "cuda":
            packed = packed.pin_memory().to(self.device, non_blocking=True)
        else:
            packed = packed.to(self.device)
        n = row
        pos_d, write_d, tok_d = packed[:n], packed[n:2 * n], packed[2 * n:3 * n]
        slot_d, len_d = packed[3 * n:3 * n + n_decode], packed[3 * n + n_decode:]
        zero = torch.zeros(1, device=self.device, dtype=torch.int64)
        rows = Rows(pos_d, write_d, self.cos[pos_d][:, None], self.sin[pos_d][:, None], n_decode, slot_d,
                    len_d.to(torch.int32), torch.arange(n_decode + 1, device=self.device, dtype=torch.int32),
                    torch.cat([slot_d * self.max_len, zero]).to(torch.int32), tuple(layout))
        if n_decode:
            tok_d = torch.cat([self.last_token.index_select(0, slot_d), tok_d[n_decode:]])
        return rows, tok_d

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.embedding(tokens, self.embedding)

    def run_layers(self, h: torch.Tensor, rows: Rows, first: int, last: int) -> torch.Tensor:
        for i in range(first, last):
            h = self._layer(i, h, rows)
        return h

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """The next token of each row of ``h`` (greedy: the argmax of the logits)."""
        logits = F.linear(F.rms_norm(h, (self.shape.hidden,), self.final_norm, self.shape.eps), self.lm_head)
        return logits.argmax(dim=-1)

    def _layer(self, i: int, h: torch.Tensor, rows: Rows) -> torch.Tensor:
        s, w, n = self.shape, self.layers[i], h.shape[0]
        x = F.rms_norm(h, (s.hidden,), w.attn_norm, s.eps)
        q, k, v = torch.split(F.linear(x, w.qkv), [s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], -1)
        q = _rope(q.view(n, s.heads, s.head_dim), rows.cos, rows.sin)
        k = _rope(k.view(n, s.kv_heads, s.head_dim), rows.cos, rows.sin)
        k_slots, v_slots = self.kv[i, 0], self.kv[i, 1]
        k_slots.view(-1, s.kv_heads, s.head_dim).index_copy_(0, rows.write_index, k)
        v_slots.view(-1, s.kv_heads, s.head_dim).index_copy_(0, rows.write_index, v.view(n, s.kv_heads, s.head_dim))
        a = self._attention(q, k_slots, v_slots, rows)
        h = h + F.linear(a.reshape(n, s.heads * s.head_dim), w.o)
        x = F.rms_norm(h, (s.hidden,), w.mlp_norm, s.eps)
        gate, up = F.linear(x, w.gate_up).chunk(2, dim=-1)
        return h + F.linear(F.silu(gate) * up, w.down)

    def _attention(self, q: torch.Tensor, k_slots: torch.Tensor, v_slots: torch.Tensor, rows: Rows) -> torch.Tensor:
        outs = []
        if rows.n_decode:
            outs.append(decode_attention(self.attention, q[:rows.n_decode], k_slots, v_slots, rows.decode_slot,
                                         rows.decode_len, rows.cu_q, rows.cu_k))
        if rows.varlen is not None:
            outs.append(varlen_attention(self.attention, q[rows.n_decode:], k_slots, v_slots, rows.varlen))
        for first, length, slot, start in rows.parts:
            seen = start + length
            outs.append(prefill_attention(self.attention, q[first:first + length], k_slots[slot, :seen],
                                          v_slots[slot, :seen]))
        return outs[0] if len(outs) == 1 else torch.cat(outs)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
