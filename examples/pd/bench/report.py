"""What a sweep reports: goodput per scheduler under both metrics and per seed, the comparisons
the example is about, a Markdown table and the plots. Plain Python (matplotlib for the plots,
which are optional: the results file is written first). Run as a module, it reports a results
file again, without a GPU, and changes nothing:

    python -m examples.pd.report benchmarks/results/DIR/POINT-results.json

prints whether the sweep is complete, the goodput of every scheduler per metric and seed, every
run, and the comparisons read from the file's runs (--json: as the JSON stored in the file). With --write it also stores that goodput and those comparisons in the file
and redraws the plots beside it (POINT-goodput-METRIC.png): after a change to how goodput is
read, or for a sweep that was stopped before its end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Sequence

from ..._plots import optional_plot, pyplot
from .arrivals import Arrivals
from .comparisons import BASELINES, comparison
from .metrics import METRIC_NAMES, METRICS, metric_goodput, slo_from_json

NAMES = {
    "chunked": "chunked prefill",
    "streams": "two plain streams",
    "static": "static split",
    "static-overlap": "static overlapped layout",
    "pd": "two-SLO policy, disjoint layouts",
    "pd-overlap": "two-SLO policy, overlapped layouts",
    "policy": "split policy (TPOT only)",
}


def dump(results: dict[str, Any], path: str) -> None:
    """Write ``results`` atomically (a cut-off run leaves the previous file whole)."""
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
    os.replace(path + ".tmp", path)


def _points(runs: Sequence[dict[str, Any]], scheduler: str, config: str, seed: int) -> list[tuple[float, Any]]:
    return sorted((r["rate"], r["summary"]) for r in runs if r["scheduler"] == scheduler and r["config"] == config
                  and r["seed"] == seed and not r["skipped"])


def refined(chosen: dict[str, Any] | list[str] | None) -> dict[str, str]:
    """Metric -> the configuration a sweep refined for it, from ``results["chosen"][name]``.
    Older results files hold a list: the DistServe best, then the P99 best unless it is the
    same one."""
    if isinstance(chosen, dict):
        return dict(chosen)
    if not chosen:
        return {}
    return dict(zip(METRICS, chosen if len(chosen) == len(METRICS) else [chosen[0]] * len(METRICS)))


BRACKETED = 1.25  # a knee read between measured rates this far apart or closer is taken as measured


def schedulers(runs: Sequence[dict[str, Any]], seeds: Sequence[int],
               chosen: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per scheduler and metric: every configuration's goodput per seed, and the best
    configuration with its goodput per seed, mean and spread (max - min). The best is the
    highest mean goodput among the configurations run on every seed whose knee was bracketed
    closely on every seed (read between measured rates at most ``BRACKETED`` apart) and the one
    the sweep refined for that metric (``chosen``: scheduler -> metric -> configuration): another
    configuration's goodput may be read between two coarse rates. Without such a configuration,
    the highest mean goodput over the seeds that ran it, configurations run on every seed first."""
    out: dict[str, Any] = {}
    for name in NAMES:
        picks = refined((chosen or {}).get(name))
        labels = list(dict.fromkeys(r["config"] for r in runs if r["scheduler"] == name))
        if not labels:
            continue
        fam: dict[str, Any] = {}
        for metric in METRICS:
            configs: dict[str, Any] = {}
            for label in labels:
                per_seed: dict[str, dict[str, Any]] = {}
                close = True
                for seed in seeds:
                    points = _points(runs, name, label, seed)
                    if points:
                        g = metric_goodput(points, metric)
                        per_seed[str(seed)] = {"goodput": g.rate, "how": g.how, "rates": len(points)}
                        close = close and g.between is not None and g.between[1] <= BRACKETED * g.between[0]
                if per_seed:
                    values = [v["goodput"] for v in per_seed.values()]
                    all_seeds = len(per_seed) == len(seeds)
                    configs[label] = {"seeds": per_seed, "mean": statistics.fmean(values),
                                      "spread": max(values) - min(values), "all_seeds": all_seeds,
                                      "bracketed": close and all_seeds}
            if configs:
                pick = picks.get(metric)
                sure = [c for c in configs if configs[c]["bracketed"] or (c == pick and configs[c]["all_seeds"])]
                if sure:
                    best = max(sure, key=lambda c: (configs[c]["mean"], c == pick))
                    how = "refined for this metric" if best == pick else "highest mean goodput, knee bracketed"
                else:
                    best = max(configs, key=lambda c: (configs[c]["all_seeds"], configs[c]["mean"]))
                    how = "highest mean goodput"
                fam[metric] = {"best": best, "chosen_by": how, **configs[best], "configs": configs}
        out[name] = fam
    return out


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def _rate(x: float) -> str:
    return f"{x:.2f}"


