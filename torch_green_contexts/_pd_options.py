"""The options of :class:`~torch_green_contexts.pd_policy.PrefillDecodePolicy` beyond its step
budget, checked once: the mode, the static anchor, the worst-case guard, the dwell before giving
decode fewer SMs, the KV-pressure thresholds and the mixed-batch fallback. Plain Python."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Hashable, Sequence

from . import _validation

MODES = ("distserve", "p99")
MixedStepUs = Callable[[int, int, int], float]  # (decode batch, context tokens, prompt tokens) -> us


@dataclasses.dataclass(frozen=True)
class Options:
    mode: str
    anchor: Hashable | None
    guard: bool
    guard_classes: tuple[int, ...]
    guard_half_life_steps: int
    dwell_steps: int
    kv_pressure: tuple[float, float] | None
    mixed_step_us: MixedStepUs | None
    mixed_tokens: int

    @property
    def legacy(self) -> bool:
        """Only the step budget's rule (the policy's behaviour without these options)."""
        return (self.mode == "distserve" and self.anchor is None and not self.guard and self.dwell_steps == 0
                and self.kv_pressure is None and self.mixed_step_us is None)


def check(mode: Any, anchor: Any, guard: Any, guard_classes: Any, guard_half_life_steps: Any, dwell_steps: Any,
          kv_pressure: Any, mixed_step_us: Any, mixed_tokens: Any, keys: Sequence[Hashable]) -> Options:
    """The options, or the error naming the argument, what it was and what is allowed."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(repr(m) for m in MODES)}, got {mode!r}")
    if anchor is not None and anchor not in keys:
        raise ValueError(f"anchor {anchor!r} is not a layout of these layouts; have {list(keys)}")
    guard = _validation.as_bool("guard", guard)
    classes = _ascending_counts("guard_classes", guard_classes)
    half_life = _validation.as_int_at_least("guard_half_life_steps", guard_half_life_steps, 1)
    dwell = _validation.as_int_at_least("dwell_steps", dwell_steps, 0)
    pressure = None
    if kv_pressure is not None:
        try:
            high, low = (float(v) for v in kv_pressure)
        except (TypeError, ValueError):
            raise TypeError(f"kv_pressure must be (high, low) shares of the KV cache in use, got {kv_pressure!r}") from None
        if not (math.isfinite(high) and math.isfinite(low) and 0.0 <= low < high <= 1.0):
            raise ValueError(f"kv_pressure must be (high, low) with 0 <= low < high <= 1, got {kv_pressure!r}")
        pressure = (high, low)
    if mixed_step_us is not None and not callable(mixed_step_us):
        raise TypeError(f"mixed_step_us must be a callable (batch, context_tokens, prompt_tokens) -> microseconds, "
                        f"got {type(mixed_step_us).__name__}")
    tokens = _validation.as_int_at_least("mixed_tokens", mixed_tokens, 1)
    return Options(mode, anchor, guard, classes, half_life, dwell, pressure, mixed_step_us, tokens)


def _ascending_counts(name: str, values: Any) -> tuple[int, ...]:
    try:
        counts = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of prompt-token counts, got {type(values).__name__}") from None
    checked = tuple(_validation.as_int_at_least(name, v, 0) for v in counts)
    if list(checked) != sorted(set(checked)):
        raise ValueError(f"{name} must be strictly ascending, got {list(checked)}")
    return checked


def check_kv_used(kv_used: Any) -> float | None:
    """``kv_used`` (the share of the KV cache in use), or None; ValueError outside 0..1."""
    if kv_used is None or (type(kv_used) is float and 0.0 <= kv_used <= 1.0):
        return kv_used
    if isinstance(kv_used, bool) or not isinstance(kv_used, (int, float)):
        raise TypeError(f"kv_used must be a number from 0 to 1 or None, got {type(kv_used).__name__}")
    if not (math.isfinite(kv_used) and 0.0 <= kv_used <= 1.0):
        raise ValueError(f"kv_used must be the share of the KV cache in use, from 0 to 1, got {kv_used!r}")
    return float(kv_used)
