"""A split per step: the smallest latency partition that holds an SLO, from a latency profile,
corrected online by what the steps it hands out actually take.

::

    from torch_green_contexts import SMPartition, sizing
    from torch_green_contexts.layouts import Layouts
    from torch_green_contexts.policy import SplitPolicy

    profile = sizing.profile(decode_step_for, [1, 8, 16, 32, 64, 128], load=prefill_piece, graph=True)
    total = SMPartition.from_device().sm_count                    # 132 on an H200
    layouts = Layouts([0, 16, 32, 64, total], ordering="per_role")
    policy = SplitPolicy(profile, layouts, slo_us=20_000)
    while serving:
        step = policy.step(len(decode_batch))      # switch to the layout this batch needs
        with torch.cuda.stream(step.latency_stream):
            decode(decode_batch)
        policy.done()                              # the decode step is timed from step() to here
        with torch.cuda.stream(step.batch_stream):
            prefill_piece()
"""

from __future__ import annotations

from typing import Any

from . import _layout_args, _validation
from ._sizing import _corrections, _sizing_result, _step_timer
from ._sizing._profile import LatencyProfile
from .layouts import Layout
from .step_policy import LayoutKey, LayoutSet, StepTimer

__all__ = ["SplitPolicy"]


class SplitPolicy:
    """Picks, per step, the smallest latency partition whose latency for the step's parameter
    meets ``slo_us``, and switches ``layouts`` to it.

    The estimate for ``p`` on ``k`` SMs is the profile's ``percentile`` latency (read at the
    next larger measured parameter; under the profiled load, or idle for the layout that gives
    every SM to the latency side) times a correction for ``k``. A layout qualifies when its
    estimate is at most ``slo_us * (1 - headroom)``; when none does, the largest layout is
    used. A step of ``p == 0`` (no latency work) takes the layout of 0 latency SMs, if any.

    Online correction: :meth:`step` records a CUDA event on the latency stream and
    :meth:`done` another; the elapsed time of each pair is read later, once the GPU has passed
    it (every ``read_every`` steps, never waiting). Each SM count's correction is the median of
    its last few measured ratios (latency over the profile's ``percentile`` figure for that
    step: the estimate grows once a typical step takes longer than the profile's tail, which
    absorbs the usual drift between a profile and a live run), from steps on that count only; a *change* on ``k`` SMs (its recent ratio over its own slow baseline:
    a heavier load than the profiled one, say) also raises every smaller count, since a slowdown
    on ``k`` SMs is at least as large on fewer, while a steady bias on ``k`` does not. What is no
    longer measured decays back towards the profile with a half-life of ``half_life_steps``
    steps, so a smaller count that was slow is tried again once the slowdown is gone: no bias
    can keep a count out for good. Moving down to a smaller count needs its estimate to be
    ``hysteresis`` (a share of the bound) below the bound, against flip-flopping.
    ``sample_every`` times one step in that many.

    ``layouts`` is a :class:`~torch_green_contexts.layouts.Layouts` (or any
    :class:`~torch_green_contexts.step_policy.LayoutSet`); every positive SM count in it must have
    been measured by the profile. ``timer`` times the steps (CUDA events by default; see
    :class:`~torch_green_contexts.step_policy.StepTimer`). It is a
    :class:`~torch_green_contexts.step_policy.StepPolicy`. Use it from one thread at a time.
    """

    def __init__(self, profile: LatencyProfile, layouts: LayoutSet, *, slo_us: float, percentile: int = 99,
                 ordering: str = "per_role", headroom: float = 0.05, half_life_steps: int = 256,
                 read_every: int = 8, sample_every: int = 1, max_pending: int = 256,
                 hysteresis: float = 0.05, timer: StepTimer | None = None) -> None:
        if not isinstance(profile, LatencyProfile):
            raise TypeError(f"profile must be a LatencyProfile (sizing.profile), got {type(profile).__name__}")
        _validation.check_has("layouts", layouts, "a Layouts (torch_green_contexts.layouts.Layouts)",
                              ("counts", "__getitem__", "switch"))
        slo_us = _validation.as_positive_us("slo_us", slo_us)
        headroom = _validation.as_number_in("headroom", headroom, below=1.0, meaning=" (a share of the SLO)")
        hysteresis = _validation.as_number_in("hysteresis", hysteresis, below=1.0, meaning=" (a share of the bound)")
        half_life_steps = _validation.as_int_at_least("half_life_steps", half_life_steps, 1)
        read_every = _validation.as_int_at_least("read_every", read_every, 1)
        sample_every = _validation.as_int_at_least("sample_every", sample_every, 1)
        max_pending = _validation.as_int_at_least("max_pending", max_pending, 1)
        self._percentile = _sizing_result.check_percentile(percentile)
        self._ordering = _layout_args.check_ordering(ordering)
        candidates = sorted(k for k in layouts.counts if k > 0)
        missing = [k for k in candidates if k not in profile.counts]
        if missing:
            raise ValueError(f"the profile has no figures for the layouts of {missing} latency SMs; "
                             f"it measured {list(profile.counts)}: profile those counts or leave them out")
        if not candidates:
            raise ValueError("layouts must have a layout with latency SMs (a count above 0)")
        self.profile, self.layouts = profile, layouts
        self.slo_us, self.headroom = slo_us, headroom
        self._bound = self.slo_us * (1.0 - self.headroom)
        self._candidates = candidates
        self._all_latency = {k for k in candidates if layouts[k].batch_sm_count == 0}
        self._has_zero = 0 in layouts.counts
        self._read_every = read_every
        self._down_bound = self._bound * (1.0 - hysteresis)
        self._corrections = _corrections.Corrections(((k, k) for k in candidates), half_life_steps=half_life_steps)
        self._base: dict[tuple[Any, int, int], float | None] = {}
        self._current: int | None = None
        self._steps = 0
        self._chosen = dict.fromkeys(layouts.counts, 0)
        self._timer: StepTimer = _step_timer.StepTimer(sample_every, max_pending) if timer is None else timer

    # ---- the per-step calls -------------------------------------------------------------------

    def step(self, p: float, context_tokens: int = 0, *, prefill_tokens: int = 0, tpot_slack_us: float = 0.0,
             ttft_slack_us: float | None = None, kv_used: float | None = None) -> Layout:
        """Switch to the layout for a step of parameter ``p`` and return it; the latency step
        launched on its ``latency_stream`` before :meth:`done` is timed. A few microseconds of
        host time; never waits for the GPU. The other figures of
        :meth:`~torch_green_contexts.step_policy.StepPolicy.step` are not modelled and are
        ignored."""
        _check_p(p)
        self._steps += 1
        steps = self._steps
        self._corrections.tick()
        if self._timer.pending and steps % self._read_every == 0:
            self.update()
        k = self._current = self._choose(p)
        layout: Layout = self.layouts.switch(k, ordering=self._ordering)
        self._chosen[k] += 1
        self._timer.begin(k, p, layout.latency_stream, steps, timed=k > 0)
        return layout

    def done(self) -> None:
        """Mark the end of the latency work of the last :meth:`step` (call it right after
        launching that work). Does nothing for a step that is not timed."""
        self._timer.end()

    def update(self) -> int:
        """Read the timings of the steps the GPU has finished (never waits); returns how many."""
        return self._timer.read(self.observe)  # type: ignore[arg-type]

    # ---- the choice and its correction (no GPU involved) -------------------------------------

    def idle_key(self) -> LayoutKey:
        """The layout while no latency work runs: :meth:`choose` of 0."""
        return self.choose(0)

    def choose(self, p: float) -> int:
        """The latency SM count :meth:`step` picks for ``p`` now, without switching."""
        _check_p(p)
        return self._choose(p)

    def _choose(self, p: float) -> int:
        if p == 0 and self._has_zero:
            return 0
        current = self._current
        for k in self._candidates:
            estimate = self.estimate(p, k)
            bound = self._down_bound if current is not None and 0 < k < current else self._bound
            if estimate is not None and estimate <= bound:
                return k
        return self._candidates[-1]

    def estimate(self, p: float, sm_count: int) -> float | None:
        """The corrected latency estimate (us) of a step of ``p`` on ``sm_count`` SMs; None where
        the profile has no figure (``p`` above every measured parameter)."""
        _check_p(p)
        factor = self.correction(sm_count)
        base = self._profiled(p, sm_count, self._percentile)
        return None if base is None else base * factor

    def correction(self, sm_count: int) -> float:
        """The factor (1 or more) the profile's figure for ``sm_count`` SMs is multiplied by now;
        ValueError for a count that has no layout here."""
        return self._corrections.factor(self._candidate(sm_count))

    def observe(self, sm_count: int, p: float, latency_us: float) -> None:
        """Take one measured latency of a step of ``p`` on ``sm_count`` SMs into the corrections
        (:meth:`update` calls it with the timings it reads; a server may feed its own).

        ``latency_us`` must be a finite number of 0 or more (ValueError otherwise, TypeError
        for a non-number). A step whose ``p`` is above every measured parameter has no profile
        figure to compare against and leaves the corrections as they are."""
        k = self._candidate(sm_count)
        _check_p(p)
        _validation.check_non_negative("latency_us", latency_us, "the measured latency in microseconds")
        figure = self._profiled(p, k, self._percentile)
        if figure is not None and figure > 0:
            self._corrections.observe(k, latency_us / figure)

    def _candidate(self, sm_count: int) -> int:
        """``sm_count`` checked: an int (TypeError) that has a layout here (ValueError)."""
        k = _validation.as_count("sm_count", sm_count)
        if k not in self._candidates:
            raise ValueError(f"no layout of {k} latency SMs to correct; have {self._candidates}")
        return k

    def stats(self) -> dict[str, Any]:
        """Steps taken, steps per layout, timings read per SM count, and the corrections now."""
        return {"steps": self._steps, "chosen": dict(self._chosen), "observed": self._corrections.observed(),
                "corrections": {k: self.correction(k) for k in self._candidates}, "pending": len(self._timer.pending)}

    def _profiled(self, p: float, k: int, percentile: int) -> float | None:
        key = (p, k, percentile)
        if key not in self._base:
            under_load = k not in self._all_latency
            self._base[key] = self.profile.latency(p, k, percentile, under_load=under_load)
        return self._base[key]

    def __repr__(self) -> str:
        return (f"SplitPolicy(slo_us={self.slo_us:g}, percentile={self._percentile}, layouts={self.layouts.counts}, "
                f"ordering={self._ordering!r})")


def _check_p(p: Any) -> None:
    """A step's parameter: a finite number of 0 or more (cheap for an int or a float)."""
    _validation.check_non_negative("p", p, "the step's parameter, a size such as the decode batch size")
