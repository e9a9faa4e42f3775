"""The model's shape and what its weights and KV cache take. Plain Python (no torch)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """A Llama-3-8B-shaped decoder: grouped-query attention, SwiGLU MLP, RMSNorm, rotary."""

    layers: int = 32
    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 14336
    vocab: int = 128256
    rope_theta: float = 500000.0
    eps: float = 1e-5
    dtype_bytes: int = 2  # bf16

    def kv_bytes_per_token(self) -> int:
        """K and V of one token in every layer (128 KiB for 32 layers in bf16)."""
        return self.layers * self.kv_heads * self.head_dim * 2 * self.dtype_bytes

    def weight_bytes(self) -> int:
        per_layer = (self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim  # QKV
                     + self.heads * self.head_dim * self.hidden  # O
                     + 3 * self.hidden * self.intermediate  # gate, up, down
                     + 2 * self.hidden)  # two RMSNorm weights
        return self.dtype_bytes * (2 * self.vocab * self.hidden + self.layers * per_layer + self.hidden)


def kv_cache_bytes(shape: ModelShape, slots: int, max_len: int) -> int:
    """The slot cache: ``slots`` request slots and one scratch slot of ``max_len`` tokens."""
    return (slots + 1) * max_len * shape.kv_bytes_per_token()
