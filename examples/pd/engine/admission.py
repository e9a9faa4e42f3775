"""Who goes first: the order in which waiting requests get a KV slot and their prompts are
prefilled. Plain Python (no torch).

- ``fcfs``: first come, first served.
- ``spf``: shortest prompt first, with aging: a request that has waited ``aging_s`` or longer
  goes ahead of every request that has not (the oldest of them first), so that a long prompt
  behind a stream of short ones is delayed by at most about ``aging_s``. With
  ``aging_per_token``, a request ages after the larger of ``aging_s`` and that much a prompt
  token (half of a TTFT SLO that grows with the prompt ages each request at half its own SLO).

A request whose prefill has begun stays first in the prefill queue whatever the order: part of
its KV cache is written, and finishing it first is what the schedulers being compared do.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from typing import Sequence

from .request import Request

ORDERS = ("fcfs", "spf")


@dataclasses.dataclass(frozen=True)
class Order:
    """An admission order: ``name`` is ``"fcfs"`` or ``"spf"`` (with ``aging_s``)."""

    name: str = "fcfs"
    aging_s: float = math.inf
    aging_per_token: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in ORDERS:
            raise ValueError(f"admission order must be one of {', '.join(ORDERS)}, got {self.name!r}")
        if not self.aging_s > 0:
            raise ValueError(f"aging_s must be positive, got {self.aging_s!r}")
        if not self.aging_per_token >= 0:
            raise ValueError(f"aging_per_token must not be negative, got {self.aging_per_token!r}")

    def key(self, request: Request, now: float) -> tuple[float, ...]:
        """Smaller goes first."""
        if self.name == "fcfs":
            return (request.arrival, request.id)
        aging = self.aging_s if not self.aging_per_token else max(self.aging_s, self.aging_per_token * request.prompt)
        if now - request.arrival >= aging:
            return (0, request.arrival, request.id)
        return (1, request.prompt, request.arrival, request.id)

    def sort(self, requests: list[Request], now: float) -> None:
        if self.name != "fcfs" and len(requests) > 1:  # FCFS: they joined in arrival order
            requests.sort(key=lambda r: self.key(r, now))

    @property
    def label(self) -> str:
        if self.name == "fcfs":
            return "FCFS"
        aging = f"{self.aging_s * 1e3:g} ms"
        if self.aging_per_token:
            aging = f"max({aging}, {self.aging_per_token * 1e3:g} ms a prompt token)"
        return f"SPF, aging {aging}"


FCFS = Order()


def order_for(name: str, ttft_slo_s: float, ttft_per_token: float = 0.0, aging_s: float | None = None) -> Order:
    """The admission order ``name`` of a run; ``spf`` ages a request after ``aging_s`` or, by
    default, half its own TTFT SLO (the larger of ``ttft_slo_s`` and ``ttft_per_token`` a
    prompt token)."""
    if name != "spf":
        return Order(name)
    if aging_s is not None:
        return Order(name, aging_s)
    return Order(name, ttft_slo_s / 2, ttft_per_token / 2)


@dataclasses.dataclass(eq=False)
class Live:
    """A request holding a KV slot. ``prefilled``: prompt tokens whose prefill has been
    scheduled; ``tokens``: output tokens produced (the first by the prefill); ``last_token``:
    when the latest one reached the host."""

    request: Request
    slot: int
    prefilled: int = 0
    tokens: int = 0
    first_token: float | None = None
    finish: float | None = None
    last_token: float | None = None

    def decode_row(self) -> tuple[int, int]:
        """(slot, KV length once this step's input token is written): the step reads the
        prompt and every output token so far."""
        return self.slot, self.request.prompt + self.tokens


class Admission:
    """Requests enter one at a time (:meth:`add`) and join the waiting ones at the next
    :meth:`arrive`; a waiting request holds no KV slot until :meth:`admit` gives it one, and at
    most ``slots`` requests hold one (prefilling or decoding). Waiting requests get slots in
    ``order``."""

    def __init__(self, slots: int, order: Order = FCFS) -> None:
        if slots < 1:
            raise ValueError(f"need at least one slot, got {slots}")
        self._entered: list[Request] = []
        self._waiting: list[Request] = []
        self._free = deque(range(slots))
        self.slots, self.order = slots, order

    def add(self, request: Request) -> None:
        """A request has arrived; it waits from the next :meth:`arrive` on."""
        self._entered.append(request)

    def arrive(self) -> None:
        """The requests added since the last call join the waiting requests."""
        if self._entered:
            self._waiting.extend(sorted(self._entered, key=lambda r: (r.arrival, r.id)))
            self._entered.clear()

    def admit(self, now: float = math.inf) -> list[Live]:
        """Waiting requests that get a free slot, in the order's sequence at ``now``."""
        if not self._waiting or not self._free:
            return []
        self.order.sort(self._waiting, now)
        n = min(len(self._waiting), len(self._free))
        admitted = [Live(r, self._free.popleft()) for r in self._waiting[:n]]
        del self._waiting[:n]
        return admitted

    def release(self, live: Live) -> None:
        self._free.append(live.slot)

    @property
    def waiting(self) -> Sequence[Request]:
        return self._waiting

    @property
    def empty(self) -> bool:
        """No request added and not yet admitted."""
        return not self._entered and not self._waiting

    @property
    def held(self) -> int:
        return self.slots - len(self._free)


@dataclasses.dataclass(frozen=True)
class PrefillPart:
    """``length`` prompt tokens of one request from ``start``; ``completes`` when they are
    its last."""

    live: Live
    start: int
    length: int
    completes: bool


class PrefillQueue:
    """Requests holding a slot whose prompt is not all scheduled yet, taken in ``order``
    (a request already begun first)."""

    def __init__(self, order: Order = FCFS) -> None:
        self.order = order
        self._items: list[Live] = []

    def add(self, live: Live) -> None:
        self._items.append(live)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._items)

    @property
    def tokens(self) -> int:
        """Prompt tokens not yet scheduled."""
        return sum(live.request.prompt - live.prefilled for live in self._items)

    def take(self, tokens: int, now: float = math.inf) -> list[PrefillPart]:
        """Up to ``tokens`` prompt tokens (a prompt longer than that continues in the next
        call); requests whose last tokens are taken leave the queue."""
        items = self._items
        if self.order.name != "fcfs" and len(items) > 1:
            begun = [live for live in items if live.prefilled]
            rest = [live for live in items if not live.prefilled]
            rest.sort(key=lambda live: self.order.key(live.request, now))
            items[:] = begun + rest
        parts = []
        while tokens > 0 and items:
            live = items[0]
            n = min(tokens, live.request.prompt - live.prefilled)
            parts.append(PrefillPart(live, live.prefilled, n, live.prefilled + n == live.request.prompt))
            live.prefilled += n
            tokens -= n
            if parts[-1].completes:
                items.pop(0)
        return parts
