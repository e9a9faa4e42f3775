"""The comparisons a sweep's goodput makes: per metric the best green-context scheduler over
chunked prefill and over plain streams, and the best two-SLO policy over the best static split;
a difference within the larger of the two seeds' spreads is a tie. Plain Python."""

from __future__ import annotations

from typing import Any

from .metrics import METRICS

GREEN = ("static", "static-overlap", "pd", "pd-overlap", "policy")
BASELINES = ("chunked", "streams")
POLICIES = ("pd", "pd-overlap")
STATICS = ("static", "static-overlap")


def comparison(families: dict[str, Any]) -> dict[str, Any]:
    """Per metric: the best green-context scheduler (highest mean goodput) over chunked prefill
    and over plain streams: the ratio of mean goodputs, and ``tie`` when the difference is
    within the larger of the two seeds' spreads. ``provisional`` names the schedulers of a
    comparison whose figure has not run on every seed (its spread is unknown)."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        green = {n: families[n][metric] for n in GREEN if metric in families.get(n, {})}
        if not green:
            continue
        best = max(green, key=lambda n: green[n]["mean"])
        entry: dict[str, Any] = {"best_green": best, "config": green[best]["best"], "goodput": green[best]["mean"]}
        for base in BASELINES:
            other = families.get(base, {}).get(metric)
            if other is None:
                continue
            spread = max(green[best]["spread"], other["spread"])
            diff = green[best]["mean"] - other["mean"]
            entry[f"over_{base}"] = {
                "ratio": green[best]["mean"] / other["mean"] if other["mean"] > 0 else None,
                "baseline": other["mean"], "baseline_config": other["best"],
                "verdict": "tie" if abs(diff) <= spread else "green wins" if diff > 0 else "baseline wins",
                "provisional": [n for n, f in ((best, green[best]), (base, other)) if not f["all_seeds"]]}
        policy = _policy_over_static(families, metric)
        if policy is not None:
            entry["policy_over_static"] = policy
        out[metric] = entry
    return out


def _policy_over_static(families: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """The best two-SLO policy over the best static split (disjoint or overlapped) under
    ``metric``: the ratio of mean goodputs, and the verdict by the larger of the two spreads."""
    policies = {n: families[n][metric] for n in POLICIES if metric in families.get(n, {})}
    statics = {n: families[n][metric] for n in STATICS if metric in families.get(n, {})}
    if not policies or not statics:
        return None
    p = max(policies, key=lambda n: policies[n]["mean"])
    b = max(statics, key=lambda n: statics[n]["mean"])
    diff = policies[p]["mean"] - statics[b]["mean"]
    spread = max(policies[p]["spread"], statics[b]["spread"])
    return {"policy": p, "config": policies[p]["best"], "goodput": policies[p]["mean"], "static": b,
            "baseline_config": statics[b]["best"], "baseline": statics[b]["mean"],
            "ratio": policies[p]["mean"] / statics[b]["mean"] if statics[b]["mean"] > 0 else None,
            "verdict": "tie" if abs(diff) <= spread else "policy wins" if diff > 0 else "static wins",
            "provisional": [n for n, f in ((p, policies[p]), (b, statics[b])) if not f["all_seeds"]]}
