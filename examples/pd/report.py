"""What a sweep reports: goodput per configuration and scheduler, the comparisons the example
is about, a Markdown table and the attainment plot. Plain Python (matplotlib for the plot)."""

from __future__ import annotations

from typing import Any, Sequence

from .metrics import TARGET_ATTAINMENT, goodput, ratio

NAMES = {
    "chunked": "chunked prefill",
    "streams": "two plain streams",
    "static": "static split",
    "policy": "split policy",
}


def run_entry(scheduler: str, config: str, rate: float, summary: dict[str, Any] | None) -> dict[str, Any]:
    """One run's record for results.json; ``summary`` None marks a skipped run."""
    return {"scheduler": scheduler, "config": config, "rate": rate, "skipped": summary is None, "summary": summary}


def _points(runs: Sequence[dict[str, Any]], scheduler: str, config: str) -> list[tuple[float, float]]:
    return [(r["rate"], r["summary"]["attainment"]) for r in runs
            if r["scheduler"] == scheduler and r["config"] == config and not r["skipped"]]


def schedulers(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per scheduler: the goodput of each configuration and the best one (highest goodput;
    ties go to the higher mean attainment)."""
    out: dict[str, Any] = {}
    for name in NAMES:
        labels = list(dict.fromkeys(r["config"] for r in runs if r["scheduler"] == name))
        configs = {}
        for label in labels:
            points = _points(runs, name, label)
            if points:
                g = goodput(points)
                configs[label] = {"goodput": g.rate, "how": g.how,
                                  "mean_attainment": sum(a for _, a in points) / len(points)}
        if configs:
            best = max(configs, key=lambda c: (configs[c]["goodput"], configs[c]["mean_attainment"]))
            out[name] = {"best": best, "goodput": configs[best]["goodput"], "how": configs[best]["how"],
                         "configs": configs}
    return out


def comparison(runs: Sequence[dict[str, Any]], families: dict[str, Any]) -> dict[str, Any]:
    """The policy against the best chunked-prefill budget and the best static split, and its
    decode steps within the TPOT SLO at the highest measured rate where it still met the
    target attainment (and at the next measured rate)."""
    out: dict[str, Any] = {"target_attainment": TARGET_ATTAINMENT}
    policy = families.get("policy")
    if policy is None:
        return out
    for other in ("chunked", "static", "streams"):
        if other in families:
            out[f"policy_over_{other}"] = ratio(policy["goodput"], families[other]["goodput"])
    measured = sorted((r for r in runs if r["scheduler"] == "policy" and not r["skipped"]), key=lambda r: r["rate"])
    meeting = [i for i, r in enumerate(measured) if r["summary"]["attainment"] >= TARGET_ATTAINMENT]
    if meeting:
        at = measured[meeting[-1]]
        out["policy_steps_within_tpot_at_goodput"] = {"rate": at["rate"],
                                                      "share": at["summary"]["steps_within_tpot"]}
        if meeting[-1] + 1 < len(measured):
            above = measured[meeting[-1] + 1]
            out["policy_steps_within_tpot_above_goodput"] = {"rate": above["rate"],
                                                             "share": above["summary"]["steps_within_tpot"]}
    return out


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def table(results: dict[str, Any]) -> str:
    """Markdown: goodput per scheduler, then every run."""
    lines = [f"| scheduler | best configuration | goodput (req/s) | how |", "|---|---|---:|---|"]
    for name, fam in results["schedulers"].items():
        lines.append(f"| {NAMES[name]} | {fam['best']} | {fam['goodput']:.2f} | {fam['how']} |")
    lines += ["", "| scheduler | configuration | rate (req/s) | attainment | TTFT p50/p99 (ms) | TPOT p50/p99 (ms) "
              "| step p50/p99 (ms) | steps within TPOT | output tok/s | unfinished |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["runs"]:
        head = f"| {NAMES[r['scheduler']]} | {r['config']} | {r['rate']:.2f} "
        s = r["summary"]
        if s is None:
            lines.append(head + "| skipped | | | | | | |")
            continue
        within = "-" if s["steps_within_tpot"] is None else f"{s['steps_within_tpot']:.1%}"
        lines.append(head + f"| {s['attainment']:.1%} | {_ms(s['ttft_ms']['p50'])}/{_ms(s['ttft_ms']['p99'])} "
                     f"| {_ms(s['tpot_ms']['p50'])}/{_ms(s['tpot_ms']['p99'])} "
                     f"| {_ms(s['step_ms']['p50'])}/{_ms(s['step_ms']['p99'])} | {within} "
                     f"| {s['output_tokens_per_s']:.0f} | {s['requests'] - s['finished']} |")
    return "\n".join(lines)


def plot(results: dict[str, Any], path: str) -> str:
    """SLO attainment (left) and p99 decode-step latency (right) against the arrival rate:
    one line per scheduler (its best configuration; the others faint). Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, fams = results["runs"], results["schedulers"]
    colors = {"chunked": "tab:blue", "streams": "tab:gray", "static": "tab:orange", "policy": "tab:green"}
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    for name, fam in fams.items():
        for label in fam["configs"]:
            measured = sorted((r for r in runs if r["scheduler"] == name and r["config"] == label
                               and not r["skipped"]), key=lambda r: r["rate"])
            x = [r["rate"] for r in measured]
            best = label == fam["best"]
            style = dict(color=colors[name], alpha=1.0 if best else 0.3, lw=2 if best else 1, marker="o" if best else ".")
            title = NAMES[name] if label == NAMES[name] else f"{NAMES[name]} ({label})"
            tag = f"{title}, goodput {fam['goodput']:.2f}/s" if best else None
            left.plot(x, [r["summary"]["attainment"] for r in measured], label=tag, **style)
            right.plot(x, [r["summary"]["step_ms"]["p99"] or float("nan") for r in measured],
                       label=title if best else None, **style)
    left.axhline(TARGET_ATTAINMENT, color="black", ls=":", label=f"{TARGET_ATTAINMENT:.0%} of requests")
    left.set_xlabel("arrival rate (requests/s)")
    left.set_ylabel("requests meeting TTFT and TPOT SLOs")
    left.set_ylim(-0.02, 1.02)
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    slo = results["slo"]
    right.axhline(slo["tpot_ms"], color="tab:red", ls="-.", label=f"TPOT SLO {slo['tpot_ms']:.1f} ms")
    right.set_xlabel("arrival rate (requests/s)")
    right.set_ylabel("p99 decode step, launch to tokens on the host (ms)")
    right.set_yscale("log")
    right.legend(fontsize=8)
    right.grid(alpha=0.3, which="both")
    dev = results.get("device", {})
    fig.suptitle(f"{results['model']['layers']}-layer Llama-3-8B-shaped engine on {dev.get('name', 'GPU')}: "
                 f"TTFT SLO {slo['ttft_ms']:.0f} ms, TPOT SLO {slo['tpot_ms']:.1f} ms")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
