"""Which runs a sweep makes: configurations, rates and seeds, chosen so that every scheduler's
knee is bracketed under both goodput metrics without running every configuration everywhere.
Plain Python (no torch); the runs themselves are a callback.

For the first seed, each configuration (a scheduler with its parameter, in the first admission
order) runs at the coarse rates, ascending, until a rate fails both metrics badly (attainment
below ``stop_below`` and the P99 SLOs missed); the best configuration under each metric runs
there in the other admission orders too. Where the coarse rates cannot tell configurations apart
(several pass a metric at every rate they ran), those run at higher rates, in the steps used
above an unfound knee, until one is ahead. Then per scheduler and metric the configuration with
the highest goodput at the coarse rates is refined: rates between the highest one passing and
the next one failing are added (the midpoint, then around the knee) until it has at least
``min_rates`` measured rates, the knee lies within ``resolution``, or ``max_rates`` is reached.
Every later seed runs the refined configurations at the ``min_rates`` rates of the first seed
nearest their knees, then refines the same way. Runs already in ``done`` (an earlier, interrupted sweep) are reused, not repeated.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Iterable, Sequence

from .metrics import METRICS, metric_goodput, passes


@dataclasses.dataclass(frozen=True)
class Config:
    """One way to run a scheduler: its parameter (a budget, a layout key or None), its label
    in the results, and the admission order."""

    scheduler: str
    label: str
    param: Any
    order: str

    @property
    def name(self) -> str:
        return f"{self.label}, {self.order}" if self.label else self.order


STEP_UP = 1.5  # the next rate above one that passes, where no failing rate is known yet


class OutOfTime(Exception):
    """The sweep's time budget cannot hold the next run."""


def round_rate(rate: float) -> float:
    return float(f"{rate:.3g}")


RunFn = Callable[[Config, int, float], dict[str, Any]]


@dataclasses.dataclass
class Sweep:
    """Runs (through ``run``) and records (in ``runs``, entries as :func:`entry` makes them)."""

    run: RunFn
    coarse: Sequence[float]
    seeds: Sequence[int]
    stop_below: float = 0.6
    min_rates: int = 5
    max_rates: int = 7
    resolution: float = 0.15
    deadline: float = float("inf")  # time.monotonic() after which no run starts
    run_s: float = 30.0  # what a run is expected to take, until runs have been timed
    done: dict[tuple[str, str, int, float], dict[str, Any]] = dataclasses.field(default_factory=dict)
    on_run: Callable[[dict[str, Any]], None] | None = None
    runs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    _timed: list[float] = dataclasses.field(default_factory=list)

    def points(self, config: Config, seed: int) -> dict[float, dict[str, Any]]:
        return {r["rate"]: r["summary"] for r in self.runs if _matches(r, config, seed) and not r["skipped"]}

    def measure(self, config: Config, seed: int, rate: float) -> dict[str, Any]:
        rate = round_rate(rate)
        for r in self.runs:
            if _matches(r, config, seed) and r["rate"] == rate and not r["skipped"]:
                return r["summary"]  # type: ignore[no-any-return]
        summary = self.done.get((config.scheduler, config.name, seed, rate))
        if summary is None:
            expected = max(self._timed[-3:]) if self._timed else self.run_s
            if time.monotonic() + expected > self.deadline:
                raise OutOfTime(f"{config.scheduler}, {config.name}, seed {seed} at {rate:g} req/s")
            began = time.monotonic()
            summary = self.run(config, seed, rate)
            self._timed.append(time.monotonic() - began)
        record = entry(config, seed, rate, summary)
        self.runs.append(record)
        if self.on_run is not None:
            self.on_run(record)
        return summary

    def ascend(self, config: Config, seed: int, rates: Iterable[float]) -> None:
        """``rates`` ascending until one fails both metrics badly; the rest are recorded skipped."""
        stopped = False
        for rate in sorted({round_rate(r) for r in rates}):
            if stopped:
                if rate not in self.points(config, seed):
                    self.runs.append(entry(config, seed, rate, None))
                continue
            summary = self.measure(config, seed, rate)
            stopped = summary["attainment"] < self.stop_below and not passes(
                summary["p99_margin"], *METRICS["p99"][1:])

    def refine(self, config: Config, seed: int, metric: str) -> None:
        """Add rates around ``config``'s knee under ``metric`` (see the module's text)."""
        field, target, higher = METRICS[metric]
        lowest = min(self.coarse)
        while True:
            measured = self.points(config, seed)
            if len(measured) >= self.max_rates:
                return
            rate = next_rate({r: s[field] for r, s in measured.items()}, target, higher, self.min_rates,
                             self.resolution, lowest / 4)
            if rate is None:
                return
            self.measure(config, seed, rate)

    def best(self, configs: Sequence[Config], seed: int, metric: str) -> Config | None:
        """The configuration with the highest goodput under ``metric``. Ties at a goodput above
        0: the better mean figure over its rates. Ties at 0 (none passes anywhere): the better
        figure at the lowest rate they all ran, the one nearest to passing where refining looks
        next (lower rates)."""
        field, _, higher = METRICS[metric]
        measured = {c: m for c in configs if (m := self.points(c, seed))}
        if not measured:
            return None
        common = set.intersection(*(set(m) for m in measured.values()))

        def key(config: Config) -> tuple[float, float]:
            points = measured[config]
            goodput = metric_goodput(points.items(), metric).rate
            if goodput > 0:
                figure = sum(s[field] for s in points.values()) / len(points)
            else:
                figure = points[min(common) if common else min(points)][field]
            return goodput, figure if higher else -figure

        return max(measured, key=key)

    def untie(self, configs: Sequence[Config], seed: int, metric: str, steps: int = 4) -> None:
        """Run the configurations that pass ``metric`` at every rate they ran one step higher (the
        step :meth:`refine` takes above a knee it has not found) while more than one could be the
        best, so that list order never decides between configurations the coarse rates cannot
        tell apart."""
        for _ in range(steps):
            goodputs = {c: metric_goodput(m.items(), metric) for c in configs if (m := self.points(c, seed))}
            if not goodputs:
                return
            top = max(g.rate for g in goodputs.values())
            open_ended = [c for c, g in goodputs.items() if g.how == "highest measured"]
            contenders = {c for c, g in goodputs.items() if g.rate == top and g.rate > 0} | set(open_ended)
            if len(contenders) < 2 or not open_ended:
                return
            rate = round_rate(max(goodputs[c].rate for c in open_ended) * STEP_UP)
            for config in open_ended:
                self.measure(config, seed, rate)

    def near_knees(self, config: Config, seed: int, metrics: Sequence[str]) -> list[float]:
        """The ``min_rates`` rates measured for ``config`` on ``seed`` nearest (by ratio) to its
        goodput under ``metrics``."""
        measured = self.points(config, seed)
        knees = [g for m in metrics if (g := metric_goodput(measured.items(), m).rate) > 0] or [min(measured)]
        return sorted(measured, key=lambda r: min(abs(math.log(r / k)) for k in knees))[:self.min_rates]

    def family(self, configs: Sequence[Config], orders: Sequence[str] = ()) -> dict[str, Config]:
        """Run one scheduler's configurations over every seed; returns the refined ones: metric
        -> the best configuration under it on the first seed. ``configs`` run at the coarse rates with
        their own order; then the best of them under each metric also with each of ``orders``
        (other admission orders), so that every scheduler gets its better order."""
        first, *later = self.seeds
        for config in configs:
            self.ascend(config, first, self.coarse)
        for metric in METRICS:
            self.untie(configs, first, metric)
        tried = list(configs)
        for metric in METRICS:
            best = self.best(configs, first, metric)
            for order in orders:
                if best is not None and order != best.order:
                    other = dataclasses.replace(best, order=order)
                    if other not in tried:
                        tried.append(other)
                        self.ascend(other, first, self.coarse)
        best_for: dict[Config, list[str]] = {}
        for metric in METRICS:
            self.untie(tried, first, metric)
            best = self.best(tried, first, metric)
            if best is not None:
                best_for.setdefault(best, []).append(metric)
        for config, metrics in best_for.items():
            for metric in metrics:
                self.refine(config, first, metric)
        for seed in later:
            for config, metrics in best_for.items():
                self.ascend(config, seed, self.near_knees(config, first, metrics))
                for metric in metrics:
                    self.refine(config, seed, metric)
        return {metric: config for config, metrics in best_for.items() for metric in metrics}


