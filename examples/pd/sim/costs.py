"""What each kind of work costs the simulated device, fitted from a calibration: per lane, a
decode step over its bucket and context tokens and a prefill piece over its tokens and attention
pairs, each alone and beside the other side's work; chunked prefill's mixed iterations over
their token bucket, decode context and attention pairs. Each model is fitted to the medians, and
the measured samples over their median give the spread a simulated step draws from. Plain
Python."""

from __future__ import annotations

import dataclasses
import random
import statistics
from typing import Any, Sequence

import numpy

from .calibration import CalibrationError


def fit_nonnegative(rows: Sequence[tuple[Sequence[float], float]]) -> list[float]:
    """Least squares ``y ~ sum(c_i * x_i)`` over ``rows`` of (x, y), with every coefficient 0
    or more (a term that would come out negative is dropped and the rest refitted)."""
    x = numpy.array([list(features) for features, _ in rows], dtype=float)
    y = numpy.array([value for _, value in rows], dtype=float)
    active = list(range(x.shape[1]))
    while True:
        solution = numpy.linalg.lstsq(x[:, active], y, rcond=None)[0]
        if (solution >= 0).all() or len(active) == 1:
            coefficients = [0.0] * x.shape[1]
            for i, c in zip(active, solution):
                coefficients[i] = max(0.0, float(c))
            return coefficients
        del active[int(numpy.argmin(solution))]


@dataclasses.dataclass(frozen=True)
class Spread:
    """Measured samples over their point's median: a simulated step's duration is its model's
    median times one of them."""

    ratios: tuple[float, ...]

    @classmethod
    def of(cls, groups: Sequence[Sequence[float]]) -> Spread:
        ratios = [v / statistics.median(g) for g in groups if g for v in g]
        return cls(tuple(sorted(ratios)) or (1.0,))

    def draw(self, rng: random.Random) -> float:
        return self.ratios[rng.randrange(len(self.ratios))]


@dataclasses.dataclass(frozen=True)
class Linear:
    """``sum(c_i * x_i)`` microseconds over named features."""

    names: tuple[str, ...]
    coefficients: tuple[float, ...]

    def at(self, **features: float) -> float:
        return sum(c * features[n] for n, c in zip(self.names, self.coefficients))

    @classmethod
    def fit(cls, names: tuple[str, ...], points: Sequence[tuple[dict[str, float], float]]) -> Linear:
        rows = [([f[n] for n in names], y) for f, y in points]
        return cls(names, tuple(fit_nonnegative(rows)))


@dataclasses.dataclass(frozen=True)
class PieceShares:
    """The share of a decode step's slowdown beside a whole chunk that a running piece of fewer
    prompt tokens causes, interpolated between the measured sizes (the smallest's share below
    them, all of it from a chunk up)."""

    tokens: tuple[int, ...]
    shares: tuple[float, ...]

    def at(self, tokens: int) -> float:
        xs, ys = self.tokens, self.shares
        if tokens <= xs[0]:
            return ys[0]
        if tokens >= xs[-1]:
            return ys[-1]
        i = next(j for j, x in enumerate(xs) if x >= tokens)
        return ys[i - 1] + (ys[i] - ys[i - 1]) * (tokens - xs[i - 1]) / (xs[i] - xs[i - 1])

    @classmethod
    def fit(cls, decode: Sequence[dict[str, Any]], beside: Sequence[dict[str, Any]], chunk: int) -> PieceShares | None:
        """From a lane's decode points (idle and beside a chunk of ``chunk`` tokens) and its
        steps beside smaller pieces (None when it has none)."""
        points = {(p["bucket"], p["context_tokens"], p.get("longest")): p for p in decode}
        by_tokens: dict[int, list[float]] = {}
        for b in beside:
            p = points.get((b["bucket"], b["context_tokens"], b.get("longest")))
            if p is None or b["piece_tokens"] >= chunk:
                continue
            idle = statistics.median(p["idle_us"])
            whole = statistics.median(p["loaded_us"]) - idle
            if whole > 0:
                share = (statistics.median(b["loaded_us"]) - idle) / whole
                by_tokens.setdefault(b["piece_tokens"], []).append(min(1.0, max(0.0, share)))
        if not by_tokens:
            return None
        tokens = sorted(by_tokens)
        return cls((*tokens, chunk), (*(statistics.median(by_tokens[t]) for t in tokens), 1.0))


