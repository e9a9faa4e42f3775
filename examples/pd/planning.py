"""The engine's bookkeeping, in plain Python (no torch): KV slots and FCFS admission, decode
batch-size buckets, how prefill work is cut (chunked-prefill iterations under a token budget;
prefill batches in layer blocks for the overlapping schedulers), the model's shape and memory,
and the choice of the static split's candidates from a latency profile."""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from typing import Any, Callable, Iterable, Sequence

from .workload import Request


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


@dataclasses.dataclass(eq=False)
class Live:
    """A request holding a KV slot. ``prefilled``: prompt tokens whose prefill has been
    scheduled; ``tokens``: output tokens produced (the first by the prefill)."""

    request: Request
    slot: int
    prefilled: int = 0
    tokens: int = 0
    first_token: float | None = None
    finish: float | None = None

    def decode_row(self) -> tuple[int, int]:
        """(slot, KV length once this step's input token is written): the step reads the
        prompt and every output token so far."""
        return self.slot, self.request.prompt + self.tokens


class Admission:
    """First come, first served: a request waits from its arrival until a KV slot is free;
    at most ``slots`` requests hold one (prefilling or decoding)."""

    def __init__(self, trace: Sequence[Request], slots: int) -> None:
        if slots < 1:
            raise ValueError(f"need at least one slot, got {slots}")
        self._arrivals = deque(sorted(trace, key=lambda r: (r.arrival, r.id)))
        self._waiting: deque[Request] = deque()
        self._free = deque(range(slots))
        self.slots = slots

    def arrive(self, now: float) -> None:
        """Every request that has arrived by ``now`` joins the waiting queue."""
        while self._arrivals and self._arrivals[0].arrival <= now:
            self._waiting.append(self._arrivals.popleft())

    def admit(self) -> list[Live]:
        """Waiting requests that get a free slot, in arrival order."""
        admitted = []
        while self._waiting and self._free:
            admitted.append(Live(self._waiting.popleft(), self._free.popleft()))
        return admitted

    def release(self, live: Live) -> None:
        self._free.append(live.slot)

    @property
    def next_arrival(self) -> float | None:
        return self._arrivals[0].arrival if self._arrivals else None

    @property
    def drained(self) -> bool:
        """No request left to arrive or waiting for a slot."""
        return not self._arrivals and not self._waiting

    @property
    def held(self) -> int:
        return self.slots - len(self._free)


@dataclasses.dataclass(frozen=True)
class PrefillPart:
    """``length`` prompt tokens of one request from ``start``; ``completes`` when they are
    its last."""

    live: Live
    start: int
    length: int
    completes: bool


def take_prefill(queue: deque[Live], tokens: int) -> list[PrefillPart]:
    """Up to ``tokens`` prompt tokens from the front of ``queue`` (FCFS; a request whose
    prompt is longer continues in the next call). Requests whose last tokens are taken leave
    the queue."""
    parts = []
    while tokens > 0 and queue:
        live = queue[0]
        n = min(tokens, live.request.prompt - live.prefilled)
        parts.append(PrefillPart(live, live.prefilled, n, live.prefilled + n == live.request.prompt))
        live.prefilled += n
        tokens -= n
        if parts[-1].completes:
            queue.popleft()
    return parts


@dataclasses.dataclass(frozen=True)
class ChunkedPlan:
    """One chunked-prefill iteration: a token for each decoding request, then prompt chunks."""

    decode: tuple[Live, ...]
    parts: tuple[PrefillPart, ...]

    @property
    def tokens(self) -> int:
        return len(self.decode) + sum(p.length for p in self.parts)


def compose_chunked(decoding: Sequence[Live], queue: deque[Live], budget: int) -> ChunkedPlan:
    """As vLLM and SGLang compose an iteration with chunked prefill: every decoding request
    first (one token each, up to ``budget``), then prompt tokens of the prefilling requests in
    arrival order until the iteration holds ``budget`` tokens."""
    decode = tuple(decoding[:budget])
    return ChunkedPlan(decode, tuple(take_prefill(queue, budget - len(decode))))


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
    """The overlapping schedulers' prefill work, FCFS: prompts in batches of at most
    ``chunk`` tokens (several requests may share one), each batch run through the model in
    blocks of ``piece_layers`` layers, so that the host can interleave decode steps."""

    def __init__(self, chunk: int, layers: int, piece_layers: int) -> None:
        if chunk < 1 or layers < 1 or piece_layers < 1:
            raise ValueError(f"chunk, layers and piece_layers must be positive, got {chunk}, {layers}, {piece_layers}")
        self.chunk, self.layers, self.piece_layers = chunk, layers, piece_layers
        self.queue: deque[Live] = deque()
        self._batch: PrefillBatch | None = None
        self._layer = 0
        self._ids = itertools.count()

    def add(self, live: Live) -> None:
        self.queue.append(live)

    @property
    def busy(self) -> bool:
        """Some prefill work is left to launch."""
        return self._batch is not None or bool(self.queue)

    def next_piece(self) -> Piece | None:
        if self._batch is None:
            parts = take_prefill(self.queue, self.chunk)
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


LatencyFn = Callable[[int, int], "float | None"]  # (bucket, SM count) -> p99 microseconds


def static_candidates(latency: LatencyFn, counts: Iterable[int], total: int, bucket: int,
                      slo_us: float, n: int = 3) -> list[int]:
    """SM counts to try as the static split: the smallest count whose profiled latency at
    ``bucket`` meets ``slo_us`` (or, when none does, the largest count that leaves SMs to the
    prefill), then its neighbours among ``counts`` alternately below and above, ``n`` in all.
    Counts of 0 and ``total`` are left out: a static split gives each side some SMs."""
    usable = sorted({c for c in counts if 0 < c < total})
    if not usable:
        raise ValueError(f"no SM count between 0 and {total} to split at among {sorted(counts)}")
    meeting = [c for c in usable if (lat := latency(bucket, c)) is not None and lat <= slo_us]
    center = usable.index(meeting[0] if meeting else usable[-1])
    chosen = [usable[center]]
    for step in range(1, len(usable)):
        for i in (center - step, center + step):
            if 0 <= i < len(usable) and len(chosen) < n:
                chosen.append(usable[i])
    return chosen


def layout_counts(wanted: Iterable[int], available: Sequence[int], total: int) -> tuple[list[int], list[int]]:
    """The wanted latency-side SM counts the device gives (``available``, as
    ``sizing.available_counts`` lists them), keeping 0 (all SMs to prefill) and ``total`` (all
    SMs to decode); returns (kept, dropped)."""
    kept: list[int] = []
    dropped: list[int] = []
    for k in sorted(set(wanted)):
        (kept if k in (0, total) or k in available else dropped).append(k)
    return kept, dropped
