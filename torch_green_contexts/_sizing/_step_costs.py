"""What :func:`torch_green_contexts.sizing.profile_layouts` returns: the latency of a decode step
per layout, measured over batch sizes and context lengths, and a cost model fitted per layout
(``a * context/1k + b * batch + c`` microseconds, scaled so that it never predicts less than a
measured point). Plain Python: no GPU needed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Hashable, Iterable

from .._validation import check_decode_point
from ._json_input import read_json
from ._sizing_result import Latency, check_percentile

Point = tuple[int, int]  # (decode batch size, total context tokens of the batch)


def key_name(key: Hashable) -> str:
    """A layout key as JSON keeps it: ``"16"`` or ``"16+64"`` (an overlapped layout's floors)."""
    return f"{key[0]}+{key[1]}" if isinstance(key, tuple) else str(key)


def key_of(name: str) -> int | tuple[int, int]:
    if "+" in name:
        latency_floor, batch_floor = name.split("+")
        return (int(latency_floor), int(batch_floor))
    return int(name)


@dataclasses.dataclass(frozen=True)
class StepCost:
    """``a * context_tokens / 1000 + b * batch + c`` microseconds, for one layout."""

    per_kilo_token_us: float
    per_request_us: float
    fixed_us: float

    def at(self, batch: float, context_tokens: float) -> float:
        return self.per_kilo_token_us * context_tokens / 1000.0 + self.per_request_us * batch + self.fixed_us

    @classmethod
    def fit(cls, points: Iterable[tuple[float, float, float]]) -> StepCost:
        """Least squares over ``(batch, context_tokens, latency_us)``, with no negative
        coefficient, then scaled up to cover every point."""
        rows = [(b, c / 1000.0, y) for b, c, y in points]
        if not rows:
            raise ValueError("a step cost needs at least one measured point")
        terms: tuple[int, ...] = (1, 2)  # batch, context; the constant is always fitted
        coefficients = _least_squares(rows, terms)
        while any(coefficients[t] < 0 for t in terms):
            terms = tuple(t for t in terms if coefficients[t] > 0)
            coefficients = _least_squares(rows, terms)
        model = cls(coefficients[2], coefficients[1], max(coefficients[0], 0.0))
        scale = max(1.0, max(y / max(model.at(b, c * 1000.0), 1e-9) for b, c, y in rows))
        return cls(model.per_kilo_token_us * scale, model.per_request_us * scale, model.fixed_us * scale)


def _least_squares(rows: list[tuple[float, float, float]], terms: tuple[int, ...]) -> list[float]:
    """Coefficients [constant, batch, context] of a least-squares fit over the chosen terms."""
    columns = (0, *terms)
    features = [[1.0, b, c] for b, c, _ in rows]
    n = len(columns)
    matrix = [[sum(f[i] * f[j] for f in features) for j in columns] for i in columns]
    vector = [sum(f[i] * y for f, (_, _, y) in zip(features, rows)) for i in columns]
    for i in range(n):  # a tiny ridge keeps a singular system (one point, one batch size) solvable
        matrix[i][i] += 1e-9 * (1.0 + matrix[i][i])
    solution = _solve(matrix, vector)
    out = [0.0, 0.0, 0.0]
    for column, value in zip(columns, solution):
        out[column] = value
    return out


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    n = len(vector)
    a = [row[:] + [v] for row, v in zip(matrix, vector)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        if abs(a[col][col]) < 1e-300:
            continue
        for r in range(n):
            if r != col:
                factor = a[r][col] / a[col][col]
                a[r] = [x - factor * y for x, y in zip(a[r], a[col])]
    return [a[i][n] / a[i][i] if abs(a[i][i]) > 1e-300 else 0.0 for i in range(n)]


@dataclasses.dataclass(frozen=True)
class LayoutProfile:
    """Measured step latencies per layout and point, the layouts' SM counts, and settings.

    ``measured`` maps a layout key to ``{(batch, context_tokens): Latency}``; ``layouts`` maps
    it to ``(sm_count, batch_sm_count, shared_sm_count)`` as the layout had them; ``loaded``
    says which layouts were measured beside the load on their batch side.
    """

    measured: dict[Hashable, dict[Point, Latency]]
    layouts: dict[Hashable, tuple[int, int, int]]
    loaded: dict[Hashable, bool]
    settings: dict[str, Any]

    def __post_init__(self) -> None:
        if not self.measured:
            raise ValueError("a LayoutProfile needs at least one measured layout")
        for key, points in self.measured.items():
            if not points:
                raise ValueError(f"layout {key!r} has no measured point")
            if key not in self.layouts:
                raise ValueError(f"layout {key!r} has no SM counts")

    @property
    def keys(self) -> tuple[Hashable, ...]:
        return tuple(self.measured)

    def cost(self, key: Hashable, percentile: int = 99) -> StepCost:
        """The step cost model of layout ``key`` at ``percentile`` (50, 90 or 99); ValueError for
        a layout that was not profiled."""
        q = check_percentile(percentile)
        cache = self.__dict__.setdefault("_costs", {})
        if (key, q) not in cache:
            points = self.measured.get(key)
            if points is None:
                raise ValueError(f"layout {key!r} was not profiled; profiled: {list(self.measured)}")
            cache[(key, q)] = StepCost.fit((b, c, lat.at(q)) for (b, c), lat in points.items())
        cost: StepCost = cache[(key, q)]
        return cost

    def latency(self, key: Hashable, batch: float, context_tokens: float = 0, percentile: int = 99) -> float:
        """The modelled ``percentile`` latency (us) of a step of ``batch`` requests holding
        ``context_tokens`` tokens in all, on layout ``key``."""
        check_decode_point(batch, context_tokens)
        return self.cost(key, percentile).at(batch, context_tokens)

    def to_json(self, indent: int | None = 1) -> str:
        data = {"kind": "LayoutProfile", "settings": self.settings, "layouts": [
            {"key": key_name(key), "sm_counts": list(self.layouts[key]), "loaded": self.loaded.get(key, False),
             "points": [{"batch": b, "context_tokens": c, "latency_us": dataclasses.asdict(lat)}
                        for (b, c), lat in points.items()]}
            for key, points in self.measured.items()]}
        return json.dumps(data, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> LayoutProfile:
        """The profile :meth:`to_json` wrote, from that JSON text (a str; not a path)."""
        def build(data: dict[str, Any]) -> LayoutProfile:
            measured: dict[Hashable, dict[Point, Latency]] = {}
            layouts: dict[Hashable, tuple[int, int, int]] = {}
            loaded: dict[Hashable, bool] = {}
            for entry in data["layouts"]:
                key = key_of(entry["key"])
                layouts[key] = tuple(entry["sm_counts"])
                loaded[key] = bool(entry["loaded"])
                measured[key] = {(p["batch"], p["context_tokens"]): Latency(**p["latency_us"])
                                 for p in entry["points"]}
            return cls(measured, layouts, loaded, data["settings"])

        return read_json(text, "LayoutProfile", build)

    def table(self, percentile: int = 99) -> str:
        """A Markdown table: one row per layout, its SM counts and its fitted cost model."""
        q = check_percentile(percentile)
        lines = [f"p{q} step cost per layout: a us per 1k context tokens, b us per request, c us",
                 "", "| layout | latency SMs | batch SMs | shared | a | b | c |", "|---|---:|---:|---:|---:|---:|---:|"]
        for key in self.measured:
            sms, batch_sms, shared = self.layouts[key]
            cost = self.cost(key, q)
            lines.append(f"| {key_name(key)} | {sms} | {batch_sms} | {shared} | {cost.per_kilo_token_us:.1f} | "
                         f"{cost.per_request_us:.2f} | {cost.fixed_us:.0f} |")
        return "\n".join(lines)
