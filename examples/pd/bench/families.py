"""A sweep's families of runs, on the GPU or the simulated GPU alike: per scheduler its
configurations at the coarse rates, the better admission order, the knees refined, the other
seeds; the static splits from the planner; results written after every run."""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

from ..engine.request import Slo
from . import cli
from .estimates import Costs, expected_run_s, run_cap
from .planner import given_splits
from .report import dump
from .search import Config, OutOfTime, Sweep, reusable, with_earlier
from .traces import trace_for

FAMILIES = ("chunked", "streams", "pd-overlap", "pd", "static-overlap", "static", "policy")  # the order they run in


class Runs(Protocol):
    """What a sweep needs of its bench (the GPU's, or the simulator's)."""

    costs: Costs
    slo: Slo

    def run(self, config: Config, seed: int, rate: float,
            progress: Callable[[int, int, float], Any] | None = None) -> dict[str, Any]: ...

    def static_configs(self, scheduler: str, order: str) -> tuple[list[Config], dict[str, Any]]: ...

    def notes(self) -> dict[str, Any]: ...


def family_configs(name: str, s: cli.Settings, order: str) -> list[Config]:
    """The configurations a scheduler other than the static ones runs, in ``order``: chunked
    prefill one per budget, the two-SLO policies one per slack share and one per mode, the others
    one."""
    if name == "chunked":
        return [Config(name, f"budget {b}", b, order) for b in s.budgets]
    if name in ("pd", "pd-overlap"):
        return ([Config(name, label, share, order) for label, share in cli.policy_shares(s)]
                + [Config(name, label, mode, order) for label, mode in cli.policy_modes(s)])
    return [Config(name, "", None, order)]


def run_families(bench: Runs, s: cli.Settings, results: dict[str, Any], earlier: dict[str, Any],
                 coarse: Sequence[float], out: str, began: float, say: Any) -> None:
    """Every family of ``s.schedulers`` on ``bench``, recorded in ``results`` (written to
    ``out`` after every run); runs of ``earlier`` (a resumed sweep) are reused."""
    costs, slo = bench.costs, bench.slo

    def run(config: Config, seed: int, rate: float) -> dict[str, Any]:
        return bench.run(config, seed, rate, progress=lambda n_done, n, t: say.live(
            f"  {n_done}/{n} requests finished, {t:.0f} s"))

    def all_runs() -> list[dict[str, Any]]:  # this sweep's, then an earlier one's it has not reached
        return with_earlier(sweep.runs, earlier.get("runs", []))

    def on_run(record: dict[str, Any]) -> None:
        results["runs"] = all_runs()
        results.update(bench.notes())  # a family cut short by the time budget keeps its anchors
        summary = record["summary"]
        if summary is not None:
            say(f"[{len(results['runs'])}] {record['scheduler']}, {record['config']}, seed {record['seed']} @ "
                f"{record['rate']:.3g} req/s: attainment {summary['attainment']:.0%}, P99 margin "
                f"{summary['p99_margin']:.2f} (TTFT p99 {summary['p99_ttft_ms'] or float('inf'):.0f} ms, ITL p99 "
                f"{summary['itl_ms']['p99'] or 0:.1f} ms) ({(time.perf_counter() - began) / 60:.1f} min)")
        dump(results, out)

    deadline = time.monotonic() + s.time_budget_s - (time.perf_counter() - began) if s.time_budget_s else float("inf")
    sweep = Sweep(run, coarse, s.seeds, s.stop_below, s.min_rates, s.max_rates, deadline=deadline,
                  run_s=expected_run_s(trace_for(s, coarse[-1], s.seeds[0]), costs,
                                       run_cap(trace_for(s, coarse[-1], s.seeds[0]), slo)),
                  done=reusable(earlier.get("runs", [])), on_run=on_run)
    results["runs"] = all_runs()
    # What a resumed sweep chose before stands until this one chooses again.
    results["chosen"] = {k: v for k, v in earlier.get("chosen", {}).items() if k not in s.rerun}
    results.update({k: v for k, v in earlier.items() if k.endswith("_candidates") and k[:-11] not in s.rerun})
    try:
        for name in FAMILIES:
            if name not in s.schedulers:
                continue
            first = s.admission[0]
            if name.startswith("static"):  # the planner's, simulated from the calibration
                configs, why = bench.static_configs(name, first)
                if name == "static" and s.static_splits:
                    try:
                        configs, why = given_splits(s.static_splits, first, why)
                    except ValueError as error:  # the runs so far are in the results file
                        raise SystemExit(str(error)) from None
                results[f"{name}_candidates"] = why
            else:
                configs = family_configs(name, s, first)
            chosen = sweep.family(configs, s.admission[1:])
            results["chosen"][name] = {metric: c.name for metric, c in chosen.items()}
            results.update(bench.notes())
            results["runs"] = all_runs()
            dump(results, out)
        results["incomplete"] = None
    except OutOfTime as stop:
        results["incomplete"] = f"the time budget ran out before {stop}"
        say(f"time budget reached: {results['incomplete']}; --resume {out} continues")
    results["runs"] = all_runs()
