"""A made-up calibration for the simulator's tests, shaped as a GPU sweep writes one: costs that
grow with batch, context and tokens and shrink with SMs, slower beside the other side's work,
with a spread of samples. Its numbers describe no GPU."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from examples.pd.engine.shape import ModelShape
from examples.pd.sim.calibration import KIND, SHAPE_FIELDS, VERSION

TOTAL = 132
LAYERS = 4
SPREAD = (0.96, 1.0, 1.0, 1.02, 1.05, 1.12)


def _samples(median: float) -> list[float]:
    return [round(median * r, 2) for r in SPREAD]


def _decode_us(sms: int, bucket: int, context: int) -> float:
    speed = min(1.0, (max(sms, 1) / 64) ** 0.7)
    return (150 + 4 * bucket + 12 * context / 1000) * LAYERS / 4 / speed


def _piece_us(sms: int, tokens: int, pairs: int, layers: int) -> float:
    return layers * (0.9 * tokens + 40 * pairs / 1e6 + 30) * TOTAL / max(sms, 1)


def lane(latency_sms: int, batch_sms: int, shared: int, *, decode_slowdown: float, prefill_slowdown: float,
         buckets: list[int], max_len: int, chunk: int, piece_layers: int) -> dict[str, Any]:
    decode = []
    for bucket in sorted({b for b in buckets if b in (1, 8, 32, 64)} | {buckets[-1]}):
        for per_row in (max_len // 4, max_len * 3 // 4):
            idle = _decode_us(latency_sms, bucket, bucket * per_row)
            decode.append({"bucket": bucket, "tokens_per_row": per_row, "context_tokens": bucket * per_row,
                           "idle_us": _samples(idle), "loaded_us": _samples(idle * decode_slowdown)})
    prefill = []
    for tokens, prompts, start in ((chunk, 1, 0), (chunk, 4, 0), (chunk // 4, 1, 0), (chunk, 1, max_len - chunk - 1)):
        each = tokens // prompts
        pairs = prompts * (each * start + each * (each + 1) // 2)
        idle = _piece_us(batch_sms, tokens, pairs, piece_layers)
        prefill.append({"tokens": tokens, "prompts": prompts, "start": start, "layers": piece_layers, "pairs": pairs,
                        "idle_us": _samples(idle), "loaded_us": _samples(idle * prefill_slowdown)})
    return {"latency_sms": latency_sms, "batch_sms": batch_sms, "shared_sms": shared, "decode": decode,
            "prefill": prefill}


def calibration(*, slots: int = 16, max_len: int = 2048, chunk: int = 512, piece_layers: int = 1,
                counts: tuple[int, ...] = (16, 24, 32, 48, 64, 96),
                overlapped: tuple[tuple[int, int], ...] = ((16, 64), (32, 32))) -> dict[str, Any]:
    buckets = [b for b in (1, 8, 16, 32, 64) if b < slots] + [slots]
    common = dict(buckets=buckets, max_len=max_len, chunk=chunk, piece_layers=piece_layers)
    lanes = {"plain streams": lane(TOTAL, TOTAL, TOTAL, decode_slowdown=2.4, prefill_slowdown=1.15, **common)}
    lanes["0"] = lane(TOTAL, TOTAL, 0, decode_slowdown=2.6, prefill_slowdown=1.1, **common)
    lanes[str(TOTAL)] = lane(TOTAL, TOTAL, 0, decode_slowdown=2.6, prefill_slowdown=1.1, **common)
    for k in counts:
        lanes[str(k)] = lane(k, TOTAL - k, 0, decode_slowdown=1.25, prefill_slowdown=1.2, **common)
    for a, b in overlapped:
        shared = TOTAL - a - b
        lanes[f"o{a}/{b}"] = lane(a + shared, b + shared, shared, decode_slowdown=1.5, prefill_slowdown=1.3, **common)
    mixed = []
    for tokens in (64, 128, 256, 512):
        for rows in (min(8, slots - 1), slots - 1):
            context = rows * max_len // 2
            base = _decode_us(TOTAL, slots, context) + _piece_us(TOTAL, tokens, tokens * (tokens + 1) // 2, LAYERS)
            mixed.append({"prompt_tokens": tokens, "decode_rows": rows, "slots": slots, "context_tokens": context,
                          "pairs": tokens * (tokens + 1) // 2, "us": _samples(base)})
    shape = ModelShape(layers=LAYERS)
    return {
        "kind": KIND, "version": VERSION,
        "device": {"name": "Test GPU", "sm_count": TOTAL, "torch": "test", "driver": "13.0"},
        "model": {"layers": LAYERS, "slots": slots, "max_len": max_len, "buckets": buckets, "attention": "flash",
                  **{f: getattr(shape, f) for f in SHAPE_FIELDS}},
        "settings": {"workload": "test", "chunk": chunk, "piece_layers": piece_layers, "context": max_len // 2,
                     "budgets": [128, 256, 512], "poll_us": 50.0, "max_prompt": max_len // 2,
                     "max_output": max_len // 2},
        "costs": {"decode_step_ms": _decode_us(TOTAL, 32, 32 * 512) / 1e3, "decode_batch": 32, "context": 512,
                  "prefill_ms": _piece_us(TOTAL, 1024, 1024 * 1025 // 2, LAYERS) / 1e3, "prefill_tokens": 1024},
        "host_sleep_us": 100.0,
        "lanes": lanes, "aliases": {"o0": "0", f"o{TOTAL}": str(TOTAL)}, "mixed": mixed,
        "host": {"decode_launch_us": 40.0, "piece_launch_us": 150.0, "mixed_launch_us": 120.0, "switch_us": 3.0,
                 "query_us": 2.0, "sleep_50us_us": 100.0},
        "samples": len(SPREAD), "seconds": 0.0,
    }


def write(folder: pathlib.Path, **kwargs: Any) -> pathlib.Path:
    path = folder / "calibration.json"
    path.write_text(json.dumps(calibration(**kwargs)))
    return path
