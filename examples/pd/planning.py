"""The engine's bookkeeping, in plain Python (no torch): decode batch-size buckets, how prefill
work is cut (chunked-prefill iterations under a token budget;
prefill batches in layer blocks for the overlapping schedulers), the model's shape and memory,
and the choice of the static split's candidates from a latency profile."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable, Iterable, Sequence

from .admission import FCFS, Live, Order, PrefillPart, PrefillQueue


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


def bucket_list(wanted: Iterable[int], max_batch: int) -> list[int]:
    """Decode batch sizes to capture graphs for: the ``wanted`` ones up to ``max_batch``, and
    ``max_batch`` itself so that every batch fits one."""
    sizes = sorted({b for b in wanted if 1 <= b < max_batch} | {max_batch})
    return sizes


def bucket_for(batch: int, buckets: Sequence[int]) -> int:
    """The smallest bucket holding ``batch`` rows (``buckets`` ascending)."""
    for bucket in buckets:
        if bucket >= batch:
            return bucket
    raise ValueError(f"a decode batch of {batch} exceeds the largest bucket, {buckets[-1]}")


@dataclasses.dataclass(frozen=True)
class ChunkedPlan:
    """One chunked-prefill iteration: a token for each decoding request, then prompt chunks."""

    decode: tuple[Live, ...]
    parts: tuple[PrefillPart, ...]

    @property
    def tokens(self) -> int:
        return len(self.decode) + sum(p.length for p in self.parts)


def compose_chunked(decoding: Sequence[Live], queue: PrefillQueue, budget: int, now: float = 0.0) -> ChunkedPlan:
    """As vLLM and SGLang compose an iteration with chunked prefill: every decoding request
    first (one token each, up to ``budget``), then prompt tokens of the prefilling requests in
    the queue's order until the iteration holds ``budget`` tokens."""
    decode = tuple(decoding[:budget])
    return ChunkedPlan(decode, tuple(queue.take(budget - len(decode), now)))


@dataclasses.dataclass(frozen=True)
class PrefillBatch:
    """Prompt tokens of one or more requests prefilled together (at most the chunk size)."""

    id: int
    parts: tuple[PrefillPart, ...]

    @property
    def tokens(self) -> int:
        return sum(p.length for p in self.parts)


@dataclasses.dataclass(frozen=True)
class Piece:
    """Layers ``[first_layer, last_layer)`` of a prefill batch, launched as one unit."""

    batch: PrefillBatch
    first_layer: int
    last_layer: int
    layers: int

    @property
    def starts(self) -> bool:
        return self.first_layer == 0

    @property
    def ends(self) -> bool:
        return self.last_layer == self.layers


class PrefillCursor:
    """The overlapping schedulers' prefill work: prompts (in ``order``) in batches of at most
    ``chunk`` tokens (several requests may share one), each batch run through the model in
    blocks of ``piece_layers`` layers, so that the host can interleave decode steps."""

    def __init__(self, chunk: int, layers: int, piece_layers: int, order: Order = FCFS) -> None:
        if chunk < 1 or layers < 1 or piece_layers < 1:
            raise ValueError(f"chunk, layers and piece_layers must be positive, got {chunk}, {layers}, {piece_layers}")
        self.chunk, self.layers, self.piece_layers = chunk, layers, piece_layers
        self.queue = PrefillQueue(order)
        self._batch: PrefillBatch | None = None
        self._layer = 0
        self._ids = itertools.count()

    def add(self, live: Live) -> None:
        self.queue.add(live)

    @property
    def busy(self) -> bool:
        """Some prefill work is left to launch."""
        return self._batch is not None or bool(self.queue)

    @property
    def tokens(self) -> int:
        """Prompt tokens not yet launched: the queue's and the rest of the current batch's."""
        left = self._batch.tokens * (self.layers - self._layer) // self.layers if self._batch else 0
        return self.queue.tokens + left

    def in_batch(self) -> list[Live]:
        """The requests of the batch being launched."""
        return [part.live for part in self._batch.parts] if self._batch is not None else []

    def next_piece(self, now: float = 0.0) -> Piece | None:
        if self._batch is None:
            parts = self.queue.take(self.chunk, now)
            if not parts:
                return None
            self._batch, self._layer = PrefillBatch(next(self._ids), tuple(parts)), 0
        end = min(self._layer + self.piece_layers, self.layers)
        piece = Piece(self._batch, self._layer, end, self.layers)
        self._layer = end
        if end == self.layers:
            self._batch = None
        return piece


def bucket_reached(summaries: Iterable[dict[str, Any]], target: float, default: int) -> int:
    """The largest decode bucket reached in the runs whose attainment reached ``target`` (the
    load a static split must carry while the SLOs hold); in all runs when none did, and
    ``default`` when there were none."""
    runs = list(summaries)
    meeting = [s["largest_bucket"] for s in runs if s["attainment"] >= target and s["largest_bucket"]]
    reached = meeting or [s["largest_bucket"] for s in runs if s["largest_bucket"]]
    return max(reached, default=default)


@dataclasses.dataclass(frozen=True)
class SplitOption:
    """A static split to choose from: a layout's key and its two sides' SM counts."""

    key: Any
    latency_sms: int
    batch_sms: int


def static_candidates(options: Sequence[SplitOption], decode_us: Callable[[Any], "float | None"],
                      prefill_fits: Callable[[int], bool], slo_us: float, n: int = 3) -> list[Any]:
    """Keys of ``options`` to run as static splits, chosen from both SLOs: the split with the
    fewest latency SMs whose modelled decode step (``decode_us``, None where unknown) meets
    ``slo_us`` (TPOT), and the split with the most latency SMs whose batch side still prefills
    in time (``prefill_fits(batch_sms)``, TTFT), then their neighbours in latency SMs, ``n`` in
    all. Where the two disagree both run, so that neither SLO is given up unseen."""
    ordered = sorted(options, key=lambda o: (o.latency_sms, -o.batch_sms))
    if not ordered:
        raise ValueError("no split to choose a static one from")
    meeting = [i for i, o in enumerate(ordered) if (lat := decode_us(o.key)) is not None and lat <= slo_us]
    fitting = [i for i, o in enumerate(ordered) if prefill_fits(o.batch_sms)]
    anchors = list(dict.fromkeys([meeting[0] if meeting else len(ordered) - 1, fitting[-1] if fitting else 0]))
    chosen = anchors[:n]
    for step in range(1, len(ordered)):
        for anchor in anchors:
            for i in (anchor - step, anchor + step):
                if 0 <= i < len(ordered) and i not in chosen and len(chosen) < n:
                    chosen.append(i)
    return [ordered[i].key for i in chosen]


def layout_counts(wanted: Iterable[int], available: Sequence[int], total: int) -> tuple[list[int], list[int]]:
    """The wanted latency-side SM counts the device gives (``available``, as
    ``sizing.available_counts`` lists them), keeping 0 (all SMs to prefill) and ``total`` (all
    SMs to decode); returns (kept, dropped)."""
    kept: list[int] = []
    dropped: list[int] = []
    for k in sorted(set(wanted)):
        (kept if k in (0, total) or k in available else dropped).append(k)
    return kept, dropped
