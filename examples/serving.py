"""A transformer answering requests beside a training job, on one GPU.

The server is a 4-layer ``torch.nn.TransformerEncoder`` (bf16, d_model 1024, random weights);
a request is its forward pass over a batch of 4 x 256 tokens. Beside it a training loop
(forward, backward and an AdamW step of a 4-layer d_model 2048 encoder on 8 x 1024 tokens)
keeps the rest of the GPU busy. Nothing is downloaded.

The example first sizes the request's partition with :func:`torch_green_contexts.sizing.measure`
(the smallest SM count whose request p99 under the training load meets ``--deadline-us``),
then measures request latency (p50, p99) and training steps/s, idle and together, for:

- plain streams (what sharing a GPU does without partitions);
- a high-priority stream for the requests;
- separately created contexts (``GreenContext(num_sms=k)`` twice: they may share SMs);
- the split of the size the sizing picked (disjoint by construction);
- the split of a fixed size (``--fixed-sms``).

    python examples/serving.py --deadline-us 1000 --out serving-results

Requests replay a CUDA graph of the forward pass, captured once per partition, as servers do
for their decode steps (``--eager`` launches them op by op instead; Python's launch overhead
then dominates on large partitions). It writes ``serving.json`` and ``sizing.json`` first, then,
with matplotlib installed, ``serving.png`` (the comparison) and ``sizing.png`` (the sweep).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

import torch

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, observed_sm_ids, sizing

try:
    from examples._plots import optional_plot, pyplot
except ImportError:  # run as a script: python examples/serving.py
    from _plots import optional_plot, pyplot  # type: ignore[no-redef, import-not-found]

SERVER = dict(layers=4, d_model=1024, heads=16, ff=4096, batch=4, tokens=256)
TRAINER = dict(layers=4, d_model=2048, heads=16, ff=8192, batch=8, tokens=1024)


def encoder(layers: int, d_model: int, heads: int, ff: int, device: int) -> torch.nn.TransformerEncoder:
    layer = torch.nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True,
                                             device=device, dtype=torch.bfloat16)
    return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def make_server(device: int) -> Callable[[], torch.Tensor]:
    """One request: the encoder's forward pass over a fresh batch (inference mode)."""
    c = SERVER
    model = encoder(c["layers"], c["d_model"], c["heads"], c["ff"], device).eval()
    tokens = torch.randn(c["batch"], c["tokens"], c["d_model"], device=device, dtype=torch.bfloat16)

    def request() -> torch.Tensor:
        with torch.inference_mode():
            out: torch.Tensor = model(tokens)
            return out

    return request


