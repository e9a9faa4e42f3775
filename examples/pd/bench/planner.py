"""Which static splits a sweep runs: every split the device can give, simulated over the
sweep's rates for the first seed, ranked by predicted goodput under each metric; the best two
under each metric and the best's neighbours are run. A split that starves prefill (or decode)
predicts a low goodput and is left out unseen by neither SLO. Plain Python."""

from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

from .metrics import METRICS, metric_goodput
from .search import Config, RunFn, Sweep

REFINED = 4  # configurations refined per metric after the coarse rates


def label_of(scheduler: str, key: Any) -> str:
    """A static configuration's label: ``64 SMs``, or an overlapped layout's ``16/64``."""
    return f"{key[0]}/{key[1]}" if isinstance(key, tuple) else f"{key} SMs"


def plan_static(run: RunFn, scheduler: str, keys: Sequence[Hashable], order: str, coarse: Sequence[float],
                seed: int, n: int, stop_below: float, min_rates: int, max_rates: int,
                say: Callable[[str], None] = lambda text: None) -> tuple[list[Config], dict[str, Any]]:
    """The ``n`` configurations of ``scheduler`` over ``keys`` to run, and what the choice was
    made from: each key's predicted goodput per metric (``run`` simulates one run)."""
    if not keys:
        raise ValueError(f"no split to plan {scheduler} over")
    configs = [Config(scheduler, label_of(scheduler, k), k, order) for k in keys]
    sweep = Sweep(run, coarse, [seed], stop_below, min_rates, max_rates)
    for config in configs:
        sweep.ascend(config, seed, coarse)
    for metric in METRICS:
        sweep.untie(configs, seed, metric)
    ranked: dict[str, list[Config]] = {}
    for metric in METRICS:
        ranked[metric] = _ranked(sweep, configs, seed, metric)
        for config in ranked[metric][:REFINED]:
            sweep.refine(config, seed, metric)
        ranked[metric] = _ranked(sweep, configs, seed, metric)
    chosen: list[Config] = []
    for rank in (0, 1):
        for metric in METRICS:
            if rank < len(ranked[metric]) and ranked[metric][rank] not in chosen:
                chosen.append(ranked[metric][rank])
    for metric in METRICS:
        best = configs.index(ranked[metric][0])
        for i in (best - 1, best + 1):
            if 0 <= i < len(configs) and configs[i] not in chosen:
                chosen.append(configs[i])
    chosen = chosen[:max(1, n)]
    predicted = {c.label: {m: metric_goodput(sweep.points(c, seed).items(), m).rate for m in METRICS}
                 for c in configs}
    say(f"{scheduler}: predicted goodput (simulated, seed {seed}) " + ", ".join(
        f"{label} {g['distserve']:.2f}/{g['p99']:.2f}" for label, g in predicted.items())
        + f"; running {', '.join(c.label for c in chosen)}")
    return chosen, {"how": "simulated", "seed": seed, "order": order, "predicted_goodput": predicted,
                    "ranked": {m: [c.label for c in ranked[m]] for m in METRICS},
                    "candidates": [c.label for c in chosen], "simulated_runs": len(sweep.runs)}


def unknown_splits(splits: Sequence[int], known: Sequence[str]) -> str | None:
    """What is wrong with ``--static-splits`` when the device gives the splits labelled
    ``known`` (``label_of``), or None."""
    unknown = [k for k in splits if label_of("static", k) not in known]
    if not unknown:
        return None
    return f"--static-splits {','.join(map(str, unknown))}: not a split of this device; it gives {', '.join(known)}"


def given_splits(splits: Sequence[int], order: str, plan: dict[str, Any]) -> tuple[list[Config], dict[str, Any]]:
    """The static splits of ``--static-splits`` to run instead of the candidates of ``plan``
    (:func:`plan_static`'s record, kept with them as ``given``). A ValueError names a split the
    planner did not consider (the device cannot give it)."""
    error = unknown_splits(splits, list(plan.get("predicted_goodput", {})))
    if error:
        raise ValueError(error)
    configs = [Config("static", label_of("static", k), k, order) for k in splits]
    return configs, {**plan, "given": [c.label for c in configs]}


def _ranked(sweep: Sweep, configs: Sequence[Config], seed: int, metric: str) -> list[Config]:
    """``configs`` best first under ``metric`` (the sweep's own order of merit)."""
    left, ranked = list(configs), []
    while left:
        best = sweep.best(left, seed, metric)
        if best is None:
            ranked.extend(left)
            break
        ranked.append(best)
        left.remove(best)
    return ranked