def goodput_table(results: dict[str, Any]) -> str:
    """Markdown: per scheduler and metric, the best configuration and its goodput per seed."""
    seeds = [str(s) for s in results["seeds"]]
    head = "| scheduler | metric | best configuration | " + " | ".join(f"seed {s}" for s in seeds) \
        + " | mean | spread |"
    lines = [head, "|---|---|---|" + "---:|" * (len(seeds) + 2)]
    for name, fam in results["schedulers"].items():
        for metric, m in fam.items():
            cells = [(f"{_rate(m['seeds'][s]['goodput'])}" + ("+" if m["seeds"][s]["how"] == "highest measured" else ""))
                     if s in m["seeds"] else "-" for s in seeds]
            spread = _rate(m["spread"]) if m["all_seeds"] else "-"
            lines.append(f"| {NAMES[name]} | {metric} | {m['best']} | " + " | ".join(cells)
                         + f" | {_rate(m['mean'])} | {spread} |")
    if any(not m["all_seeds"] for fam in results["schedulers"].values() for m in fam.values()):
        lines.append("\nA spread of -: the configuration has not run on every seed; its mean is of the seeds "
                     "that ran it.")
    return "\n".join(lines)


def runs_table(results: dict[str, Any]) -> str:
    lines = ["| scheduler | configuration | seed | rate (req/s) | attainment | P99 margin | TTFT p50/p99 (ms) "
             "| TPOT p50/p99 (ms) | ITL p50/p99 (ms) | steps within TPOT | unfinished |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["runs"]:
        head = f"| {NAMES[r['scheduler']]} | {r['config']} | {r['seed']} | {_rate(r['rate'])} "
        s = r["summary"]
        if s is None:
            lines.append(head + "| skipped | | | | | | |")
            continue
        within = "-" if s["steps_within_tpot"] is None else f"{s['steps_within_tpot']:.1%}"
        lines.append(head + f"| {s['attainment']:.1%} | {s['p99_margin']:.2f} "
                     f"| {_ms(s['ttft_ms']['p50'])}/{_ms(s['ttft_ms']['p99'])} "
                     f"| {_ms(s['tpot_ms']['p50'])}/{_ms(s['tpot_ms']['p99'])} "
                     f"| {_ms(s['itl_ms']['p50'])}/{_ms(s['itl_ms']['p99'])} | {within} "
                     f"| {s['requests'] - s['finished']} |")
    return "\n".join(lines)


def setting(results: dict[str, Any]) -> str:
    """``32 layers, chat, NVIDIA H100 80GB HBM3; TTFT 1000 ms, TPOT 20.0 ms``: what a sweep ran
    (``simulated with the calibration of ...`` in place of the GPU for a simulated sweep)."""
    device = results.get("device", {}).get("name", "GPU")
    if results.get("simulated"):
        device = f"simulated with a calibration from {device}"
    arrivals = results.get("settings", {}).get("arrivals")
    mix = results["workload"] + (f", {Arrivals.parse(arrivals).label} arrivals" if arrivals and arrivals != "poisson"
                                 else "")
    return f"{results['model']['layers']} layers, {mix}, {device}; {slo_from_json(results['slo']).describe()}"


def table(results: dict[str, Any]) -> str:
    return goodput_table(results) + "\n\n" + runs_table(results)


COLORS = {"chunked": "tab:blue", "streams": "tab:gray", "static": "tab:orange", "static-overlap": "tab:brown",
          "pd": "tab:green", "pd-overlap": "tab:purple", "policy": "tab:olive"}


def plot(results: dict[str, Any], path: str, metric: str) -> str:
    """The figure of ``metric`` (attainment, or the P99 margin on a log scale) against the
    arrival rate: each scheduler's best configuration, a line per seed. Returns ``path``."""
    plt = pyplot()

    field, target, higher = METRICS[metric]
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, fam in results["schedulers"].items():
        m = fam.get(metric)
        if m is None:
            continue
        for i, seed in enumerate(results["seeds"]):
            points = _points(results["runs"], name, m["best"], seed)
            if not points:
                continue
            label = f"{NAMES[name]} ({m['best']}): {m['mean']:.2f}/s" if i == 0 else None
            ax.plot([r for r, _ in points], [s[field] for _, s in points], color=COLORS[name], marker="o" if i == 0
                    else "x", ls="-" if i == 0 else "--", lw=1.5, label=label)
    ax.axhline(target, color="black", ls=":", label="target")
    ax.set_xlabel("arrival rate (requests/s)")
    if higher:
        ax.set_ylabel("requests meeting TTFT and TPOT SLOs")
        ax.set_ylim(-0.02, 1.02)
    else:
        ax.set_ylabel("P99 margin: max(P99 TTFT / SLO, P99 ITL / SLO)")
        ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(f"{METRIC_NAMES[metric]}\n{setting(results)}; solid: first seed, dashed: second", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def evaluate(results: dict[str, Any]) -> None:
    """Goodput per scheduler and the comparisons, read from ``results``' runs, into ``results``."""
    results["schedulers"] = schedulers(results["runs"], results["seeds"], results.get("chosen", {}))
    results["comparison"] = comparison(results["schedulers"])


SHORT_METRIC = {"distserve": "DistServe", "p99": "P99"}


def summary(results: dict[str, Any]) -> str:
    """The comparisons as Markdown, a line per metric and baseline."""
    families, lines = results["schedulers"], []
    for metric, c in results["comparison"].items():
        lines.append(f"- {SHORT_METRIC.get(metric, metric)}: best green-context scheduler "
                     f"{NAMES[c['best_green']]} ({c['config']}), {_rate(c['goodput'])} req/s")
        for base in BASELINES:
            o = c.get(f"over_{base}")
            if o is None:
                continue
            ratio = "-" if o["ratio"] is None else f"{o['ratio']:.2f}x"
            spreads = ", ".join(f"{NAMES[n]} {_rate(families[n][metric]['spread'])}" for n in (c["best_green"], base)
                                if families[n][metric]["all_seeds"])
            line = (f"  - {ratio} {NAMES[base]} ({o['baseline_config']}, {_rate(o['baseline'])} req/s): "
                    f"{o['verdict']}" + (f" (spreads: {spreads})" if spreads else ""))
            if o.get("provisional"):
                line += "; provisional: " + ", ".join(NAMES[n] for n in o["provisional"]) + " not run on every seed"
            lines.append(line)
        p = c.get("policy_over_static")
        if p is not None:
            ratio = "-" if p["ratio"] is None else f"{p['ratio']:.2f}x"
            lines.append(f"  - policy over the best static split: {NAMES[p['policy']]} ({p['config']}, "
                         f"{_rate(p['goodput'])} req/s) {ratio} {NAMES[p['static']]} ({p['baseline_config']}, "
                         f"{_rate(p['baseline'])} req/s): {p['verdict']}")
    return "\n".join(lines)


def show(results: dict[str, Any], as_json: bool = False) -> None:
    """The state of the sweep, the tables and the comparisons on stdout (``as_json``: the
    comparisons as the JSON stored in the file)."""
    print(f"{setting(results)}\n")
    settings = results.get("settings", {})
    if settings.get("more_slack_shares"):
        print(f"The two-SLO policies' configurations without a slack label ran at slack share "
              f"{settings.get('slack_share', 0.5):g} (--slack-share).\n")
    if results.get("incomplete"):
        print(f"Incomplete sweep: {results['incomplete']} (--resume continues it).\n")
    print(table(results))
    print()
    print(json.dumps(results["comparison"], indent=1) if as_json else summary(results))


def render(results: dict[str, Any], path: str, plot_prefix: str, as_json: bool = False) -> None:
    """Goodput and comparisons into ``results``, written to ``path`` before anything optional;
    then the plots (``plot_prefix`` + goodput-METRIC.png); then the tables on stdout."""
    evaluate(results)
    dump(results, path)
    if results["schedulers"]:
        for metric in METRICS:
            optional_plot(lambda out: plot(results, out, metric), f"{plot_prefix}goodput-{metric}.png")
    show(results, as_json)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.pd.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="a sweep's results file (results.json or POINT-results.json)")
    parser.add_argument("--write", action="store_true",
                        help="store the goodput and comparisons in the file and redraw its plots")
    parser.add_argument("--json", action="store_true", help="print the comparisons as the JSON stored in the file")
    args = parser.parse_args(argv)
    path = args.results
    try:
        with open(path) as f:
            results = json.load(f)
    except (OSError, ValueError) as error:
        parser.error(f"{path}: {error}")
    if isinstance(results, dict) and results.get("kind") == "LayoutProfile":
        parser.error(f"{path} is a layout profile (what python -m examples.pd --layout-profile reuses), "
                     "not a sweep's results file")
    if not isinstance(results, dict):
        parser.error(f"{path} is not a sweep's results file: it holds a JSON {type(results).__name__}")
    missing = [k for k in ("runs", "seeds", "slo", "model", "workload") if k not in results]
    if missing:
        parser.error(f"{path} is not a sweep's results file: it has no {', '.join(missing)} (the single-run files "
                     "of the example's earlier version are not read here: the README beside them reports them)")
    try:
        if args.write:
            name = os.path.basename(path)
            prefix = name[:-len("results.json")] if name.endswith("results.json") else ""
            render(results, path, os.path.join(os.path.dirname(path), prefix), as_json=args.json)
        else:
            evaluate(results)
            show(results, as_json=args.json)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (head, less) stopped reading: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