DECODE_FEATURES = ("one", "rows", "kilo_tokens", "kilo_longest_rows")


def decode_features(bucket: int, context_tokens: int, longest: int | None) -> dict[str, float]:
    """A decode step's features: its rows, their context, and the context the rows would hold
    were each as long as the longest (``longest`` None: rows of one length, the two equal; never
    less than the context, which counts the one token a padding row reads)."""
    padded = bucket * longest if longest is not None else context_tokens
    return {"one": 1.0, "rows": float(bucket), "kilo_tokens": context_tokens / 1000.0,
            "kilo_longest_rows": max(padded, context_tokens) / 1000.0}


@dataclasses.dataclass(frozen=True)
class LaneCosts:
    """One lane's decode step and prefill piece (per layer), each alone (``idle``) and beside
    the other side's work (``loaded``), in microseconds, with their spreads."""

    latency_sms: int
    batch_sms: int
    shared_sms: int
    decode_idle: Linear
    decode_loaded: Linear
    prefill_idle: Linear
    prefill_loaded: Linear
    decode_spread: Spread
    prefill_spread: Spread
    piece_shares: PieceShares | None = None  # decode beside pieces smaller than a chunk, where measured

    def decode_us(self, bucket: int, context_tokens: int, longest: int | None = None) -> tuple[float, float]:
        """A decode step of ``bucket`` rows holding ``context_tokens`` in all, its longest row
        ``longest`` tokens (None: rows of one length)."""
        f = decode_features(bucket, context_tokens, longest)
        return self.decode_idle.at(**f), self.decode_loaded.at(**f)

    def prefill_us(self, tokens: int, pairs: int, layers: int) -> tuple[float, float]:
        f = {"one": 1.0, "tokens": float(tokens), "mega_pairs": pairs / 1e6}
        return layers * self.prefill_idle.at(**f), layers * self.prefill_loaded.at(**f)

    def loaded_share(self, piece_tokens: int | None) -> float:
        """The share of the slowdown beside a whole chunk that a decode step takes beside a
        running piece of ``piece_tokens`` (None: unknown, all of it)."""
        return 1.0 if self.piece_shares is None or piece_tokens is None else self.piece_shares.at(piece_tokens)

    @classmethod
    def fit(cls, lane: dict[str, Any], chunk: int | None = None) -> LaneCosts:
        """``chunk``: the prompt tokens of the piece the loaded figures were timed beside (None:
        a decode step's slowdown is taken as that beside a chunk, whatever the piece)."""
        decode, prefill = lane["decode"], lane["prefill"]

        # Only rows of uneven lengths tell the longest row's share of a step from the total's.
        uneven = any(p.get("longest", 0) * p["bucket"] > p["context_tokens"] for p in decode)
        names = DECODE_FEATURES if uneven else DECODE_FEATURES[:3]

        def decode_fit(state: str) -> Linear:
            return Linear.fit(names, [(decode_features(p["bucket"], p["context_tokens"], p.get("longest")),
                                       statistics.median(p[state])) for p in decode])

        def prefill_fit(state: str) -> Linear:
            return Linear.fit(("one", "tokens", "mega_pairs"), [
                ({"one": 1.0, "tokens": float(p["tokens"]), "mega_pairs": p["pairs"] / 1e6},
                 statistics.median(p[state]) / p["layers"]) for p in prefill])

        return cls(lane["latency_sms"], lane["batch_sms"], lane["shared_sms"], decode_fit("idle_us"),
                   decode_fit("loaded_us"), prefill_fit("idle_us"), prefill_fit("loaded_us"),
                   Spread.of([p[s] for p in decode for s in ("idle_us", "loaded_us")]),
                   Spread.of([p[s] for p in prefill for s in ("idle_us", "loaded_us")]),
                   PieceShares.fit(decode, lane.get("decode_beside_pieces", ()), chunk) if chunk else None)


