"""The prefill/decode example (examples/pd) on the GPU: flash attention against SDPA, prefill
pieces, graph-replayed decode steps and graph-replayed chunked-prefill iterations against an
eager SDPA model, and a smoke run of the command line."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import torch

from examples.pd.engine.admission import Live, PrefillPart
from examples.pd.bench.attention_check import check_attention
from examples.pd.engine.gpu import Engine
from examples.pd.engine.lanes import Lane
from examples.pd.engine.model import Model, Part
from examples.pd.engine.planning import ChunkedPlan, PrefillCursor
from examples.pd.engine.shape import ModelShape
from examples.pd.engine.request import Request

SHAPE = ModelShape(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=128, intermediate=512, vocab=1000)


def test_flash_attention_matches_sdpa(device):
    diffs = check_attention(torch.device("cuda", device))
    assert set(diffs) == {"decode", "prefill", "prefill after earlier tokens", "prefill of one token",
                         "prompt parts in one call"}
    assert all(d <= 2e-2 for d in diffs.values()), diffs


def close(a, b):
    """bf16 through two layers: flash and SDPA round differently; compare relative norms."""
    a, b = a.float(), b.float()
    assert (a - b).norm() <= 2e-2 * b.norm(), ((a - b).norm() / b.norm()).item()


def flash_and_reference(device):
    """A flash model with its engine (decode graphs captured on a lane) and an SDPA model of
    the same weights: 4 slots of 256 tokens."""
    dev = torch.device("cuda", device)
    flash = Model(SHAPE, slots=4, max_len=256, device=dev, attention="flash", seed=3)
    ref = Model(SHAPE, slots=4, max_len=256, device=dev, attention="sdpa", seed=3)
    engine = Engine(flash, [1, 4])
    lane = Lane("test", torch.cuda.Stream(device), torch.cuda.Stream(device))
    engine.capture(lane)
    return dev, flash, ref, engine, lane


def test_prefill_pieces_and_graphed_decode_match_an_eager_sdpa_model(device):
    dev, flash, ref, engine, lane = flash_and_reference(device)
    cursor = PrefillCursor(chunk=64, layers=SHAPE.layers, piece_layers=1)
    lives = [Live(Request(0, 0.0, 40, 8), 0), Live(Request(1, 0.0, 70, 8), 2)]
    for live in lives:
        cursor.add(live)
    while (piece := cursor.next_piece()) is not None:
        engine.prefill(lane, piece)
    torch.cuda.synchronize(device)
    for live in lives:  # the reference: each prompt in one eager pass
        rows, tokens = ref.host_rows([], [Part(live.request.id, live.slot, 0, live.request.prompt)])
        ref.run_layers(ref.embed(tokens), rows, 0, SHAPE.layers)
    close(flash.kv[:, :, [0, 2], :70], ref.kv[:, :, [0, 2], :70])
    for step in range(3):
        ref.last_token.copy_(flash.last_token)  # the same input tokens for both
        rows = [(0, 41 + step), (2, 71 + step)]
        engine.decode(lane, rows, 4).event.synchronize()
        slot, length = (torch.tensor(v, device=dev) for v in zip(*rows))
        h = ref.embed(ref.last_token.index_select(0, slot))
        ref.run_layers(h, ref.decode_rows(slot, length), 0, SHAPE.layers)
        close(flash.kv[:, :, [0, 2], :71 + step], ref.kv[:, :, [0, 2], :71 + step])
    assert flash.kv[:, :, [1, 3]].abs().sum() == 0  # slots no request used
    engine.drop_graphs()


def test_graphed_mixed_iterations_match_an_eager_sdpa_model(device):
    """Chunked-prefill iterations of decode rows and prompt chunks, replayed from the graphs of
    their token buckets (one with no padding), against the same passes run eagerly through
    SDPA: the same K/V in every request's slot and the same sampled tokens (up to near ties);
    prompt rows beyond every bucket run eagerly."""
    _, flash, ref, engine, lane = flash_and_reference(device)
    engine.capture_mixed(lane, 100)  # buckets of 64 and 100 prompt rows
    lives = [Live(Request(0, 0.0, 40, 8), 0), Live(Request(1, 0.0, 70, 8), 1), Live(Request(2, 0.0, 90, 8), 2),
             Live(Request(3, 0.0, 230, 8), 3)]
    for m in (flash, ref):
        for live in lives[:2]:
            rows, tokens = m.host_rows([], [Part(live.request.id, live.slot, 0, live.request.prompt)])
            m.run_layers(m.embed(tokens), rows, 0, SHAPE.layers)
    lives[0].tokens = lives[1].tokens = 1
    flash.last_token[0], flash.last_token[1] = 11, 29
    plans = [ChunkedPlan(tuple(lives[:2]), (PrefillPart(lives[2], 0, 50, False),)),  # bucket 64, 14 padding rows
             ChunkedPlan(tuple(lives[:2]), (PrefillPart(lives[2], 50, 40, True),)),  # bucket 64
             ChunkedPlan(tuple(lives[:3]), (PrefillPart(lives[3], 0, 100, False),)),  # bucket 100, no padding
             ChunkedPlan(tuple(lives[:3]), (PrefillPart(lives[3], 100, 130, True),))]  # eager
    for plan in plans:
        ref.last_token.copy_(flash.last_token)
        decode = [live.decode_row() for live in plan.decode]
        parts = [Part(p.live.request.id, p.live.slot, p.start, p.length) for p in plan.parts]
        rows, tokens = ref.host_rows(decode, parts)
        h = ref.run_layers(ref.embed(tokens), rows, 0, SHAPE.layers)
        picks = list(range(len(decode))) + [rows.parts[i][0] + p.length - 1 for i, p in enumerate(plan.parts)
                                            if p.completes]
        hidden = torch.nn.functional.rms_norm(h[picks], (SHAPE.hidden,), ref.final_norm, SHAPE.eps)
        logits = torch.nn.functional.linear(hidden, ref.lm_head).float()
        torch.cuda.synchronize(device)  # the graphs run on the lane's stream, the reference on the default one
        engine.iteration(lane, plan, 4).event.synchronize()
        slots = [live.slot for live in plan.decode] + [p.live.slot for p in plan.parts if p.completes]
        sampled = flash.last_token[slots]
        # bf16 through flash and SDPA may pick another token only where the two are near tied.
        best = logits.max(-1).values
        assert (best - logits.gather(1, sampled[:, None])[:, 0] <= 0.05 * best.abs().clamp(min=1)).all()
        close(flash.kv[:, :, :4], ref.kv[:, :, :4])
        for live in [*plan.decode, *(p.live for p in plan.parts if p.completes)]:
            live.tokens += 1
    assert engine.mixed_counts == {"graphed": 3, "eager": 1}
    engine.drop_graphs()


def _example(argv, **env):
    """``python -m examples.pd`` in a fresh interpreter, so that nothing it leaves behind (the
    allocator's blocks, idle contexts, loaded modules) reaches the tests after it."""
    root = pathlib.Path(__file__).resolve().parent.parent.parent
    result = subprocess.run([sys.executable, "-m", "examples.pd", *argv], cwd=root, capture_output=True, text=True,
                            timeout=600, env={**os.environ, **env})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_quick_run_writes_results(tmp_path):
    out = tmp_path / "pd"
    argv = ["--quick", "--layers", "2", "--requests", "8", "--quiet", "--out", str(out), "--schedulers",
            "chunked,streams,static,static-overlap,pd,pd-overlap,policy", "--overlapped", "16/64,32/32"]
    _example(argv, TORCH_GREEN_CONTEXTS_IDLE_LIMIT="0")  # contexts destroyed once dropped, as in a long sweep
    results = json.loads((out / "results.json").read_text())
    assert set(results["schedulers"]) == {"chunked", "streams", "static", "static-overlap", "pd", "pd-overlap", "policy"}
    measured = [r for r in results["runs"] if not r["skipped"]]
    assert all(r["summary"]["requests"] <= 8 and r["summary"]["finished"] == r["summary"]["requests"]
               for r in measured if r["summary"]["attainment"] == 1.0)
    assert {r["order"] for r in measured} == {"fcfs", "spf"}
    lanes = {lane for r in measured if r["scheduler"] == "pd-overlap" for lane in r["summary"]["steps_per_lane"]}
    whole = f"o{props_sm_count()}"  # the policy's mixed-batch fallback runs on the whole device only
    assert lanes and lanes <= {"o0", "o16/64", "o32/32", whole, f"{whole} mixed"}
    for metric in ("distserve", "p99"):
        assert (out / f"goodput-{metric}.png").stat().st_size > 1000
    assert (out / "layout-profile.json").exists() and (out / "profile.json").exists()
    calibration = json.loads((out / "calibration.json").read_text())
    chunk = calibration["settings"]["chunk"]
    beside = calibration["lanes"]["plain streams"]["decode_beside_pieces"]
    assert {b["piece_tokens"] for b in beside} == {chunk // 8, chunk // 4, chunk // 2}
    assert all(len(b["loaded_us"]) == calibration["samples"] and min(b["loaded_us"]) > 0 for b in beside)
    assert all("decode_beside_pieces" not in lane for name, lane in calibration["lanes"].items()
               if name != "plain streams")
    assert results["model"]["chunked_mixed_iterations"] == "CUDA graphs per token bucket"
    chunked = [r["summary"]["mixed_iterations"] for r in measured if r["scheduler"] == "chunked"]
    assert chunked and sum(c["graphed"] for c in chunked) > 0 and all(c["eager"] == 0 for c in chunked)
    # A resumed sweep with the same settings reuses every run.
    again = tmp_path / "again"
    _example(argv + ["--out", str(again), "--resume", str(out / "results.json"), "--layout-profile",
                     str(out / "layout-profile.json"), "--profile", str(out / "profile.json")])
    assert json.loads((again / "results.json").read_text())["runs"] == results["runs"]


def props_sm_count():
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count
