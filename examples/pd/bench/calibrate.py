"""The simulator's calibration, measured on the GPU (``python -m examples.pd --calibrate-only``,
or at the start of a sweep): per lane the engine runs on, the decode step over batch buckets
and context lengths and a prefill piece over token mixes, each alone and beside the other
side's work kept queued; chunked prefill's mixed iterations over prompt and decode rows; and
what the host spends launching each kind of work. Every figure is a list of samples in
microseconds (device time from ``sizing.time_calls``; host time from the wall clock), so that
the simulator draws spreads as well as medians."""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import torch

from torch_green_contexts import sizing

from ..engine.admission import Live, PrefillPart
from ..engine.gpu import Engine
from ..engine.lanes import Lane
from ..engine.model import Part
from ..engine.planning import Piece, PrefillBatch
from ..engine.request import Request

KIND = "examples.pd calibration"
VERSION = 1
QUEUED = 2  # the other side's work kept in flight while a step is timed


def decode_contexts(max_len: int) -> tuple[int, int]:
    """A short and a long row: a quarter and three quarters of a slot, capped at 2048 and 12288
    tokens."""
    return min(2048, max(16, max_len // 4)), min(12288, max(32, max_len * 3 // 4))


def decode_points(buckets: Sequence[int], max_len: int) -> list[tuple[int, ...]]:
    """The rows' lengths (one per row, a bucket's worth) the decode step is timed over: up to
    five buckets (1, 8, 32, 64 and the largest) with every row short and every row long; and at
    the buckets of 16 rows or more, rows of uneven lengths, one long row among short ones and a
    quarter of the rows long, which tell a step's cost by its total context from its cost by its
    longest row."""
    short, long = decode_contexts(max_len)
    chosen = sorted({b for b in buckets if b in (1, 8, 32, 64)} | {buckets[-1]})
    points = [(c,) * b for b in chosen for c in sorted({short, long})]
    tiny = max(1, short // 8)
    for b in (b for b in chosen if b >= 16 and long > tiny):
        points.append((long,) + (tiny,) * (b - 1))
        points.append((long,) * (b // 4) + (short,) * (b - b // 4))
    return points


def prefill_configs(chunk: int, max_len: int) -> list[dict[str, int]]:
    """Prefill batches a piece is timed over: a whole chunk as one prompt, as four prompts, a
    quarter chunk, and a chunk continuing a prompt far into its slot (its attention reads the
    earlier tokens too)."""
    quarter = max(1, chunk // 4)
    late = max(0, min(8192, max_len - chunk - 1))
    configs = [{"tokens": chunk, "prompts": 1, "start": 0}, {"tokens": chunk, "prompts": 4, "start": 0},
               {"tokens": quarter, "prompts": 1, "start": 0}]
    if late > 0:
        configs.append({"tokens": chunk, "prompts": 1, "start": late})
    return configs


def attention_pairs(parts: Sequence[tuple[int, int]]) -> int:
    """Query-key pairs of causal attention over prompt parts (start, length): each token attends
    to the part's earlier tokens in the slot and to itself."""
    return sum(length * start + length * (length + 1) // 2 for start, length in parts)


def _parts(config: dict[str, int], slots: int) -> list[Part]:
    each = config["tokens"] // config["prompts"]
    return [Part(i, i % slots, config["start"], each) for i in range(config["prompts"])]


class Calibrator:
    """Measures on ``engine``'s lanes (their decode graphs captured) with ``samples`` timed
    calls per figure; ``say`` reports progress."""

    def __init__(self, engine: Engine, chunk: int, piece_layers: int, samples: int = 8,
                 say: Callable[[str], None] = lambda text: None) -> None:
        self.engine, self.chunk, self.piece_layers, self.samples, self.say = engine, chunk, piece_layers, samples, say
        self.model = engine.model

    def _replay(self, lane: Lane, lengths: Sequence[int]) -> Callable[[], None]:
        """The decode graph of ``len(lengths)`` rows on ``lane``, row i holding ``lengths[i]``
        tokens."""
        engine, bucket = self.engine, len(lengths)
        engine.set_rows([(i % self.model.slots, n) for i, n in enumerate(lengths)], bucket)
        engine.meta.copy_(engine.meta_host)
        torch.cuda.synchronize(self.model.device)
        graph = engine.graphs[(lane.key, bucket)]
        return graph

    def _piece(self, config: dict[str, int]) -> Callable[[], None]:
        job = self.engine.start(_parts(config, self.model.slots))
        torch.cuda.synchronize(self.model.device)  # its inputs were copied on this stream, not the lane's
        layers = self.piece_layers

        def piece() -> None:
            self.model.run_layers(job.h, job.rows, 0, layers)

        return piece

    def _timed(self, fn: Callable[[], None], stream: torch.cuda.Stream, load: Callable[[], None] | None,
               load_stream: torch.cuda.Stream) -> list[float]:
        with torch.cuda.stream(stream):
            fn()  # untimed: first launches on a context load its kernels
        queued = None
        if load is not None:
            queued = sizing.QueuedLoad(load, load_stream, QUEUED)
            queued.start()
        try:
            return [round(t, 2) for t in sizing.time_calls(fn, stream, self.samples, load=queued)]
        finally:
            if queued is not None:
                queued.stop()

    def lane(self, lane: Lane) -> dict[str, Any]:
        """Decode and prefill samples on ``lane``, idle and loaded."""
        engine, m = self.engine, self.model
        decode = []
        for lengths in decode_points(engine.buckets, m.max_len):
            replay = self._replay(lane, lengths)
            piece = engine.load_piece(self.chunk, self.piece_layers)
            decode.append({"bucket": len(lengths), "tokens_per_row": sum(lengths) // len(lengths),
                           "context_tokens": sum(lengths), "longest": max(lengths),
                           "idle_us": self._timed(replay, lane.latency, None, lane.batch),
                           "loaded_us": self._timed(replay, lane.latency, piece, lane.batch)})
        prefill = []
        reference = self._replay(lane, (min(2048, m.max_len - 1),) * min(32, engine.buckets[-1]))
        for config in prefill_configs(self.chunk, m.max_len):
            piece = self._piece(config)
            parts = [(p.start, p.length) for p in _parts(config, m.slots)]
            prefill.append({**config, "layers": self.piece_layers, "pairs": attention_pairs(parts),
                            "idle_us": self._timed(piece, lane.batch, None, lane.latency),
                            "loaded_us": self._timed(piece, lane.batch, reference, lane.latency)})
        return {"decode": decode, "prefill": prefill}

    def beside_pieces(self, lane: Lane) -> list[dict[str, Any]]:
        """Decode steps of rows of one length (8 and 32 rows and the largest bucket) beside
        queued pieces of an eighth, a quarter and half a chunk: how much of the slowdown beside a
        whole chunk a smaller piece causes."""
        engine, m = self.engine, self.model
        short, _ = decode_contexts(m.max_len)
        out = []
        for bucket in sorted({b for b in engine.buckets if b in (8, 32)} | {engine.buckets[-1]}):
            lengths = (short,) * bucket
            replay = self._replay(lane, lengths)
            for tokens in sorted({max(1, self.chunk // d) for d in (8, 4, 2)} - {self.chunk}):
                piece = engine.load_piece(tokens, self.piece_layers)
                out.append({"bucket": bucket, "context_tokens": sum(lengths), "longest": short, "piece_tokens": tokens,
                            "loaded_us": self._timed(replay, lane.latency, piece, lane.batch)})
        return out

    def mixed(self, lane: Lane, budgets: Sequence[int]) -> list[dict[str, Any]]:
        """Chunked prefill's mixed iterations on ``lane``: one prompt part of several token
        buckets' sizes, from its prompt's start beside a few decoding requests and beside a full
        batch, and deep in its prompt beside a full batch (a pass always holds a decode row per
        KV slot; the rows of no request read one token)."""
        engine, m = self.engine, self.model
        if engine.mixed is None:
            return []
        top = max(budgets)
        engine.capture_mixed(lane, top)
        context = min(2048, m.max_len // 2)
        out = []
        for tokens in sorted({t for t in (64, 128, 256, 512, 1024, 2048, top) if t <= min(top, m.max_len - 1)}):
            deep = min(m.max_len * 3 // 4, m.max_len - tokens - 1)
            shapes = [(rows, 0) for rows in sorted({min(8, m.slots - 1), m.slots - 1})]
            for rows, start in shapes + ([(m.slots - 1, deep)] if deep > tokens else []):
                decode = [(i, context) for i in range(rows)]
                parts = [Part(m.slots, m.slots - 1, start, tokens)]

                def launch(decode: list[tuple[int, int]] = decode, parts: list[Part] = parts) -> None:
                    engine.mixed.launch(lane, decode, parts, [False])  # type: ignore[union-attr]

                out.append({"prompt_tokens": tokens, "decode_rows": rows, "slots": m.slots, "start": start,
                            "context_tokens": rows * context, "pairs": attention_pairs([(start, tokens)]),
                            "us": self._timed(launch, lane.latency, None, lane.batch)})
        return out

    def host(self, plain: Lane, switch: Callable[[], None] | None) -> dict[str, float]:
        """Host microseconds per launch (means): a decode replay, a prefill piece of a chunk
        (first, middle and last pieces of a batch alike), a mixed iteration, a layout switch,
        an event query, and a sleep of 50 us."""
        engine, m = self.engine, self.model
        rows = [(i, min(1024, m.max_len - 1)) for i in range(min(32, m.slots - 1) or 1)]  # and a mixed pass's part
        bucket = next(b for b in engine.buckets if b >= len(rows))
        figures = {"decode_launch_us": _host_us(lambda: engine.decode(plain, rows, bucket), m.device)}
        live = Live(Request(0, 0.0, self.chunk, 2), 0)
        batch = PrefillBatch(0, (PrefillPart(live, 0, self.chunk, True),))
        layers = m.shape.layers

        def pieces() -> None:
            for first in range(0, layers, self.piece_layers):
                engine.prefill(plain, Piece(batch, first, min(layers, first + self.piece_layers), layers))

        pieces_per_batch = -(-layers // self.piece_layers)
        figures["piece_launch_us"] = _host_us(pieces, m.device) / pieces_per_batch
        mixed = engine.mixed
        buckets = mixed.captured(plain) if mixed is not None else []
        if mixed is not None and buckets:  # the inputs are packed on the host: the cost grows with the prompt rows
            for tokens, name in ((buckets[0], "mixed_launch_us"), (buckets[-1], "mixed_launch_top_us")):
                part = [Part(m.slots, m.slots - 1, 0, tokens)]
                figures[name] = _host_us(lambda: mixed.launch(plain, rows, part, [False]), m.device)
            figures["mixed_top_tokens"] = float(buckets[-1])
            figures["mixed_tokens"] = float(buckets[0])
        if switch is not None:
            figures["switch_us"] = _host_us(switch, m.device, calls=200)
        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record(plain.latency)
        figures["query_us"] = _host_us(lambda: event.query(), m.device, calls=200)  # type: ignore[no-untyped-call]
        figures["sleep_50us_us"] = _host_us(lambda: time.sleep(50e-6), m.device, calls=50)
        return figures


def _host_us(fn: Callable[[], Any], device: torch.device, calls: int = 20) -> float:
    """Mean host microseconds of ``fn`` (the device drained before and after, outside the
    timed region)."""
    fn()
    torch.cuda.synchronize(device)
    total = 0.0
    for _ in range(calls):
        began = time.perf_counter()
        fn()
        total += time.perf_counter() - began
        torch.cuda.synchronize(device)
    return round(total / calls * 1e6, 3)


def calibrate(engine: Engine, lanes: dict[str, tuple[Lane, dict[str, int]]], plain: Lane, budgets: Sequence[int],
              chunk: int, piece_layers: int, switch: Callable[[], None] | None, samples: int,
              say: Callable[[str], None]) -> dict[str, Any]:
    """The calibration's measured part: ``lanes`` maps each lane's key to the lane and its SM
    counts (``latency_sms``, ``batch_sms``, ``shared_sms``)."""
    calibrator = Calibrator(engine, chunk, piece_layers, samples, say)
    began = time.perf_counter()
    measured = {}
    for i, (key, (lane, counts)) in enumerate(lanes.items()):
        say(f"calibration: lane {key} ({i + 1}/{len(lanes)}), {time.perf_counter() - began:.0f} s")
        measured[key] = {**counts, **calibrator.lane(lane)}
        if lane is plain:  # no partition: how much a piece slows decode depends most on its size here
            measured[key]["decode_beside_pieces"] = calibrator.beside_pieces(lane)
    say("calibration: chunked prefill's mixed iterations")
    mixed = calibrator.mixed(plain, budgets)
    host = calibrator.host(plain, switch)
    return {"lanes": measured, "mixed": mixed, "host": host, "samples": samples,
            "seconds": round(time.perf_counter() - began, 1)}