@dataclasses.dataclass(frozen=True)
class MixedCosts:
    """Chunked prefill's mixed iteration: a cost per prompt-token bucket (interpolated between
    the measured ones, extended along the last segment), plus the decode rows' context and the
    prompt parts' attention beyond one part from the slot's start."""

    tokens: tuple[int, ...]
    base_us: tuple[float, ...]
    per_kilo_context_us: float
    per_mega_pair_us: float
    spread: Spread

    def us(self, bucket: int, context_tokens: int, pairs: int) -> float:
        xs, ys = self.tokens, self.base_us
        if len(xs) == 1:
            base = ys[0] * bucket / xs[0]
        else:
            i = max(1, min(len(xs) - 1, next((j for j, x in enumerate(xs) if x >= bucket), len(xs) - 1)))
            base = ys[i - 1] + (ys[i] - ys[i - 1]) * (bucket - xs[i - 1]) / (xs[i] - xs[i - 1])
        extra_pairs = max(0, pairs - bucket * (bucket + 1) // 2)
        return max(0.0, base) + self.per_kilo_context_us * context_tokens / 1000.0 + self.per_mega_pair_us * extra_pairs / 1e6

    @classmethod
    def of(cls, calibration: dict[str, Any]) -> MixedCosts | None:
        """The mixed iterations of a calibration (None when it has none), their attention beyond
        one part from a slot's start priced from the iterations timed deep in a prompt, or where
        the calibration has none, as the plain lane's prefill prices it."""
        if not calibration.get("mixed"):
            return None
        plain = LaneCosts.fit(calibration["lanes"]["plain streams"])
        per_layer = plain.prefill_idle.coefficients[plain.prefill_idle.names.index("mega_pairs")]
        return cls.fit(calibration["mixed"], per_layer * calibration["model"]["layers"])

    @classmethod
    def fit(cls, entries: list[dict[str, Any]], per_mega_pair_us: float) -> MixedCosts:
        """``per_mega_pair_us``: the price of attention beyond one part from a slot's start where
        ``entries`` hold no iteration deep in a prompt."""
        if not entries:
            raise CalibrationError("the calibration has no mixed iterations (chunked prefill): it was measured "
                                   "without flash attention; calibrate with --attention flash")
        shallow = [e for e in entries if not e.get("start")]
        deep = [e for e in entries if e.get("start")]
        if deep:
            per_mega_pair_us = deep_pair_price(shallow, deep)
        by_tokens: dict[int, list[tuple[float, float]]] = {}
        for e in shallow:
            by_tokens.setdefault(e["prompt_tokens"], []).append((e["context_tokens"], statistics.median(e["us"])))
        slopes = []
        for points in by_tokens.values():
            (c0, y0), (c1, y1) = min(points), max(points)
            if c1 > c0:
                slopes.append((y1 - y0) / (c1 - c0) * 1000.0)
        per_kilo = max(0.0, statistics.median(slopes)) if slopes else 0.0
        tokens = tuple(sorted(by_tokens))
        base = tuple(statistics.fmean(y - per_kilo * c / 1000.0 for c, y in by_tokens[t]) for t in tokens)
        return cls(tokens, base, per_kilo, per_mega_pair_us, Spread.of([e["us"] for e in entries]))


def deep_pair_price(shallow: Sequence[dict[str, Any]], deep: Sequence[dict[str, Any]]) -> float:
    """Microseconds per million query-key pairs beyond a part from its slot's start: the median
    over iterations timed deep in a prompt of what each cost beyond the same prompt rows and
    decode rows from the start, over the pairs it added."""
    base = {(e["prompt_tokens"], e["decode_rows"]): e for e in shallow}
    prices = []
    for e in deep:
        start = base.get((e["prompt_tokens"], e["decode_rows"]))
        if start is not None and e["pairs"] > start["pairs"]:
            extra = statistics.median(e["us"]) - statistics.median(start["us"])
            prices.append(extra / ((e["pairs"] - start["pairs"]) / 1e6))
    if not prices:
        raise CalibrationError("the calibration's mixed iterations deep in a prompt have no iteration of the same "
                               "prompt and decode rows from the prompt's start to compare with: calibrate again")
    return max(0.0, float(statistics.median(prices)))
