"""Communication on one partition while compute runs on the other, one process per GPU.

``python -m benchmarks.distributed --out DIR`` spawns one process per visible GPU (NCCL through
torch.distributed). Each step is a GEMM loop plus an all-reduce, run three ways: one after
the other on one stream, overlapped on two plain streams, and overlapped on disjoint
partitions (the all-reduce on a partition of k SMs, the GEMMs on the rest) for a few k. Rank 0
writes ``distributed.json`` and ``distributed.png``. The all-reduce is issued with
async_op=False under ``torch.cuda.stream(...)``, which PyTorch 2.8+ launches on that stream.

:func:`rank_checks` is the per-rank body of tests/gpu/test_gpu_distributed.py.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, _plotting

from .stats import interleaved, summarize


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _init(rank: int, world: int, port: int) -> int:
    torch.cuda.set_device(rank)
    torch.empty(1, device=rank)  # the primary context, current on this thread
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    return tgc._C.current_context()


def rank_checks(rank: int, world: int, port: int, out_dir: str, comm_sms: int) -> None:
    """Splits this rank's GPU into a communication and a compute partition, all-reduces on the
    first while a GEMM loop runs on the second, and writes what it saw to out_dir/rank<r>.json."""
    report: dict[str, Any] = {"rank": rank}
    try:
        primary = _init(rank, world, port)
        comm, compute = GreenContext.split(num_sms=(comm_sms, 0), backfill=(False, True), device_id=rank)
        report["devices"] = [comm.device_id, compute.device_id]
        report["sm_counts"] = [comm.sm_count, compute.sm_count]
        comm_stream, compute_stream = comm.Stream(), compute.Stream()
        a = torch.randn(2048, 2048, device=rank)
        expected_gemm = a @ a
        results_ok = []
        for step in range(5):
            x = torch.full((1 << 22,), float(rank + 1 + step), device=rank)
            torch.cuda.synchronize(rank)
            comm_stream.wait_stream(torch.cuda.current_stream(rank))
            compute_stream.wait_stream(torch.cuda.current_stream(rank))
            with torch.cuda.stream(compute_stream):
                gemms = [a @ a for _ in range(8)]
            with torch.cuda.stream(comm_stream):
                dist.all_reduce(x)
            comm_stream.synchronize()
            compute_stream.synchronize()
            want = world * (world + 1) / 2 + world * step
            results_ok.append(bool(torch.all(x == want)) and
                              all(torch.allclose(g, expected_gemm, rtol=1e-3, atol=1e-3) for g in gemms))
        report["results_correct"] = results_ok
        ours = {comm._native.context_handle, compute._native.context_handle}
        current = tgc._C.current_context()
        report["current_context_is_primary"] = current == primary
        report["current_context_is_a_green_context"] = current in ours
        dist.barrier()
        dist.destroy_process_group()
        report["after_destroy_current_is_primary_or_none"] = tgc._C.current_context() in (primary, 0)
    except Exception as error:  # noqa: BLE001 - reported to the parent
        report["error"] = f"{type(error).__name__}: {error}"
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)


def _step(a: torch.Tensor, x: torch.Tensor, gemms: int, compute: torch.cuda.Stream,
          comm: torch.cuda.Stream, start: torch.cuda.Event, end: torch.cuda.Event) -> float:
    """One step (GEMM loop + all-reduce) on `compute` and `comm` (which may be the same
    stream); returns its milliseconds from CUDA events on the current stream."""
    rank = a.device.index
    current = torch.cuda.current_stream(rank)
    start.record(current)
    compute.wait_stream(current)
    comm.wait_stream(current)
    with torch.cuda.stream(compute):
        for _ in range(gemms):
            torch.mm(a, a)
    with torch.cuda.stream(comm):
        dist.all_reduce(x)
    current.wait_stream(compute)
    current.wait_stream(comm)
    end.record(current)
    end.synchronize()
    return start.elapsed_time(end)


def rank_benchmark(rank: int, world: int, port: int, out_dir: str, comm_sizes: list[int],
                   rounds: int, gemms: int, n: int, message_mib: int) -> None:
    _init(rank, world, port)
    a = torch.randn(n, n, device=rank, dtype=torch.bfloat16)
    x = torch.randn(message_mib << 18, device=rank)  # float32 elements
    plain_compute, plain_comm = torch.cuda.Stream(), torch.cuda.Stream()
    variants: dict[str, tuple[torch.cuda.Stream, torch.cuda.Stream]] = {
        "serial (one stream)": (plain_compute, plain_compute),
        "overlapped, plain streams": (plain_compute, plain_comm),
    }
    contexts = []
    for k in comm_sizes:
        comm, compute = GreenContext.split(num_sms=(k, 0), backfill=(False, True), device_id=rank)
        contexts.append((comm, compute))
        variants[f"overlapped, all-reduce on {comm.sm_count} SMs, GEMMs on {compute.sm_count}"] = (
            compute.Stream(), comm.Stream())
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for compute_stream, comm_stream in variants.values():  # warm-up
        _step(a, x, gemms, compute_stream, comm_stream, start, end)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _, name in interleaved(list(variants), rounds):
        dist.barrier()
        times[name].append(_step(a, x, gemms, *variants[name], start, end))
    # Reference parts alone: the GEMM loop and the all-reduce, each on a plain stream.
    alone = {"GEMM loop alone": [], "all-reduce alone": []}
    for _ in range(rounds):
        dist.barrier()
        start.record()
        for _ in range(gemms):
            torch.mm(a, a)
        end.record()
        end.synchronize()
        alone["GEMM loop alone"].append(start.elapsed_time(end))
        dist.barrier()
        start.record()
        dist.all_reduce(x)
        end.record()
        end.synchronize()
        alone["all-reduce alone"].append(start.elapsed_time(end))
    result = {name: summarize(v) for name, v in {**times, **alone}.items()}
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, result)
    if rank == 0:
        report = {
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "gpus": [torch.cuda.get_device_name(i) for i in range(world)],
            "world_size": world,
            "torch": torch.__version__,
            "cuda_driver": tgc._C.format_driver_version(tgc.driver_version()),
            "step": f"{gemms} x {n}^3 bf16 GEMM + all-reduce of {message_mib} MiB float32",
            "rounds": rounds,
            "variants": list(variants) + list(alone),
            "per_rank_ms": gathered,
        }
        with open(os.path.join(out_dir, "distributed.json"), "w") as f:
            json.dump(report, f, indent=1)
        _plot(report, out_dir)
        for name in report["variants"]:
            medians = [r[name]["median"] for r in gathered]
            print(f"{name:<60} step median {max(medians):8.2f} ms (slowest rank)")
    dist.destroy_process_group()


def _plot(report: dict[str, Any], out_dir: str) -> None:
    plt = _plotting.pyplot_if_installed()
    if plt is None:
        return
    names = report["variants"]
    medians = [max(r[name]["median"] for r in report["per_rank_ms"]) for name in names]
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(names) + 1.5))
    ax.barh(range(len(names)), medians)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("step time, ms (median, slowest rank)")
    ax.set_title(f"{report['step']}, {report['world_size']} x {report['gpus'][0]}")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "distributed.png"), dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.distributed", description=__doc__)
    parser.add_argument("--out", default="benchmark-results")
    parser.add_argument("--comm-sms", default="8,16,24,32", help="partition sizes for the all-reduce")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--gemms", type=int, default=8)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--message-mib", type=int, default=256)
    args = parser.parse_args(argv)
    world = torch.cuda.device_count()
    if world == 0:
        print("needs at least one CUDA GPU")
        return 2
    os.makedirs(args.out, exist_ok=True)
    sizes = [int(s) for s in args.comm_sms.split(",") if s]
    mp.spawn(rank_benchmark, args=(world, free_port(), args.out, sizes, args.rounds, args.gemms, args.n,
                                   args.message_mib), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
