"""The rules :class:`~torch_green_contexts.pd_policy.PrefillDecodePolicy` picks a layout by,
over the layouts' estimates for the step at hand. Plain Python.

- Without decode work prefill gets the most SMs; without waiting prefill decode does (under the
  guard, only while that layout's estimate fits the budget; else the fastest with decode SMs).
- The budget rule: among the layouts whose estimate fits the step budget, the one giving prefill
  the most SMs; when none fits, the fastest.
- With an anchor (the best static split for the SLOs): the anchor while its estimate fits; a
  layout with more decode SMs when it does not; one with fewer only while a waiting prompt is
  late (its TTFT slack gone).
- Under KV pressure: decode first (the fastest layout) above the high share of the KV cache in
  use, the budget rule below the low one.
- Moving to fewer decode SMs waits ``dwell_steps`` on the current layout and needs the estimate
  ``hysteresis`` below the budget; moving to more is never held back.
"""

from __future__ import annotations

import math
from typing import Hashable, Sequence, Tuple, TypeVar

from ._pd_options import Options
from ._sizing._step_costs import StepCost

K = TypeVar("K", bound=Hashable)
CostTerms = Tuple[K, float, float, float]  # a layout, its us per 1000 context tokens, per request, fixed


def cost_terms(costs: dict[K, StepCost], keys: Sequence[K]) -> list[CostTerms[K]]:
    """The terms of ``keys``' step costs, in their order, for :func:`estimates`."""
    return [(k, costs[k].per_kilo_token_us, costs[k].per_request_us, costs[k].fixed_us) for k in keys]


def estimates(terms: list[CostTerms[K]], batch: float, context_tokens: float,
              factors: dict[Hashable, float]) -> dict[K, float]:
    """Each layout's estimate for a step, in the order of ``terms``: the profile's cost (the same
    arithmetic as :meth:`StepCost.at`, to the last bit) times the layout's factor, in one pass."""
    return {k: (per_kilo_token * context_tokens / 1000.0 + per_request * batch + fixed) * factors[k]
            for k, per_kilo_token, per_request, fixed in terms}


def choose(keys_by_prefill: Sequence[K], sms: dict[K, int], estimates: dict[K, float], budget: float,
           options: Options, *, current: K | None, steps_on_current: int, hysteresis: float,
           ttft_slack_us: float | None, kv_used: float | None) -> K:
    """The layout for a decode step while prefill waits (``keys_by_prefill``: most batch SMs
    first; ``sms``: each layout's latency SMs; ``estimates``: each layout's estimate for the step,
    those of ``keys_by_prefill`` at least)."""
    fastest = keys_by_prefill[0]  # the smallest estimate, then the most latency SMs, then the first
    fastest_us, fastest_sms = estimates[fastest], sms[fastest]
    fitting = []
    for k in keys_by_prefill:
        us = estimates[k]
        if us <= budget:
            fitting.append(k)
        if us < fastest_us or (us == fastest_us and sms[k] > fastest_sms):
            fastest, fastest_us, fastest_sms = k, us, sms[k]
    by_budget = fitting[0] if fitting else fastest
    pressure = options.kv_pressure
    late = ttft_slack_us is not None and ttft_slack_us <= 0
    if pressure is not None and kv_used is not None and kv_used >= pressure[0]:
        target = fastest
    elif pressure is not None and kv_used is not None and kv_used <= pressure[1]:
        target = by_budget
    elif options.anchor is not None:
        anchor: K = options.anchor  # type: ignore[assignment]  # checked to be one of the keys
        if estimates[anchor] <= budget:
            smaller = [k for k in fitting if sms[k] < sms[anchor]]
            target = smaller[0] if late and smaller else anchor
        else:
            larger = min((k for k in fitting if sms[k] > sms[anchor]), key=sms.__getitem__, default=None)
            target = fastest if larger is None else larger
    else:
        target = by_budget
    if current is None or current not in estimates or target == current or sms[target] >= sms[current]:
        return target
    held = steps_on_current < options.dwell_steps or estimates[target] > budget * (1.0 - hysteresis)
    if held and estimates[current] <= budget:
        return current
    return target


def decode_alone(estimates: dict[K, float], sms: dict[K, int], most_decode: K, budget: float) -> K:
    """The layout for a decode step with no prefill waiting, from guarded estimates: the one with
    the most decode SMs while its estimate fits ``budget``, else the fastest that gives decode SMs
    of its own (then the most of them). A prompt arriving during the step runs beside it, on
    decode's SMs where decode has every SM."""
    if estimates[most_decode] <= budget:
        return most_decode
    return min((k for k in estimates if sms[k] > 0), key=lambda k: (estimates[k], -sms[k]))


def mixed_fits(mixed_us: float, budget: float) -> bool:
    """A mixed step of this estimate fits the step budget."""
    return math.isfinite(mixed_us) and mixed_us <= budget
