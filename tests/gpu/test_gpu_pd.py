"""The prefill/decode example (examples/pd) on the GPU: flash attention against SDPA, prefill
pieces and graph-replayed decode steps against an eager SDPA model, and a smoke run of the
command line."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import torch

from examples.pd.engine import Engine, Lane
from examples.pd.model import Model, Part, check_attention
from examples.pd.admission import Live
from examples.pd.planning import ModelShape, PrefillCursor
from examples.pd.workload import Request

SHAPE = ModelShape(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=128, intermediate=512, vocab=1000)


def test_flash_attention_matches_sdpa(device):
    diffs = check_attention(torch.device("cuda", device))
    assert set(diffs) == {"decode", "prefill", "prefill after earlier tokens", "prefill of one token"}
    assert all(d <= 2e-2 for d in diffs.values()), diffs


def close(a, b):
    """bf16 through two layers: flash and SDPA round differently; compare relative norms."""
    a, b = a.float(), b.float()
    assert (a - b).norm() <= 2e-2 * b.norm(), ((a - b).norm() / b.norm()).item()


def test_prefill_pieces_and_graphed_decode_match_an_eager_sdpa_model(device):
    dev = torch.device("cuda", device)
    flash = Model(SHAPE, slots=4, max_len=256, device=dev, attention="flash", seed=3)
    ref = Model(SHAPE, slots=4, max_len=256, device=dev, attention="sdpa", seed=3)
    engine = Engine(flash, [1, 4])
    lane = Lane("test", torch.cuda.Stream(device), torch.cuda.Stream(device))
    engine.capture(lane)
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
    assert lanes and lanes <= {"o0", "o16/64", "o32/32", f"o{props_sm_count()}"}
    for metric in ("distserve", "p99"):
        assert (out / f"goodput-{metric}.png").stat().st_size > 1000
    assert (out / "layout-profile.json").exists() and (out / "profile.json").exists()
    # A resumed sweep with the same settings reuses every run.
    again = tmp_path / "again"
    _example(argv + ["--out", str(again), "--resume", str(out / "results.json"), "--layout-profile",
                     str(out / "layout-profile.json"), "--profile", str(out / "profile.json")])
    assert json.loads((again / "results.json").read_text())["runs"] == results["runs"]


def props_sm_count():
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count
