"""How the engine cuts its work, in plain Python (no torch): decode batch-size buckets,
chunked-prefill iterations under a token budget, and prefill batches in layer blocks for the
overlapping schedulers."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Iterable, Sequence

from .admission import FCFS, Live, Order, PrefillPart, PrefillQueue


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


def longest_row(rows: Sequence[tuple[int, int]]) -> int:
    """The most context tokens one decode row of ``rows`` ((slot, context tokens) pairs) holds,
    0 for none: timelines record it beside the rows' sum, as a step over rows of uneven lengths
    may take as long as its longest rows make it."""
    return max((length for _, length in rows), default=0)