def next_rate(values: dict[float, float], target: float, higher: bool, min_rates: int, resolution: float,
              floor: float) -> float | None:
    """The next rate to measure for a knee, from the figures measured so far (rate -> value),
    or None when the knee is found: between the highest passing rate and the next failing one
    within ``resolution`` (relative) and at least ``min_rates`` rates measured."""
    rates = sorted(values)
    good = [r for r in rates if passes(values[r], target, higher)]
    if not good:
        low = round_rate(rates[0] / 2)
        return low if low >= floor and low not in values else None
    lo = good[-1]
    above = [r for r in rates if r > lo]
    if not above:
        return round_rate(lo * STEP_UP)
    hi = above[0]
    if hi / lo - 1 > resolution:
        mid = round_rate((lo + hi) / 2)
        if mid not in values and lo < mid < hi:
            return mid
    if len(rates) >= min_rates:
        return None
    for candidate in (lo * 0.8, hi * 1.2, lo * 0.65, hi * 1.45, lo * 0.5, hi * 1.8):
        rate = round_rate(candidate)
        if rate >= floor and all(abs(rate / r - 1) > 0.03 for r in rates):
            return rate
    return None


def entry(config: Config, seed: int, rate: float, summary: dict[str, Any] | None) -> dict[str, Any]:
    """One run's record for results.json; ``summary`` None marks a skipped run."""
    return {"scheduler": config.scheduler, "config": config.name, "label": config.label,
            "param": list(config.param) if isinstance(config.param, tuple) else config.param,
            "order": config.order, "seed": seed, "rate": round_rate(rate), "skipped": summary is None,
            "summary": summary}


def _matches(record: dict[str, Any], config: Config, seed: int) -> bool:
    return bool(record["scheduler"] == config.scheduler and record["config"] == config.name and record["seed"] == seed)


def with_earlier(runs: list[dict[str, Any]], earlier: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``runs`` (this sweep's records), then the measured runs of an earlier, resumed sweep that
    this one has not measured or reused yet, so that a sweep stopped early keeps them."""
    made = {_key(r) for r in runs if not r["skipped"]}
    return runs + [r for r in earlier if not r["skipped"] and _key(r) not in made]


def _key(record: dict[str, Any]) -> tuple[str, str, int, float]:
    return record["scheduler"], record["config"], record["seed"], record["rate"]


def reusable(runs: Iterable[dict[str, Any]]) -> dict[tuple[str, str, int, float], dict[str, Any]]:
    """The measured runs of an earlier results file, for :attr:`Sweep.done`."""
    return {(r["scheduler"], r["config"], r["seed"], r["rate"]): r["summary"] for r in runs if not r["skipped"]}
