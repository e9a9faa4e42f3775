"""Flash attention against the SDPA fallback (examples/pd/model.py), run at start-up on the GPU:
the sweep stops before its first run when the two disagree."""

from __future__ import annotations

import torch

from ..engine.model import Varlen, decode_attention, prefill_attention, varlen_attention


def check_attention(device: torch.device | str, atol: float = 2e-2) -> dict[str, float]:
    """Flash against SDPA on a small case of the model's head layout (32 query and 8 KV heads
    of 128, bf16): decode rows over unsorted slots of different lengths plus padded rows on a
    scratch slot; prefill parts with and without earlier tokens; and prompt parts (one of
    several tiles), a padding sequence and empty sequences in one variable-length call, as a
    graphed chunked-prefill iteration makes it. Returns the largest absolute difference of each;
    raises RuntimeError when one exceeds ``atol``."""
    g = torch.Generator(device=device).manual_seed(1)
    heads, kv_heads, dim, slots, max_len = 32, 8, 128, 6, 320

    def randn(*size: int) -> torch.Tensor:
        return torch.randn(*size, generator=g, device=device, dtype=torch.bfloat16)

    def int32(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, device=device, dtype=torch.int32)

    k_slots, v_slots = randn(slots, max_len, kv_heads, dim), randn(slots, max_len, kv_heads, dim)
    slot = torch.tensor([3, 0, 4, 1, 5, 5], device=device)
    length = int32([17, 96, 1, 60, 1, 1])
    q = randn(len(slot), heads, dim)
    cu_q = torch.arange(len(slot) + 1, device=device, dtype=torch.int32)
    cu_k = torch.cat([slot * max_len, slot.new_zeros(1)]).to(torch.int32)
    diffs = {"decode": (decode_attention("flash", q, k_slots, v_slots, slot, length, cu_q, cu_k)
                        - decode_attention("sdpa", q, k_slots, v_slots, slot, length, cu_q, cu_k)).abs().max().item()}
    for name, start, t in (("prefill", 0, 40), ("prefill after earlier tokens", 30, 25), ("prefill of one token", 50, 1)):
        q = randn(t, heads, dim)
        k, v = k_slots[2, :start + t], v_slots[2, :start + t]
        diffs[name] = (prefill_attention("flash", q, k, v) - prefill_attention("sdpa", q, k, v)).abs().max().item()
    # 25 prompt tokens after 30 earlier ones (slot 2), a first chunk of 9 (slot 1), 200 tokens
    # after 60 (slot 3), 5 padding rows on the scratch slot (5), then two empty sequences.
    lengths, slot_of, used = [25, 9, 200, 5, 0, 0], [2, 1, 3, 5, 0, 0], [55, 9, 260, 5, 0, 0]
    rows = sum(lengths)
    varlen = Varlen(int32([sum(lengths[:i]) for i in range(len(lengths) + 1)]),
                    int32([s * max_len for s in slot_of] + [0]), int32(used), rows)
    q = randn(rows, heads, dim)
    diffs["prompt parts in one call"] = (varlen_attention("flash", q, k_slots, v_slots, varlen)
                                         - varlen_attention("sdpa", q, k_slots, v_slots, varlen)).abs().max().item()
    bad = {name: d for name, d in diffs.items() if not d <= atol}
    if bad:
        raise RuntimeError(f"flash attention differs from SDPA by more than {atol}: {bad}; "
                           "run with --attention sdpa to use the fallback")
    return diffs
