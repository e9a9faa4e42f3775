"""The engine's device on a GPU: decode steps replayed from CUDA graphs (one per lane and batch
bucket) over static inputs updated in place, chunked prefill's mixed iterations replayed from
graphs per token bucket (mixed.py; eagerly with SDPA attention), and prefill pieces launched
eagerly. A lane (lanes.py) is a latency stream for decode and a batch stream for prefill. Uses
the package's public API only (``sizing.graphed`` here).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

import torch

from torch_green_contexts import sizing

from .events import EventMarker, EventPending
from .lanes import Lane, PlainLanes
from .mixed import MixedGraphs
from .model import Model, Part, Rows
from .planning import ChunkedPlan, Piece, longest_row
from .timeline import Timeline


def plain_lanes(device: int) -> PlainLanes:
    """Decode and prefill on two plain streams of the whole GPU, decode at the highest
    priority; a request's prefill end is an event on the prefill stream."""
    high = torch.cuda.Stream.priority_range()[1]  # type: ignore[call-arg]
    lane = Lane("plain streams", torch.cuda.Stream(device, priority=high),  # type: ignore[no-untyped-call]
                torch.cuda.Stream(device))  # type: ignore[no-untyped-call]
    return PlainLanes(lane, lambda lane: EventMarker(lane.batch))


@dataclasses.dataclass
class _Job:
    """A prefill batch between its pieces: its rows and hidden states."""

    rows: Rows
    h: torch.Tensor

    def use_on(self, stream: torch.cuda.Stream) -> None:
        # The tensors were made on another lane's stream: keep the allocator from reusing them
        # before this stream is done with them.
        for t in [self.h, *self.rows.tensors()]:
            t.record_stream(stream)