def make_trainer(device: int) -> Callable[[], None]:
    """One training step: forward, backward and AdamW on a batch of random tokens."""
    c = TRAINER
    model = encoder(c["layers"], c["d_model"], c["heads"], c["ff"], device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    tokens = torch.randn(c["batch"], c["tokens"], c["d_model"], device=device, dtype=torch.bfloat16)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = model(tokens).float().pow(2).mean()
        loss.backward()
        optimizer.step()

    return step


def variants(device: int, sized_sms: int, fixed_sms: int) -> dict[str, dict[str, Any]]:
    """name -> request stream, training stream, and the contexts they need alive."""
    total = tgc.SMPartition.from_device(device).sm_count
    plain_train = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    out: dict[str, dict[str, Any]] = {
        "plain streams": {"request": torch.cuda.Stream(device), "train": plain_train},  # type: ignore[no-untyped-call]
        "high-priority request stream": {
            "request": torch.cuda.Stream(device, priority=torch.cuda.Stream.priority_range()[1]),  # type: ignore[no-untyped-call, call-arg]
            "train": plain_train},
    }
    own = GreenContext(num_sms=fixed_sms, device_id=device)
    other = GreenContext(num_sms=total - fixed_sms, device_id=device)
    out[f"separate contexts ({own.sm_count} + {other.sm_count} SMs)"] = {
        "request": own.Stream(), "train": other.Stream(), "keep": (own, other)}
    for label, k in ((f"split, sized for the deadline ({sized_sms} SMs)", sized_sms),
                     (f"split, fixed ({fixed_sms} SMs)", fixed_sms)):
        first, rest = GreenContext.split(num_sms=(k, 0), backfill=(False, True), device_id=device)
        out[label] = {"request": first.Stream(), "train": rest.Stream(), "keep": (first, rest),
                      "sms": (first.sm_count, rest.sm_count)}
    for v in out.values():
        req, train = set(observed_sm_ids(v["request"])), set(observed_sm_ids(v["train"]))
        v["observed"] = {"request_sms": len(req), "train_sms": len(train), "shared_sms": len(req & train)}
    return out


def compare(request: Callable[[], Any], train: Callable[[], None], setups: dict[str, dict[str, Any]],
            device: int, rounds: int, samples: int, warmup: int, depth: int, graph: bool,
            progress: bool = True) -> dict[str, Any]:
    """Request latency idle and beside training, and training steps/s, per setup, interleaved.
    With `graph`, each setup's requests replay a CUDA graph captured on its own stream."""
    for setup in setups.values():
        setup["step"] = sizing.graphed(request, setup["request"]) if graph else request
    alone_stream = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    names = ["training alone (plain stream)"]
    for name in setups:
        names += [f"{name} | idle", f"{name} | with training"]
    times: dict[str, list[float]] = {n: [] for n in names}
    steps: dict[str, list[tuple[int, float]]] = {n: [] for n in names}
    first = next(iter(setups.values()))
    once_s = sizing.time_calls(first["step"], first["request"], 2)[-1] / 1e6
    began = time.perf_counter()
    for i, (_, name) in enumerate(sizing.interleaved(names, rounds, seed=1)):
        if progress:
            print(f"comparison: {i}/{len(names) * rounds} variants, {time.perf_counter() - began:.0f} s",
                  file=sys.stderr, flush=True)
        torch.cuda.synchronize(device)
        if name.startswith("training alone"):
            load = sizing.QueuedLoad(train, alone_stream, depth)
            load.start()
            deadline = time.perf_counter() + max(samples * once_s * 4, 0.05)
            while time.perf_counter() < deadline:
                load.top_up()
                time.sleep(1e-4)
            load.stop()
            steps[name].append((load.calls, load.seconds))
            continue
        setup_name, mode = name.split(" | ")
        setup = setups[setup_name]
        beside = None
        if mode == "with training":
            beside = sizing.QueuedLoad(train, setup["train"], depth)
            beside.start()
        sizing.time_calls(setup["step"], setup["request"], warmup, beside)
        times[name].extend(sizing.time_calls(setup["step"], setup["request"], samples, beside))
        if beside is not None:
            beside.stop()
            steps[name].append((beside.calls, beside.seconds))
    torch.cuda.synchronize(device)

    def steps_per_s(name: str) -> float | None:
        runs = steps[name]
        return sum(c for c, _ in runs) / sum(s for _, s in runs) if runs else None

    alone = steps_per_s(names[0])
    out: dict[str, Any] = {"training_alone_steps_per_s": alone, "setups": {}}
    for name, setup in setups.items():
        idle = sizing.Latency.of(times[f"{name} | idle"])
        busy = sizing.Latency.of(times[f"{name} | with training"])
        busy_rate = steps_per_s(f"{name} | with training")
        out["setups"][name] = {
            "idle_us": vars(idle), "with_training_us": vars(busy),
            "p99_with_training_vs_idle": busy.p99 / idle.p99,
            "p50_with_training_vs_idle": busy.p50 / idle.p50,
            "training_steps_per_s": busy_rate,
            "training_vs_alone": busy_rate / alone if busy_rate and alone else None,
            "observed_sms": setup["observed"],
        }
    return out


def plot(results: dict[str, Any], path: str) -> None:
    plt = pyplot()

    setups = results["comparison"]["setups"]
    names = list(setups)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    xs = range(len(names))
    for offset, (key, label, color) in enumerate((("idle_us", "idle", "tab:blue"),
                                                  ("with_training_us", "beside training", "tab:red"))):
        left.bar([x + 0.4 * offset - 0.2 for x in xs], [setups[n][key]["p99"] for n in names], 0.4,
                 color=color, label=f"p99, {label}")
        left.scatter([x + 0.4 * offset - 0.2 for x in xs], [setups[n][key]["p50"] for n in names],
                     color="black", marker="_", s=200, zorder=3, label=f"p50, {label}" if offset else "p50")
    left.axhline(results["deadline_us"], color="tab:green", ls="-.", label=f"deadline {results['deadline_us']:g} us")
    left.set_yscale("log")
    left.set_ylabel("request latency (us, CUDA events)")
    left.set_xticks(list(xs))
    left.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    left.legend(fontsize=8)
    left.grid(alpha=0.3, axis="y", which="both")
    alone = results["comparison"]["training_alone_steps_per_s"]
    right.bar(list(xs), [setups[n]["training_steps_per_s"] or 0 for n in names], color="tab:orange")
    right.axhline(alone, color="black", ls=":", label="training alone on the whole GPU")
    right.set_ylabel("training steps/s beside the requests")
    right.set_xticks(list(xs))
    right.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    right.legend(fontsize=8)
    right.grid(alpha=0.3, axis="y")
    env = results["device"]
    fig.suptitle(f"Transformer requests beside a training job: {env['name']}, driver {env['driver']}, "
                 f"torch {env['torch']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(results: dict[str, Any]) -> str:
    lines = ["| setup | SMs req/train/shared | idle p50 | idle p99 | busy p50 | busy p99 | busy p99 / idle p99 "
             "| steps/s | vs training alone |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results["comparison"]["setups"].items():
        o = r["observed_sms"]
        rate, rel = r["training_steps_per_s"], r["training_vs_alone"]
        lines.append(
            f"| {name} | {o['request_sms']}/{o['train_sms']}/{o['shared_sms']} | {r['idle_us']['p50']:.0f} | "
            f"{r['idle_us']['p99']:.0f} | {r['with_training_us']['p50']:.0f} | {r['with_training_us']['p99']:.0f} | "
            f"{r['p99_with_training_vs_idle']:.2f}x | {rate:.2f} | {rel:.2f}x |")
    lines.append(f"| training alone (plain stream) | | | | | | | "
                 f"{results['comparison']['training_alone_steps_per_s']:.2f} | 1.00x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deadline-us", type=float, default=1000.0,
                        help="request p99 deadline under the training load, microseconds (default 1000)")
    parser.add_argument("--fixed-sms", type=int, default=32, help="the fixed-size split to compare (default 32)")
    parser.add_argument("--sms", type=int, help="skip the sizing sweep and use this many SMs for the sized split")
    parser.add_argument("--counts", help="comma-separated SM counts for the sweep (default: every exact count)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=50, help="requests timed per variant and round")
    parser.add_argument("--out", default="serving-results")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few counts and samples")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--eager", action="store_true",
                        help="launch each request op by op instead of replaying a CUDA graph of it")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("this example needs a CUDA GPU", file=sys.stderr)
        return 2
    device = args.device
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    request, train = make_server(device), make_trainer(device)
    for _ in range(3):  # cuBLAS handles, autotuning, the optimizer's state
        request()
        train()
    torch.cuda.synchronize(device)

    results: dict[str, Any] = {"deadline_us": args.deadline_us, "server": SERVER, "trainer": TRAINER,
                               "requests": "eager" if args.eager else "CUDA graph replays"}
    counts = [int(c) for c in args.counts.split(",")] if args.counts else None
    if args.quick and counts is None:
        counts = [c for c in sizing.available_counts(device) if c in (8, 16, 32, 64)]
    if args.sms is None:
        sweep = sizing.measure(request, load=train, device_id=device, counts=counts, graph=not args.eager,
                               rounds=1 if args.quick else 2, samples=5 if args.quick else 15,
                               progress=not args.quiet)
        results["sizing"] = sweep.to_dict()
        with open(os.path.join(args.out, "sizing.json"), "w") as f:  # before anything optional
            f.write(sweep.to_json())
        optional_plot(sweep.plot, os.path.join(args.out, "sizing.png"), deadline_us=args.deadline_us)
        print(sweep.table())
        print(f"sizing sweep of {len(sweep.rows)} counts took {sweep.settings['seconds']:.1f} s")
        sized = sweep.smallest_meeting(args.deadline_us)
        results["sized_sms"] = sized
        if sized is None:
            best = min((r for r in sweep.rows if r.loaded), key=lambda r: r.loaded.p99 if r.loaded else 0)
            print(f"no SM count met p99 <= {args.deadline_us:g} us under load; using the best, {best.sm_count}")
            sized = best.sm_count
    else:
        sized = results["sized_sms"] = args.sms
    print(f"sized split: {sized} SMs for p99 <= {args.deadline_us:g} us")

    setups = variants(device, sized, args.fixed_sms)
    depth = max(2, results.get("sizing", {}).get("settings", {}).get("load_depth") or 2)
    results["comparison"] = compare(request, train, setups, device, rounds=1 if args.quick else args.rounds,
                                    samples=5 if args.quick else args.samples, warmup=2, depth=depth,
                                    graph=not args.eager, progress=not args.quiet)
    results["device"] = {"name": torch.cuda.get_device_properties(device).name,
                         "driver": "{}.{}".format(*divmod(tgc.driver_version() // 10, 100)),
                         "torch": torch.__version__, "sm_count": tgc.SMPartition.from_device(device).sm_count}
    sized_name = next(n for n in setups if n.startswith("split, sized"))
    sized_p99 = results["comparison"]["setups"][sized_name]["with_training_us"]["p99"]
    results["sized_split_meets_deadline"] = sized_p99 <= args.deadline_us
    with open(os.path.join(args.out, "serving.json"), "w") as f:
        json.dump(results, f, indent=1)
    optional_plot(lambda path: plot(results, path), os.path.join(args.out, "serving.png"))
    print(table(results))
    print(f"sized split ({sized} SMs): p99 beside training {sized_p99:.0f} us, deadline {args.deadline_us:g} us: "
          f"{'met' if results['sized_split_meets_deadline'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
