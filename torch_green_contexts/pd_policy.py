"""A layout per step for a server that multiplexes prefill and decode, serving both SLOs.

::

    from torch_green_contexts import SMPartition, sizing
    from torch_green_contexts.layouts import Layouts
    from torch_green_contexts.pd_policy import PrefillDecodePolicy

    total = SMPartition.from_device().sm_count                    # 132 on an H200
    layouts = Layouts([0, 16, total], overlapped=[(16, 64), (32, 32)], ordering="per_role")
    profile = sizing.profile_layouts(decode_step_for, [(8, 8_000), (64, 128_000)], layouts, load=prefill_chunk)
    policy = PrefillDecodePolicy(profile, layouts, tpot_slo_us=20_000)
    while serving:
        step = policy.step(len(batch), sum(r.context for r in batch), prefill_tokens=queued_tokens,
                           tpot_slack_us=min_slack_of(batch), ttft_slack_us=min_ttft_slack(queue))
        with torch.cuda.stream(step.latency_stream):
            decode(batch)
        policy.done()
        with torch.cuda.stream(step.batch_stream):
            prefill_chunk()

Per step it picks, among the layouts whose decode step is expected to fit the step budget, the
one that gives prefill the most SMs; with no prefill waiting, the one that gives decode the most.
Its options (``mode``, ``anchor``, ``guard``, ``dwell_steps``, ``kv_pressure``, the mixed-batch
fallback) make it keep the best static split unless a step needs another, size decode by the
worst slowdown seen beside prefill, hold a layout against flapping, follow KV pressure, and run
a light prefill queue as one mixed batch on the whole device.
"""

from __future__ import annotations

import math
from typing import Any, Hashable, Sequence

from . import _layout_args, _layout_build, _pd_choice, _pd_options, _pd_pause, _validation
from ._pd_options import MixedStepUs as _MixedStepUs
from ._sizing import _corrections, _guard, _sizing_result, _step_timer
from ._sizing._step_costs import LayoutProfile
from .layouts import Layout
from .step_policy import LayoutSet, StepTimer

__all__ = ["PrefillDecodePolicy"]


