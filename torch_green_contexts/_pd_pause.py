"""The pause of :class:`~torch_green_contexts.pd_policy.PrefillDecodePolicy`: decode stops while
a waiting prompt's TTFT slack is short, so that prefill has every SM, paid for out of the share
of token gaps the P99 of the time between tokens lets exceed the TPOT SLO. Plain Python.

A pause of any length costs each request decoding through it one long gap (those that join while
it lasts: one each as well); decode steps that run add a gap per request. The allowance is
``gap_share`` of a window of ``window_gaps`` gaps less the long gaps spent, which fade as gaps go
by (by a factor ``e`` a window), so that it holds in any stretch of the serving, not only on
average since the start. A pause starts only when the allowance holds a gap for every request
decoding, and ends once no waiting prompt is short of slack, no prompt tokens wait, or a joining
request cannot be paid for."""

from __future__ import annotations

import math
from typing import Any

from . import _validation


class TailPause:
    """Whether a step pauses decode, and the gap allowance that pays for it."""

    def __init__(self, slack_us: Any, gap_share: Any, window_gaps: Any) -> None:
        self.slack_us = _validation.as_positive_us("pause_slack_us", slack_us)
        if isinstance(gap_share, bool) or not isinstance(gap_share, (int, float)):
            raise TypeError(f"pause_gap_share must be a number, got {type(gap_share).__name__}")
        if not (math.isfinite(gap_share) and 0.0 < gap_share < 0.01):
            raise ValueError(f"pause_gap_share must be above 0 and below 0.01 (the P99 lets 1% of token gaps exceed "
                             f"the TPOT SLO, and steps that run slow take their part of it), got {gap_share!r}")
        self.gap_share = float(gap_share)
        self.window_gaps = _validation.as_int_at_least("pause_window_gaps", window_gaps, 1)
        self.paused = False
        self.gaps = self.pauses = self.paused_steps = self._batch = 0
        self.spent = 0.0  # long gaps, faded

    def allowance(self) -> float:
        """Long gaps a pause may still cost."""
        return self.gap_share * self.window_gaps - self.spent

    def decide(self, batch: int, prefill_tokens: float, ttft_slack_us: float | None) -> bool:
        """Whether the step of ``batch`` requests pauses; a step that runs counts their gaps."""
        short = (batch > 0 and prefill_tokens > 0 and ttft_slack_us is not None
                 and ttft_slack_us < self.slack_us)
        if self.paused:
            joined = max(0, batch - self._batch)
            if short and self.allowance() >= joined:
                self.spent += joined
                self._batch = max(self._batch, batch)
                self.paused_steps += 1
                return True
            self.paused = False
        elif short and self.allowance() >= batch:
            self.paused, self._batch = True, batch
            self.spent += batch
            self.pauses += 1
            self.paused_steps += 1
            return True
        self.gaps += batch
        self.spent *= math.exp(-batch / self.window_gaps)
        return False

    def stats(self) -> dict[str, Any]:
        return {"pauses": self.pauses, "paused_steps": self.paused_steps, "gaps": self.gaps,
                "long_gaps_spent_faded": self.spent, "allowance": self.allowance()}