class Engine:
    """The model, decode graphs per (lane, bucket) over static inputs, graphs of mixed passes
    (flash attention only) and prefill jobs: the schedulers' ``LaneDevice`` on a GPU."""

    def __init__(self, model: Model, buckets: Sequence[int]) -> None:
        self.model, self.buckets = model, list(buckets)
        top, device = self.buckets[-1], model.device
        self.meta_host = torch.empty(2, top, dtype=torch.int64, pin_memory=True)
        self.meta = torch.empty(2, top, dtype=torch.int64, device=device)  # slots; KV lengths
        self.out = torch.zeros(top, dtype=torch.int64, device=device)
        self.out_host = torch.zeros(top, dtype=torch.int64, pin_memory=True)
        self.graphs: dict[tuple[str, int], Callable[[], None]] = {}
        self._jobs: dict[int, _Job] = {}
        self._load: _Job | None = None
        self.mixed = MixedGraphs(model) if model.attention == "flash" else None
        self.mixed_counts = {"graphed": 0, "eager": 0}  # chunked prefill's mixed iterations since reset()
        self.timeline: Timeline | None = None  # the device timeline of a run, when one is recorded
        self.set_rows([], top)
        self.meta.copy_(self.meta_host)
        torch.cuda.synchronize(device)

    def decode_body(self, bucket: int) -> None:
        """One decode step of the first ``bucket`` static rows, on the current stream: reads
        each row's last token, appends its K/V, samples (argmax) the next token."""
        m = self.model
        slot, length = self.meta[0, :bucket], self.meta[1, :bucket]
        h = m.embed(m.last_token.index_select(0, slot))
        nxt = m.head(m.run_layers(h, m.decode_rows(slot, length), 0, m.shape.layers))
        m.last_token.index_copy_(0, slot, nxt)
        self.out[:bucket].copy_(nxt)

    def capture(self, lane: Lane) -> None:
        """A CUDA graph of the decode step per bucket on ``lane``'s latency stream (a graph
        keeps the green context of the stream it was captured on)."""
        self.set_rows([], self.buckets[-1])
        self.meta.copy_(self.meta_host)
        torch.cuda.synchronize(self.model.device)
        for bucket in self.buckets:
            self.graphs[(lane.key, bucket)] = sizing.graphed(functools.partial(self.decode_body, bucket), lane.latency)

    def capture_mixed(self, lane: Lane, budget: int) -> None:
        """Graphs of chunked prefill's mixed iterations of up to ``budget`` tokens on ``lane``
        (once per budget; nothing with SDPA attention)."""
        if self.mixed is not None:
            self.mixed.capture(lane, budget)

    def drop_graphs(self) -> None:
        torch.cuda.synchronize(self.model.device)
        self.graphs.clear()
        if self.mixed is not None:
            self.mixed.drop()

    def close(self) -> None:
        """Free what used the lanes' streams while those streams exist: freeing a pinned host
        tensor records an event on every stream that copied it, which fails once the stream's
        green context is destroyed (and aborts the process when it happens at exit)."""
        self.drop_graphs()
        if self.mixed is not None:
            self.mixed.close()
        self._jobs.clear()
        self._load = None
        del self.meta_host, self.out_host
        torch.cuda.synchronize(self.model.device)
        empty_host_cache = getattr(torch._C, "_host_emptyCache", None)
        if empty_host_cache is not None:
            empty_host_cache()

    def set_rows(self, rows: Sequence[tuple[int, int]], bucket: int) -> None:
        n = len(rows)
        if n:
            self.meta_host[:, :n] = torch.tensor(rows, dtype=torch.int64).T
        self.meta_host[0, n:bucket] = self.model.scratch_slot
        self.meta_host[1, n:bucket] = 1

    def decode(self, lane: Lane, rows: Sequence[tuple[int, int]], bucket: int, joining: Sequence[Any] = (),
               after: Callable[[], Any] | None = None) -> EventPending:
        """Replay the decode graph of ``bucket`` on ``lane`` for ``rows`` (padding rows use the
        scratch slot), after ``joining`` markers; ``after`` runs right after the replay is
        launched. The sampled tokens are copied to the host before the returned event."""
        self.set_rows(rows, bucket)
        stream = lane.latency
        with torch.cuda.stream(stream):
            for marker in joining:
                marker.wait(stream)
            if self.timeline is not None:
                self.timeline.begin("decode", lane.key, "latency", stream, rows=len(rows), bucket=bucket,
                                    context=sum(length for _, length in rows), longest=longest_row(rows))
            self.meta.copy_(self.meta_host, non_blocking=True)
            self.graphs[(lane.key, bucket)]()
            if after is not None:
                after()
            self.out_host[:bucket].copy_(self.out[:bucket], non_blocking=True)
            if self.timeline is not None:
                self.timeline.end(stream)
            return EventPending(stream)

    def start(self, parts: Sequence[Part], decode: Sequence[tuple[int, int]] = ()) -> _Job:
        rows, tokens = self.model.host_rows(decode, parts)
        return _Job(rows, self.model.embed(tokens))

    def _sample(self, job: _Job, pick: Sequence[int], slots: Sequence[int]) -> None:
        """Sample the next token of rows ``pick`` into the last-token entries of ``slots``, and
        copy them to the host (as a server reads them to send them)."""
        if not pick:
            return
        dev = self.model.device
        index = torch.tensor([pick, slots], dtype=torch.int64).pin_memory().to(dev, non_blocking=True)
        tokens = self.model.head(job.h.index_select(0, index[0]))
        self.model.last_token.index_copy_(0, index[1], tokens)
        torch.empty(len(pick), dtype=torch.int64, pin_memory=True).copy_(tokens, non_blocking=True)

    def prefill(self, lane: Lane, piece: Piece) -> EventPending:
        """Launch ``piece`` (a block of layers of a prefill batch) on ``lane``'s batch stream;
        the batch's last piece samples the first token of each request it completes."""
        stream = lane.batch
        with torch.cuda.stream(stream):
            if self.timeline is not None:
                spans = [(p.start, p.length) for p in piece.batch.parts]
                self.timeline.begin("prefill", lane.key, "batch", stream, tokens=piece.batch.tokens, prompts=len(spans),
                                    pairs=sum(n * start + n * (n + 1) // 2 for start, n in spans),
                                    layers=piece.last_layer - piece.first_layer, first=int(piece.starts),
                                    last=int(piece.ends))
            if piece.starts:
                parts = [Part(p.live.request.id, p.live.slot, p.start, p.length) for p in piece.batch.parts]
                self._jobs[piece.batch.id] = self.start(parts)
            job = self._jobs[piece.batch.id]
            job.use_on(stream)
            job.h = self.model.run_layers(job.h, job.rows, piece.first_layer, piece.last_layer)
            if piece.ends:
                done = [(first + length - 1, p.live.slot)
                        for (first, length, _, _), p in zip(job.rows.parts, piece.batch.parts) if p.completes]
                self._sample(job, [r for r, _ in done], [s for _, s in done])
                del self._jobs[piece.batch.id]
            if self.timeline is not None:
                self.timeline.end(stream)
            return EventPending(stream)

    def iteration(self, lane: Lane, plan: ChunkedPlan, bucket: int) -> EventPending:
        """A chunked-prefill iteration on ``lane``'s latency stream: decode-only ones replay the
        graph of ``bucket``; mixed ones (decode rows and prompt chunks in one pass) replay the
        graph of their token bucket, or run eagerly where none was captured."""
        decode = [live.decode_row() for live in plan.decode]
        if not plan.parts:
            return self.decode(lane, decode, bucket)
        parts = [Part(p.live.request.id, p.live.slot, p.start, p.length) for p in plan.parts]
        if self.mixed is not None:
            if self.timeline is not None:
                self.timeline.begin("mixed", lane.key, "latency", lane.latency, rows=len(decode), bucket=bucket,
                                    context=sum(length for _, length in decode), longest=longest_row(decode),
                                    tokens=sum(p.length for p in parts),
                                    pairs=sum(p.length * p.start + p.length * (p.length + 1) // 2 for p in parts))
            replayed = self.mixed.launch(lane, decode, parts, [p.completes for p in plan.parts])
            if self.timeline is not None:
                self.timeline.end(lane.latency)
            if replayed is not None:
                self.mixed_counts["graphed"] += 1
                return replayed
        self.mixed_counts["eager"] += 1
        stream = lane.latency
        with torch.cuda.stream(stream):
            job = self.start(parts, decode)
            job.h = self.model.run_layers(job.h, job.rows, 0, self.model.shape.layers)
            pick, slots = list(range(len(decode))), [slot for slot, _ in decode]
            for (first, length, _, _), p in zip(job.rows.parts, plan.parts):
                if p.completes:
                    pick.append(first + length - 1)
                    slots.append(p.live.slot)
            self._sample(job, pick, slots)
            return EventPending(stream)

    def load_piece(self, tokens: int, layers: int) -> Callable[[], None]:
        """One prefill piece on the current stream (``layers`` layers over ``tokens`` prompt
        tokens in the scratch slot): the profile's load and the runs' warm-up."""
        if self._load is None or self._load.h.shape[0] != tokens:
            torch.cuda.synchronize(self.model.device)  # the previous one may still be in use
            self._load = self.start([Part(0, self.model.scratch_slot, 0, tokens)])
            torch.cuda.synchronize(self.model.device)
        job = self._load

        def piece() -> None:
            self.model.run_layers(job.h, job.rows, 0, layers)

        return piece

    def warm_up(self, lanes: Sequence[Lane], tokens: int, layers: int) -> None:
        """Before a timed run: a decode replay of the largest bucket and a prefill piece on
        every lane it may use, then wait for them."""
        piece = self.load_piece(tokens, layers)
        for lane in lanes:  # one lane at a time: lanes of different layouts share SMs and buffers
            self.decode(lane, [], self.buckets[-1])
            with torch.cuda.stream(lane.batch):
                piece()
            torch.cuda.synchronize(self.model.device)

    def reset(self) -> None:
        torch.cuda.synchronize(self.model.device)
        self._jobs.clear()
        self.mixed_counts = dict.fromkeys(self.mixed_counts, 0)