class PrefillDecodePolicy:
    """Picks a layout of ``layouts`` per step from a decode step's modelled latency.

    The step budget is ``tpot_slo_us * (1 - headroom)`` plus a share of the running requests'
    TPOT slack (how far the tightest of them is ahead of its pace, which it can spend on a
    slower step): ``slack_share`` of it normally, all of it when a waiting prefill has no TTFT
    slack left (``ttft_slack_us <= 0``). Among the layouts whose estimate fits the budget it
    takes the one with the most batch SMs (then the largest batch floor); when none fits, the
    fastest. With no prefill waiting (``prefill_tokens == 0``) decode gets the layout with the
    most latency SMs; with no decode work, prefill gets the one with the most batch SMs.

    Estimates: the ``percentile`` cost model of ``profile`` (:func:`sizing.profile_layouts` of
    the same layouts) for the step's batch size and context tokens, times an online correction
    per layout from the steps timed on it (as :class:`~torch_green_contexts.policy.SplitPolicy`
    corrects: per layout, a change propagating to layouts with fewer latency SMs, decaying when
    unmeasured; moving to a layout that gives decode fewer SMs needs its estimate ``hysteresis``
    below the budget).

    The options beyond that rule (all off by default, which keeps the rule above as it is):

    - ``mode``: ``"distserve"`` (the budget above: requests meet their mean TPOT, slack may be
      spent on prefill) or ``"p99"`` (every step within ``tpot_slo_us * (1 - headroom)``: no
      slack is spent, and the guard is on). With the guard, a step with no prefill waiting
      takes the layout with the most decode SMs only while its guarded estimate fits the budget,
      else the layout of the smallest guarded estimate: a prompt arriving during the step runs
      beside it, on decode's SMs where decode has every SM.
    - ``anchor``: a layout key, the best static split for the SLOs; the policy keeps it while its
      estimate fits the budget, takes the smallest layout with more decode SMs that fits when it
      does not, and one with fewer only while a waiting prompt is late (``ttft_slack_us <= 0``).
    - ``guard``: estimates are the profile's times the largest slowdown seen on that layout with
      prefill of that load class beside it (``guard_classes``: upper bounds of waiting prompt
      tokens), decaying with a half-life of ``guard_half_life_steps`` steps, on a split never
      below the slowdown seen on splits with more decode SMs: a worst case that cannot lock a
      layout out.
    - ``dwell_steps``: steps on a layout before moving to one with fewer decode SMs.
    - ``kv_pressure=(high, low)``: with ``kv_used`` (the share of the KV cache in use) at
      ``high`` or more, decode first (the fastest layout); at ``low`` or less, the budget rule.
    - ``pause_slack_us`` (``mode="p99"`` only): while a waiting prompt's TTFT slack is below it
      and prompt tokens wait, :meth:`step` sets :attr:`paused`, returns the layout with the most
      batch SMs and the caller launches no decode step, only prefill, and calls :meth:`step`
      again at its next decision. A pause costs each request decoding through it one long gap
      between tokens, whatever its length; it starts only while ``pause_gap_share`` of a window
      of ``pause_window_gaps`` token gaps, less the long gaps spent (fading as gaps go by), pays
      a gap for each request decoding, and ends when no prompt is short of slack or a request
      joining could not be paid for. The P99 of the time between tokens lets 1% of gaps exceed
      the TPOT SLO; bursts of prompts get every SM out of that tail.
    - ``mixed_step_us(batch, context_tokens, prompt_tokens)``: when every waiting prompt token
      fits ``mixed_tokens`` and such a mixed step (decode and prefill in one pass) fits the
      budget on the layout with the most decode SMs, :meth:`step` returns that layout and
      :attr:`mixed_tokens` says how many prompt tokens to run with the decode batch (0 otherwise).

    ``timer`` times the steps (CUDA events by default; see
    :class:`~torch_green_contexts.step_policy.StepTimer`); ``layouts`` is a
    :class:`~torch_green_contexts.layouts.Layouts` or any
    :class:`~torch_green_contexts.step_policy.LayoutSet`. It is a
    :class:`~torch_green_contexts.step_policy.StepPolicy`. Use it from one thread at a time.
    """

    def __init__(self, profile: LayoutProfile, layouts: LayoutSet, *, tpot_slo_us: float, percentile: int = 99,
                 headroom: float = 0.05, slack_share: float = 0.5, hysteresis: float = 0.05,
                 ordering: str = "per_role", half_life_steps: int = 256, read_every: int = 8,
                 sample_every: int = 1, max_pending: int = 256, timer: StepTimer | None = None,
                 mode: str = "distserve", anchor: _layout_build.LayoutKey | None = None, guard: bool | None = None,
                 guard_classes: Sequence[int] = (0, 2048), guard_half_life_steps: int = 4096, dwell_steps: int = 0,
                 kv_pressure: tuple[float, float] | None = None, mixed_step_us: _MixedStepUs | None = None,
                 mixed_tokens: int = 256, pause_slack_us: float | None = None, pause_gap_share: float = 0.005,
                 pause_window_gaps: int = 10_000) -> None:
        if not isinstance(profile, LayoutProfile):
            raise TypeError(f"profile must be a LayoutProfile (sizing.profile_layouts), got {type(profile).__name__}")
        _validation.check_has("layouts", layouts, "a Layouts (torch_green_contexts.layouts.Layouts)",
                              ("keys", "__getitem__", "switch"))
        self.tpot_slo_us = _validation.as_positive_us("tpot_slo_us", tpot_slo_us)
        self.headroom = _validation.as_number_in("headroom", headroom, below=1.0)
        self.slack_share = _validation.as_number_in("slack_share", slack_share, below=1.0 + 1e-12)
        self._hysteresis = _validation.as_number_in("hysteresis", hysteresis, below=1.0)
        self._percentile = _sizing_result.check_percentile(percentile)
        self._ordering = _layout_args.check_ordering(ordering)
        self._read_every = _validation.as_int_at_least("read_every", read_every, 1)
        keys = list(layouts.keys)
        missing = [k for k in keys if k not in profile.measured]
        if missing:
            raise ValueError(f"the profile has no figures for the layouts {missing}; it measured "
                             f"{list(profile.measured)}: profile these layouts (sizing.profile_layouts)")
        self.profile, self.layouts = profile, layouts
        self._layouts = {k: layouts[k] for k in keys}
        # Most batch SMs first (then the larger batch floor): the order of preference.
        self._by_prefill = sorted(keys, key=lambda k: (-self._layouts[k].batch_sm_count,
                                                       -self._layouts[k].batch_floor))
        self._most_decode = max(keys, key=lambda k: (self._layouts[k].sm_count, -self._layouts[k].batch_sm_count))
        self._most_prefill = self._by_prefill[0]
        self._sms = {k: self._layouts[k].sm_count for k in keys}
        # While prefill waits, decode keeps a split or gives prefill every SM: the end layout with
        # every SM to decode would run the prefill pieces on decode's SMs.
        self._while_prefill_waits = [k for k in self._by_prefill if self._layouts[k].batch_sm_count > 0]
        self._costs = {k: profile.cost(k, self._percentile) for k in keys}
        self._terms_all = _pd_choice.cost_terms(self._costs, self._by_prefill)
        self._terms_while_prefill_waits = _pd_choice.cost_terms(self._costs, self._while_prefill_waits)
        self._corrections = _corrections.Corrections(
            ((k, self._layouts[k].sm_count) for k in keys),
            half_life_steps=_validation.as_int_at_least("half_life_steps", half_life_steps, 1))
        sample_every = _validation.as_int_at_least("sample_every", sample_every, 1)
        max_pending = _validation.as_int_at_least("max_pending", max_pending, 1)
        self._timer: StepTimer = _step_timer.StepTimer(sample_every, max_pending) if timer is None else timer
        self._options = _pd_options.check(mode, anchor, mode == "p99" if guard is None else guard, guard_classes,
                                         guard_half_life_steps, dwell_steps, kv_pressure, mixed_step_us, mixed_tokens,
                                         keys)
        self._legacy = self._options.legacy
        if pause_slack_us is not None and self._options.mode != "p99":
            raise ValueError(f"pause_slack_us needs mode='p99' (a pause breaks the mean TPOT of every request "
                             f"decoding through it), got mode={mode!r}")
        self._pause = None if pause_slack_us is None else _pd_pause.TailPause(pause_slack_us, pause_gap_share,
                                                                               pause_window_gaps)
        self.paused = False  # the last step pauses decode: launch none, prefill on its layout
        self._guard = _guard.ContentionGuard(((k, self._layouts[k].sm_count, self._is_split(k)) for k in keys),
                                             self._options.guard_classes,
                                             half_life_steps=self._options.guard_half_life_steps)
        self._current: _layout_build.LayoutKey | None = None
        self._steps = self._since_switch = 0
        self._chosen = dict.fromkeys(keys, 0)
        self.mixed_tokens = 0  # prompt tokens the last step runs with its decode batch (the mixed fallback)
        self._mixed_steps = 0

    def step(self, batch: int, context_tokens: int = 0, *, prefill_tokens: int = 0,
             tpot_slack_us: float = 0.0, ttft_slack_us: float | None = None, kv_used: float | None = None) -> Layout:
        """Switch to the layout for this step and return it; the decode work launched on its
        ``latency_stream`` before :meth:`done` is timed. ``batch`` and ``context_tokens``: the
        decode batch and the context tokens its requests hold in all; ``prefill_tokens``: prompt
        tokens waiting for prefill; ``tpot_slack_us``: the smallest TPOT slack of the running
        requests (their token budget so far less the time they took); ``ttft_slack_us``: the
        smallest TTFT slack of the waiting prompts (None: unknown); ``kv_used``: the share of the
        KV cache in use (None: unknown). Never waits for the GPU."""
        _validation.check_decode_point(batch, context_tokens)
        _validation.check_non_negative("prefill_tokens", prefill_tokens, "the waiting prompt tokens")
        kv_used = _pd_options.check_kv_used(kv_used)
        self.paused = self._pause is not None and self._pause.decide(batch, prefill_tokens, ttft_slack_us)
        if self.paused:
            self.mixed_tokens = 0
            self._since_switch = self._since_switch + 1 if self._most_prefill == self._current else 0
            self._current = self._most_prefill
            paused_on: Layout = self.layouts.switch(self._most_prefill, ordering=self._ordering)
            return paused_on
        self._steps += 1
        self._corrections.tick()
        self._guard.tick()
        if self._timer.pending and self._steps % self._read_every == 0:
            self.update()
        load_class = self._guard.load_class(prefill_tokens)
        key, self.mixed_tokens = self._decide(batch, context_tokens, prefill_tokens, tpot_slack_us, ttft_slack_us,
                                              kv_used, load_class)
        self._since_switch = self._since_switch + 1 if key == self._current else 0
        self._current = key
        self._mixed_steps += bool(self.mixed_tokens)
        layout: Layout = self.layouts.switch(key, ordering=self._ordering)
        self._chosen[key] += 1
        self._timer.begin(key, (batch, context_tokens, load_class), layout.latency_stream, self._steps,
                          timed=batch > 0 and not self.mixed_tokens)
        return layout

    @property
    def options(self) -> _pd_options.Options:
        """The options beyond the step budget, as checked (fixed once the policy is made)."""
        return self._options

    def _is_split(self, key: _layout_build.LayoutKey) -> bool:
        layout = self._layouts[key]
        return bool(layout.sm_count > 0 and layout.batch_sm_count > 0)

    def idle_key(self) -> _layout_build.LayoutKey:
        """The layout while no request decodes: the one giving prefill the most SMs."""
        return self._most_prefill

    def done(self) -> None:
        """The decode work of the last :meth:`step` has been launched."""
        self._timer.end()

    def update(self) -> int:
        """Read the timings of the steps the GPU has finished (never waits); returns how many."""
        return self._timer.read(self._observe_timed)

    def _observe_timed(self, key: Hashable, point: Any, latency_us: float) -> None:
        batch, context_tokens, load_class = point  # checked by step()
        self._take(key, batch, context_tokens, latency_us, load_class)  # type: ignore[arg-type]

    def budget_us(self, tpot_slack_us: float = 0.0, ttft_slack_us: float | None = None) -> float:
        """What a decode step may take now (in ``mode="p99"``, the TPOT SLO less the headroom)."""
        if self.options.mode == "p99":
            return self.tpot_slo_us * (1.0 - self.headroom)
        share = 1.0 if ttft_slack_us is not None and ttft_slack_us <= 0 else self.slack_share
        return self.tpot_slo_us * (1.0 - self.headroom) + share * max(0.0, tpot_slack_us)

    def choose(self, batch: int, context_tokens: int = 0, *, prefill_tokens: int = 0,
               tpot_slack_us: float = 0.0, ttft_slack_us: float | None = None,
               kv_used: float | None = None) -> _layout_build.LayoutKey:
        """The layout key :meth:`step` picks for these figures now, without switching."""
        _validation.check_decode_point(batch, context_tokens)
        _validation.check_non_negative("prefill_tokens", prefill_tokens, "the waiting prompt tokens")
        kv_used = _pd_options.check_kv_used(kv_used)
        return self._decide(batch, context_tokens, prefill_tokens, tpot_slack_us, ttft_slack_us, kv_used,
                            self._guard.load_class(prefill_tokens))[0]

    def _decide(self, batch: float, context_tokens: float, prefill_tokens: float, tpot_slack_us: float,
                ttft_slack_us: float | None, kv_used: float | None,
                load_class: int) -> tuple[_layout_build.LayoutKey, int]:
        """The layout for these figures and the prompt tokens of a mixed step (0: none)."""
        o = self._options
        if batch > 0 and prefill_tokens <= 0 and o.mode == "p99" and o.guard:
            # Prompts arriving during the step run beside it: the end layout's decode has no SMs of its own.
            estimates = _pd_choice.estimates(self._terms_all, batch, context_tokens, self._factors(load_class))
            return _pd_choice.decode_alone(estimates, self._sms, self._most_decode, self.budget_us()), 0
        if self._legacy or batch <= 0 or prefill_tokens <= 0:
            return self._choose(batch, context_tokens, prefill_tokens, tpot_slack_us, ttft_slack_us), 0
        budget = self.budget_us(tpot_slack_us, ttft_slack_us)
        factors = self._factors(load_class)
        if o.mixed_step_us is not None and prefill_tokens <= o.mixed_tokens:
            tokens = int(prefill_tokens)
            mixed_us = o.mixed_step_us(int(batch), int(context_tokens), tokens)
            if _pd_choice.mixed_fits(mixed_us * factors[self._most_decode], budget):
                return self._most_decode, tokens
        key = _pd_choice.choose(
            self._while_prefill_waits, self._sms,
            _pd_choice.estimates(self._terms_while_prefill_waits, batch, context_tokens, factors), budget, o,
            current=self._current, steps_on_current=self._since_switch, hysteresis=self._hysteresis,
            ttft_slack_us=ttft_slack_us, kv_used=kv_used)
        return key, 0

    def _choose(self, batch: float, context_tokens: float, prefill_tokens: float, tpot_slack_us: float,
                ttft_slack_us: float | None) -> _layout_build.LayoutKey:
        if batch <= 0:
            return self._most_prefill
        if prefill_tokens <= 0:
            return self._most_decode
        budget = self.budget_us(tpot_slack_us, ttft_slack_us)
        current_sms = self._sms[self._current] if self._current is not None else -1
        fastest, fastest_us = self._most_decode, math.inf
        factors, sms, held_budget = self._corrections.factors(), self._sms, budget * (1.0 - self._hysteresis)

        for key, per_kilo_token, per_request, fixed in self._terms_all:
            estimate = (per_kilo_token * context_tokens / 1000.0 + per_request * batch + fixed) * factors[key]
            if estimate <= (held_budget if sms[key] < current_sms else budget):
                return key
            if estimate < fastest_us:
                fastest, fastest_us = key, estimate
        return fastest

    def estimate(self, key: _layout_build.LayoutKey, batch: int, context_tokens: int = 0, *,
                 prefill_tokens: int = 0) -> float:
        """The latency estimate (us) of a decode step on layout ``key`` beside ``prefill_tokens``
        waiting prompt tokens: the profile's times the correction, or the guard when it is on
        (ValueError for a key that has no layout here)."""
        _validation.check_decode_point(batch, context_tokens)
        _validation.check_non_negative("prefill_tokens", prefill_tokens, "the waiting prompt tokens")
        return self._estimate(self._layout_key(key), batch, context_tokens, self._guard.load_class(prefill_tokens))

    def _estimate(self, key: _layout_build.LayoutKey, batch: float, context_tokens: float, load_class: int = 0) -> float:
        return self._costs[key].at(batch, context_tokens) * self._factors(load_class)[key]

    def _factors(self, load_class: int) -> dict[Hashable, float]:
        """Every layout's factor now: the guard's when it is on, else the corrections'."""
        if self._options.guard:
            return self._guard.factors(load_class)
        return self._corrections.factors()

    def observe(self, key: _layout_build.LayoutKey, batch: int, context_tokens: int, latency_us: float, *,
                prefill_tokens: int = 0) -> None:
        """Take one measured decode step (beside ``prefill_tokens`` waiting prompt tokens) into
        the corrections and, when it is on, the guard (:meth:`update` feeds the timings it reads; a server may
        feed its own). ValueError for a key that has no layout here, and for ``batch``,
        ``context_tokens`` or ``latency_us`` that is not a finite number of 0 or more (TypeError
        for a non-number)."""
        _validation.check_non_negative("prefill_tokens", prefill_tokens, "the waiting prompt tokens")
        self._observe(key, batch, context_tokens, latency_us, self._guard.load_class(prefill_tokens))

    def _observe(self, key: Hashable, batch: int, context_tokens: int, latency_us: float, load_class: int) -> None:
        key = self._layout_key(key)
        _validation.check_decode_point(batch, context_tokens)
        _validation.check_non_negative("latency_us", latency_us, "the measured latency in microseconds")
        self._take(key, batch, context_tokens, latency_us, load_class)

    def _take(self, key: _layout_build.LayoutKey, batch: float, context_tokens: float, latency_us: float,
              load_class: int) -> None:
        """One step's latency into the corrections, and into the guard when it is on (both refuse
        a ratio that is not a finite number of 0 or more)."""
        figure = self._costs[key].at(batch, context_tokens)
        if figure > 0:
            ratio = latency_us / figure
            self._corrections.observe(key, ratio)
            if self._options.guard and latency_us > 0:
                self._guard.observe(key, load_class, ratio)

    def correction(self, key: _layout_build.LayoutKey) -> float:
        """The factor (1 or more) the cost model of layout ``key`` is multiplied by now;
        ValueError for a key that has no layout here."""
        return self._corrections.factor(self._layout_key(key))

    def _layout_key(self, key: Hashable) -> _layout_build.LayoutKey:
        if key not in self._layouts:
            raise ValueError(f"no layout {key!r} to correct; have {list(self._layouts)}")
        return key

    def stats(self) -> dict[str, Any]:
        """Steps taken, steps per layout, timings read per layout, and the corrections now."""
        return {"steps": self._steps, "chosen": dict(self._chosen), "observed": self._corrections.observed(),
                "corrections": {k: self._corrections.factor(k) for k in self._layouts},
                "guard": self._guard.table() if self.options.guard else None, "mixed_steps": self._mixed_steps,
                "pending": len(self._timer.pending), "pause": None if self._pause is None else self._pause.stats()}

    def __repr__(self) -> str:
        return (f"PrefillDecodePolicy(tpot_slo_us={self.tpot_slo_us:g}, percentile={self._percentile}, "
                f"layouts={list(self._layouts)}, ordering={self._ordering!r})")
