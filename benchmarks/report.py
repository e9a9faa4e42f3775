"""Targets, the printed table and the plots of a benchmark run (no GPU needed)."""

from __future__ import annotations

import os
from typing import Any

from . import pd_report
from .stats import target

STREAM_OURS = "ours: GreenContext.Stream()"
CREATE_OURS = "ours: GreenContext(num_sms)"
CREATE_RAW = "driver: the same calls"
SPLIT_OURS = "ours: GreenContext.split"


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, evaluated on whatever parts of the run are present."""
    out: list[dict[str, Any]] = []
    stream = results.get("stream")
    if stream:
        r = stream["results"]
        builtin = r.get("torch built-in: GreenContext.Stream()", {}).get("median")
        out.append(target("Stream() median host cost", r[STREAM_OURS]["median"], 2.0, unit="us",
                          detail="torch built-in: " + (f"{builtin:.2f} us" if builtin else "n/a")))
    counts = results.get("sm_count")
    if counts:
        ours = {name: s for name, s in counts["results"].items() if name.startswith("ours:")}
        slowest = max(ours, key=lambda name: ours[name]["median"])
        out.append(target("sm_count(stream) host cost per call, slowest kind of stream (median)",
                          ours[slowest]["median"], 1.0, unit="us", detail=slowest))
    create = results.get("create")
    if create:
        c = create["create"]
        out.append(target("GreenContext(num_sms=16) / the bare driver calls",
                          c[CREATE_OURS]["median"] / c[CREATE_RAW]["median"], 1.05, unit="x",
                          detail=f"{c[CREATE_OURS]['median']:.0f} us vs {c[CREATE_RAW]['median']:.0f} us"))
        if SPLIT_OURS in c:
            out.append(target("GreenContext.split(num_sms=(16, 116)) / one GreenContext(num_sms=16)",
                              c[SPLIT_OURS]["median"] / c[CREATE_OURS]["median"], 2.0, unit="x",
                              detail=f"{c[SPLIT_OURS]['median']:.0f} us vs {c[CREATE_OURS]['median']:.0f} us"))
    isolation = results.get("isolation")
    if isolation:
        loaded = _ours_loaded(isolation)
        r = isolation["results"][loaded]
        out.append(target("isolation p50 under load / idle on the partition", r["p50_vs_partition_idle"],
                          1.10, unit="x", detail=f"p50 {r['device_us']['median']:.0f} us"))
        out.append(target("isolation p99 under load / idle on the partition", r["p99_vs_partition_idle"],
                          1.30, unit="x", detail=f"p99 {r['device_us']['p99']:.0f} us"))
    fidelity = results.get("fidelity")
    if fidelity:
        full = max((v for k, v in fidelity["results"].items() if k.startswith("ours:")),
                   key=lambda v: v["sm_count"])
        out.append(target(f"GEMM TFLOP/s on a context of all {full['sm_count']} SMs / plain stream",
                          full["ratio_to_plain"], 0.97, unit="x", higher_is_better=True,
                          detail="interleaved medians"))
    layouts = results.get("layouts")
    if layouts:
        cost = layouts["switch"]["switch_us"]
        out.append(target("Layouts.switch host cost per real switch (median)", cost["median"], 5.0, unit="us",
                          detail=f"p99 {cost['p99']:.2f} us; returns while the GPU is busy: "
                                 f"{layouts['no_host_wait']['kernel_still_running_after_switches']}"))
    if results.get("pd"):
        out += pd_report.targets(results["pd"])
    pd_policy = results.get("pd_policy")
    if pd_policy:
        parts = pd_policy.get("parts")
        for name in ("budget rule", "p99 mode"):
            figures = pd_policy[name]["step_and_done_us"]
            detail = f"p90 {figures['p90']:.2f} us"
            if parts and "untimed_step_and_done_us" in pd_policy[name]:
                detail += (f"; without the step timer {pd_policy[name]['untimed_step_and_done_us']['median']:.2f} us, "
                           f"one event record {parts['event_record_us']['median']:.2f} us, "
                           f"one layout switch {parts['switch_us']['median']:.2f} us")
            if "sampled_step_and_done_us" in pd_policy[name]:
                detail += (f"; timing one step in {pd_policy[name]['sample_every']} (sample_every) "
                           f"{pd_policy[name]['sampled_step_and_done_us']['median']:.2f} us")
            out.append(target(f"PrefillDecodePolicy.step() + done() host cost, {name} (median)", figures["median"], 5.0,
                              unit="us", detail=detail))
    return out


def _ours_loaded(isolation: dict[str, Any]) -> str:
    return next(n for n in isolation["variants"] if n.startswith("ours:") and "load" in n)


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown(results: dict[str, Any]) -> str:
    """The whole run as Markdown tables."""
    lines: list[str] = ["# torch_green_contexts benchmarks", ""]
    env = results.get("environment", {})
    lines += _table(["", ""], [[k, v] for k, v in env.items()]) + [""]
    checks = results.get("targets", [])
    if checks:
        lines += ["## Targets", ""]
        lines += _table(["target", "measured", "goal", "met", "detail"], [
            [t["name"], _f(t["measured"]) + " " + t["unit"], f"{t['comparison']} {t['goal']} {t['unit']}",
             {True: "yes", False: "NO", None: "n/a"}[t["met"]], t["detail"]] for t in checks]) + [""]
    stream = results.get("stream")
    if stream:
        lines += [f"## Stream(): host cost per call, us ({stream['rounds']} interleaved rounds)", ""]
        lines += _table(["variant", "median", "p10", "p90", "p99"], [
            [name, _f(s["median"]), _f(s["p10"]), _f(s["p90"]), _f(s["p99"])]
            for name, s in stream["results"].items()]) + [""]
    counts = results.get("sm_count")
    if counts:
        lines += [f"## sm_count(stream): host cost per call, us ({counts['rounds']} interleaved rounds of "
                  f"{counts['batch']} calls)", ""]
        lines += _table(["variant", "median", "p10", "p90", "p99", "answer"], [
            [name, _f(s["median"], 3), _f(s["p10"], 3), _f(s["p90"], 3), _f(s["p99"], 3),
             counts["answers"].get(name, "")]
            for name, s in counts["results"].items()]) + [""]
    create = results.get("create")
    if create:
        lines += [f"## Creating and destroying contexts, us ({create['rounds']} interleaved rounds)", ""]
        rows = []
        for name, s in create["create"].items():
            d = create["destroy"].get(name)
            rows.append([name, _f(s["median"], 0), _f(s["p90"], 0), _f(d["median"] if d else None, 0),
                         create["granted_sm_counts"].get(name, "")])
        fs = create["first_stream_of_fresh_context"]
        rows.append(["ours: first Stream() of a fresh context", _f(fs["median"], 1), _f(fs["p90"], 1), "", ""])
        lines += _table(["variant", "create median", "create p90", "destroy median", "SMs granted"], rows) + [""]
        if create.get("steps"):
            lines += ["Where the time goes (medians, us):", ""]
            lines += _table(["step", "median", "p90"], [[name, _f(s["median"], 1), _f(s["p90"], 1)]
                                                       for name, s in create["steps"].items()]) + [""]
    memory = results.get("memory")
    if memory:
        lines += ["## Memory held", ""]
        keys = list(next(iter(memory.values())).keys())
        lines += _table(["", *memory.keys()], [[k, *(_f(m.get(k)) for m in memory.values())] for k in keys]) + [""]
    churn = results.get("churn")
    if churn:
        lines += ["## Churn: memory kept per create/destroy cycle", ""]
        lines += _table(["way", "cycles", "device KiB per cycle", "host KiB per cycle"], [
            [name, r["cycles"], _f(r["device_kib_per_cycle"], 0), _f(r["host_kib_per_cycle"], 0)]
            for name, r in churn["results"].items()]) + [""]
        lines += [f"- {k}: {_f(v, 0)}" for k, v in churn["recovery"].items()] + [""]
    isolation = results.get("isolation")
    if isolation:
        lines += [f"## Isolation: {isolation['latency_gemm']} GEMM latency, load {isolation['load_gemm']}", ""]
        rows = []
        for name in isolation["variants"]:
            r = isolation["results"][name]
            sms = isolation["observed_sms"].get(name)
            load = r["load_tflops"]
            rows.append([name, _f(r["device_us"]["median"], 0), _f(r["device_us"]["p99"], 0),
                         _f(r["p50_vs_partition_idle"]), _f(r["p99_vs_partition_idle"]),
                         _f(r["host_us"]["median"], 0), _f(load["median"], 0) if load else "",
                         f"{sms['latency_sms']}/{sms['load_sms']}/{sms['shared_sms']}" if sms else "",
                         "yes" if r["result_correct"] else "NO"])
        lines += _table(["variant", "p50 us", "p99 us", "p50 / idle partition", "p99 / idle partition",
                         "host p50 us", "load TFLOP/s", "SMs latency/load/shared", "correct"], rows) + [""]
    fidelity = results.get("fidelity")
    if fidelity:
        lines += [f"## Fidelity: {fidelity['gemm']} GEMM TFLOP/s ({fidelity['rounds']} interleaved rounds)", ""]
        rows = []
        for name, r in fidelity["results"].items():
            rows.append([name, r["sm_count"], _f(r["tflops"]["median"], 0), _f(r["tflops"]["min"], 0),
                         _f(r["tflops"]["max"], 0), _f(r["tflops_sequential_pass"], 0),
                         _f(r["ratio_to_share_of_whole"], 3), _f(r["ratio_to_plain"], 3),
                         _f(r["sm_clock_mhz"], 0)])
        lines += _table(["variant", "SMs", "median", "min", "max", "one pass, plain first",
                         "vs SMs/132 of plain", "vs plain", "SM clock MHz"], rows) + [""]
        kernels = fidelity.get("kernels") or {}
        if kernels:
            lines += ["Kernels of one GEMM:", ""]
            lines += [f"- {name}: {', '.join(k) if isinstance(k, list) else k}" for name, k in kernels.items()]
            lines += [""]
    lines += _layouts_markdown(results.get("layouts"))
    lines += _membound_markdown(results.get("membound"))
    if results.get("pd"):
        lines += pd_report.markdown(results["pd"])
    return "\n".join(lines)


def _layouts_markdown(layouts: dict[str, Any] | None) -> list[str]:
    if not layouts:
        return []
    sw = layouts["switch"]
    lines = [f"## Switching layouts {layouts['latency_sms']} (host us, {layouts['switches_timed']} switches)", ""]
    lines += _table(["call", "median", "p90", "p99", "max"], [
        [name, _f(s["median"]), _f(s["p90"]), _f(s["p99"]), _f(s["max"])] for name, s in (
            ("Layouts.switch to another layout", sw["switch_us"]),
            ("Layouts.switch to the same layout", sw["same_layout_us"]),
            ("by hand: 4 x torch wait_stream", layouts["torch_wait_stream_by_hand_us"]))]) + [""]
    nw = layouts["no_host_wait"]
    lines += [f"- {nw['switches']} switches while a 0.2 s kernel ran took {nw['host_us']:.1f} us of host time; "
              f"the kernel was still running afterwards: {nw['kernel_still_running_after_switches']}; work "
              f"queued after the switches waited for it: {nw['later_work_waited_for_the_kernel']}", ""]
    lines += _table(["latency SMs", "SMs latency/batch/shared", "covers the device", "counts match"], [
        [k, f"{d['latency_sms']}/{d['batch_sms']}/{d['shared_sms']}", d["covers_device"], d["counts_match"]]
        for k, d in layouts["disjoint_while_all_exist"].items()]) + [""]
    lines += _table(["layouts held", "contexts", "streams", "device MiB", "host MiB"], [
        [m["layouts"], m["contexts"], m["streams"], _f(m["device_mib"], 1), _f(m["host_mib"], 1)]
        for m in layouts["memory"]]) + [""]
    return lines


def _membound_markdown(membound: dict[str, Any] | None) -> list[str]:
    if not membound:
        return []
    small, rest = membound["partition_sms"]
    lines = [f"## Memory-bound steps on {small} SMs beside loads on the other {rest}", ""]
    for step, variants in membound["results"].items():
        lines += [f"{step}:", ""]
        rows = []
        for name, r in variants.items():
            load = r["load"]
            rate = ""
            if load:
                tera = load["unit"] == "FLOP/s"
                rate = f"{load['rate']['median'] / (1e12 if tera else 1e9):.0f} {'TFLOP/s' if tera else 'GB/s'}"
            rows.append([name, _f(r["device_us"]["median"], 0), _f(r["device_us"]["p99"], 0),
                         _f(r["p50_vs_partition_idle"]), _f(r["p99_vs_partition_idle"]),
                         _f(r["step_gb_per_s"], 0), rate])
        lines += _table(["variant", "p50 us", "p99 us", "p50 / idle partition", "p99 / idle partition",
                         "step GB/s", "load rate"], rows) + [""]
    return lines


def plots(results: dict[str, Any], out_dir: str) -> list[str]:
    """fidelity.png and latency.png; returns the paths written (none without matplotlib)."""
    from torch_green_contexts._plotting import pyplot_if_installed

    plt = pyplot_if_installed()
    if plt is None:
        return []
    written = []
    env = results.get("environment", {})
    subtitle = f"{env.get('gpu', '')}, driver {env.get('cuda_driver', '')}, torch {env.get('torch', '')}"
    fidelity = results.get("fidelity")
    if fidelity:
        r = fidelity["results"]
        ours = sorted((v["sm_count"], v) for k, v in r.items() if k.startswith("ours:"))
        whole = fidelity["whole_gpu_tflops"]
        total = r["plain stream"]["sm_count"]
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
        xs = [k for k, _ in ours]
        left.plot([0, total], [0, whole], "--", color="grey", label="SMs/132 of a plain stream")
        left.errorbar(xs, [v["tflops"]["median"] for _, v in ours],
                      yerr=[[v["tflops"]["median"] - v["tflops"]["min"] for _, v in ours],
                            [v["tflops"]["max"] - v["tflops"]["median"] for _, v in ours]],
                      fmt="o-", capsize=3, label="green context (median, min-max)")
        left.plot([total], [whole], "s", color="black", label="plain stream")
        left.set_xlabel("SMs in the context")
        left.set_ylabel("TFLOP/s")
        left.set_title(f"{fidelity['gemm']} GEMM throughput")
        left.legend()
        left.grid(alpha=0.3)
        right.axhline(1.0, color="grey", ls="--")
        right.plot(xs, [v["ratio_to_share_of_whole"] for _, v in ours], "o-")
        right.set_xlabel("SMs in the context")
        right.set_ylabel("TFLOP/s / (SMs/132 x plain stream)")
        right.set_title("per-SM throughput relative to the whole GPU")
        right.grid(alpha=0.3)
        fig.suptitle(subtitle)
        fig.tight_layout()
        path = os.path.join(out_dir, "fidelity.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    isolation = results.get("isolation")
    if isolation:
        fig, ax = plt.subplots(figsize=(12, 5.2))
        for name in isolation["variants"]:
            data = sorted(isolation["samples_device_us"][name])
            ys = [(i + 1) / len(data) for i in range(len(data))]
            ax.plot(data, ys, label=name, lw=1.6)
        ax.set_xscale("log")
        ax.axhline(0.5, color="grey", lw=0.6)
        ax.axhline(0.99, color="grey", lw=0.6)
        ax.set_xlabel(f"latency of one {isolation['latency_gemm']} GEMM, us (CUDA events, log scale)")
        ax.set_ylabel("fraction of samples")
        ax.set_title(f"{isolation['latency_gemm']} GEMM latency while a {isolation['load_gemm'].split(',')[0]} "
                     f"GEMM loop saturates the rest\n{subtitle}")
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(alpha=0.3, which="both")
        fig.tight_layout()
        path = os.path.join(out_dir, "latency.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    if results.get("pd"):
        written += pd_report.plots(results["pd"], out_dir)
    return written
