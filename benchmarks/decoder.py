"""A Llama-3-8B-shaped decoder for benchmarks (hidden 4096, 32 query and 8 KV heads of 128,
SwiGLU 14336, RMSNorm, rotary embeddings; bf16 random weights): a decode step over a batch whose
requests each have ``context`` cached tokens, and a prefill chunk of one request. Both are
fixed-shape and capturable into CUDA graphs."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 4096, 32, 8, 128, 14336
GROUP = HEADS // KV_HEADS


def _rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding over the last dimension (halves rotated), ``cos``/``sin`` broadcast."""
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-second, first), dim=-1) * sin


class Decoder:
    """``layers`` decoder layers with a KV cache of ``max_batch`` requests x ``context`` tokens."""

    def __init__(self, device: int, layers: int = 4, max_batch: int = 128, context: int = 2048,
                 chunk: int = 2048, seed: int = 0) -> None:
        gen = torch.Generator(device=f"cuda:{device}").manual_seed(seed)
        bf16 = dict(device=device, dtype=torch.bfloat16)

        def weight(rows: int, cols: int) -> torch.Tensor:
            return torch.randn(rows, cols, generator=gen, **bf16) / rows**0.5  # type: ignore[arg-type]

        self.layers = [{
            "qkv": weight(HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD_DIM),
            "o": weight(HEADS * HEAD_DIM, HIDDEN),
            "gate_up": weight(HIDDEN, 2 * FFN),
            "down": weight(FFN, HIDDEN),
            "norm1": torch.ones(HIDDEN, **bf16),  # type: ignore[arg-type]
            "norm2": torch.ones(HIDDEN, **bf16),  # type: ignore[arg-type]
            "k_cache": torch.randn(max_batch, KV_HEADS, context, HEAD_DIM, generator=gen, **bf16),  # type: ignore[arg-type]
            "v_cache": torch.randn(max_batch, KV_HEADS, context, HEAD_DIM, generator=gen, **bf16),  # type: ignore[arg-type]
        } for _ in range(layers)]
        self.max_batch, self.context, self.chunk = max_batch, context, chunk
        freqs = 1.0 / (500000.0 ** (torch.arange(0, HEAD_DIM, 2, device=device).float() / HEAD_DIM))
        angles = torch.outer(torch.arange(max(context, chunk), device=device).float(), freqs)
        self.cos = torch.cat((angles.cos(), angles.cos()), dim=-1).to(torch.bfloat16)
        self.sin = torch.cat((angles.sin(), angles.sin()), dim=-1).to(torch.bfloat16)
        self.decode_in = torch.randn(max_batch, HIDDEN, generator=gen, **bf16)  # type: ignore[arg-type]
        self.prefill_in = torch.randn(chunk, HIDDEN, generator=gen, **bf16)  # type: ignore[arg-type]

    def _mlp(self, x: torch.Tensor, layer: dict[str, torch.Tensor]) -> torch.Tensor:
        h = F.rms_norm(x, (HIDDEN,), layer["norm2"])
        gate, up = (h @ layer["gate_up"]).chunk(2, dim=-1)
        return x + (F.silu(gate) * up) @ layer["down"]

    def decode_step(self, batch: int) -> Callable[[], torch.Tensor]:
        """One decode step of ``batch`` requests: each attends to its ``context`` cached tokens
        (the new token's K/V written at the last position) with grouped-query attention done as
        two batched GEMMs per layer, which read each cached K and V once."""
        if not 1 <= batch <= self.max_batch:
            raise ValueError(f"batch must be between 1 and {self.max_batch}, got {batch}")
        x_in = self.decode_in[:batch]
        cos, sin = self.cos[self.context - 1], self.sin[self.context - 1]
        scale = HEAD_DIM ** -0.5

        def step() -> torch.Tensor:
            x = x_in
            for layer in self.layers:
                h = F.rms_norm(x, (HIDDEN,), layer["norm1"])
                q, k, v = (h @ layer["qkv"]).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], -1)
                q = _rotary(q.view(batch, KV_HEADS, GROUP, HEAD_DIM), cos, sin)
                k_cache, v_cache = layer["k_cache"][:batch], layer["v_cache"][:batch]
                k_cache[:, :, -1] = _rotary(k.view(batch, KV_HEADS, HEAD_DIM), cos, sin)
                v_cache[:, :, -1] = v.view(batch, KV_HEADS, HEAD_DIM)
                scores = torch.matmul(q, k_cache.transpose(-1, -2)) * scale  # batch, kv, group, context
                attn = torch.matmul(scores.softmax(dim=-1), v_cache)  # batch, kv, group, head_dim
                x = x + attn.reshape(batch, HIDDEN) @ layer["o"]
                x = self._mlp(x, layer)
            return x.argmax(dim=-1)  # the next token, greedily

        return step

    def prefill_chunk(self) -> Callable[[], torch.Tensor]:
        """A prefill chunk of ``chunk`` tokens of one request, causal attention within it."""
        n = self.chunk
        cos, sin = self.cos[:n].unsqueeze(1), self.sin[:n].unsqueeze(1)

        def chunk() -> torch.Tensor:
            x = self.prefill_in
            for layer in self.layers:
                h = F.rms_norm(x, (HIDDEN,), layer["norm1"])
                q, k, v = (h @ layer["qkv"]).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], -1)
                q = _rotary(q.view(n, HEADS, HEAD_DIM), cos, sin).transpose(0, 1).unsqueeze(0)
                k = _rotary(k.view(n, KV_HEADS, HEAD_DIM), cos, sin).transpose(0, 1).unsqueeze(0)
                v = v.view(n, KV_HEADS, HEAD_DIM).transpose(0, 1).unsqueeze(0)
                out = F.scaled_dot_product_attention(q, k.repeat_interleave(GROUP, 1), v.repeat_interleave(GROUP, 1),
                                                     is_causal=True)
                x = x + out.squeeze(0).transpose(0, 1).reshape(n, HIDDEN) @ layer["o"]
                x = self._mlp(x, layer)
            return x

        return chunk
