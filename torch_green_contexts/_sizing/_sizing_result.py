"""What :func:`torch_green_contexts.sizing.measure` returns: latency percentiles per SM count,
the plain-stream figures of the same run, the smallest count meeting a deadline, JSON, a
Markdown table and a plot. Plain Python: no GPU needed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Sequence

from .._plotting import sm_count_panels
from .._validation import as_bool, as_count, as_positive_us
from ._json_input import read_json
from ._stats import percentile

PERCENTILES = (50, 90, 99)


@dataclasses.dataclass(frozen=True)
class Latency:
    """Latency percentiles of ``fn`` in microseconds (CUDA events, device time)."""

    p50: float
    p90: float
    p99: float
    mean: float
    samples: int

    @classmethod
    def of(cls, values_us: Sequence[float]) -> Latency:
        if not values_us:
            raise ValueError("no latency samples")
        return cls(percentile(values_us, 50), percentile(values_us, 90), percentile(values_us, 99),
                   sum(values_us) / len(values_us), len(values_us))

    def at(self, q: int) -> float:
        """The ``q``-th percentile (50, 90 or 99)."""
        return float(getattr(self, f"p{check_percentile(q)}"))


@dataclasses.dataclass(frozen=True)
class SizingRow:
    """One candidate split: ``fn`` on ``sm_count`` SMs, the load on the other ``rest_sm_count``.

    ``loaded`` and ``load_rate`` are None without a load, and for the row of all SMs (no SM is
    left for the load). ``load_rate`` is load calls per second on the rest while ``fn`` ran.
    """

    sm_count: int
    rest_sm_count: int
    idle: Latency
    loaded: Latency | None
    load_rate: float | None


@dataclasses.dataclass(frozen=True)
class PlainFigures:
    """The same work on plain streams of the whole device: what sharing without partitions gives.

    ``idle``: ``fn`` alone; ``loaded``: ``fn`` beside the load on another plain stream, whose
    rate then is ``load_rate``; ``load_alone_rate``: the load alone on the whole device.
    """

    idle: Latency
    loaded: Latency | None
    load_rate: float | None
    load_alone_rate: float | None


@dataclasses.dataclass(frozen=True)
class SizingResult:
    """What :func:`measure` found: one :class:`SizingRow` per SM count, and the plain-stream
    figures of the same run. Relative figures divide by ``plain.idle`` (latency) and by
    ``plain.load_alone_rate`` (the load's rate)."""

    rows: tuple[SizingRow, ...]
    plain: PlainFigures
    device: dict[str, Any]
    settings: dict[str, Any]

    def row(self, sm_count: int) -> SizingRow:
        """The row measured for ``sm_count`` SMs; ValueError if that count was not measured."""
        count = as_count("sm_count", sm_count)
        for row in self.rows:
            if row.sm_count == count:
                return row
        raise ValueError(f"{count} SMs were not measured; measured: {[r.sm_count for r in self.rows]}")

    def has_load(self) -> bool:
        return self.plain.load_alone_rate is not None

    def smallest_meeting(self, deadline_us: float, percentile: int = 99, *,
                         under_load: bool = True) -> int | None:
        """The smallest measured SM count whose ``percentile`` latency of ``fn`` is at most
        ``deadline_us``: under the load when one was measured and ``under_load`` is true, else
        idle. None when no measured count meets the deadline. The row of all SMs has no load
        beside it, so it only qualifies when no load was measured or ``under_load`` is false.
        """
        as_positive_us("deadline_us", deadline_us)
        q = check_percentile(percentile)
        loaded = as_bool("under_load", under_load) and self.has_load()
        for row in sorted(self.rows, key=lambda r: r.sm_count):
            figures = row.loaded if loaded else row.idle
            if figures is not None and figures.at(q) <= deadline_us:
                return row.sm_count
        return None

    def relative(self, row: SizingRow) -> dict[str, float | None]:
        """``row`` (a :class:`SizingRow`, say ``result.row(16)``) against the plain-stream
        figures: latency over ``fn`` alone on the whole device (p50 and p99, idle and loaded) and
        load rate over the load alone there."""
        if not isinstance(row, SizingRow):
            raise TypeError(f"row must be a SizingRow (one of rows, or row(sm_count)), got "
                            f"{type(row).__name__} ({row!r})")
        plain = self.plain.idle

        def ratio(a: float | None, b: float | None) -> float | None:
            return None if a is None or not b else a / b

        alone = self.plain.load_alone_rate
        return {
            "idle_p50": ratio(row.idle.p50, plain.p50),
            "idle_p99": ratio(row.idle.p99, plain.p99),
            "loaded_p50": ratio(row.loaded.p50 if row.loaded else None, plain.p50),
            "loaded_p99": ratio(row.loaded.p99 if row.loaded else None, plain.p99),
            "load_rate": ratio(row.load_rate, alone),
        }

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["rows"] = [dict(dataclasses.asdict(r), relative=self.relative(r)) for r in self.rows]
        return out

    def to_json(self, indent: int | None = 1) -> str:
        """The whole result as JSON text (:meth:`from_json` reads it back)."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> SizingResult:
        """The result :meth:`to_json` wrote, from that JSON text (a str; not a path)."""
        return read_json(text, "SizingResult", cls.from_dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SizingResult:
        """The result :meth:`to_dict` wrote (its ``relative`` columns are recomputed)."""

        def latency(d: dict[str, Any] | None) -> Latency | None:
            return None if d is None else Latency(**d)

        rows = []
        for r in data["rows"]:
            idle = latency(r["idle"])
            assert idle is not None
            rows.append(SizingRow(r["sm_count"], r["rest_sm_count"], idle, latency(r["loaded"]),
                                  r["load_rate"]))
        p = data["plain"]
        plain_idle = latency(p["idle"])
        assert plain_idle is not None
        plain = PlainFigures(plain_idle, latency(p["loaded"]), p["load_rate"], p["load_alone_rate"])
        return cls(tuple(rows), plain, data["device"], data["settings"])

    def table(self) -> str:
        """The rows as a Markdown table."""
        def us(x: float | None) -> str:
            return "-" if x is None else f"{x:.0f}"

        def times(x: float | None) -> str:
            return "-" if x is None else f"{x:.2f}x"

        p = self.plain
        lines = [
            "| SMs | rest | idle p50 us | idle p99 us | loaded p50 us | loaded p99 us | "
            "loaded p99 / plain idle p99 | load rate /s | load rate / alone |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in self.rows:
            rel = self.relative(row)
            lines.append(
                f"| {row.sm_count} | {row.rest_sm_count} | {us(row.idle.p50)} | {us(row.idle.p99)} | "
                f"{us(row.loaded.p50 if row.loaded else None)} | {us(row.loaded.p99 if row.loaded else None)} | "
                f"{times(rel['loaded_p99'])} | {_rate(row.load_rate)} | {times(rel['load_rate'])} |")
        lines.append(
            f"| plain | - | {us(p.idle.p50)} | {us(p.idle.p99)} | {us(p.loaded.p50 if p.loaded else None)} | "
            f"{us(p.loaded.p99 if p.loaded else None)} | "
            f"{times(p.loaded.p99 / p.idle.p99 if p.loaded else None)} | {_rate(p.load_rate)} | "
            f"{times(p.load_rate / p.load_alone_rate if p.load_rate and p.load_alone_rate else None)} |")
        return "\n".join(lines)

    def plot(self, path: str, *, deadline_us: float | None = None) -> str:
        """Latency of ``fn`` (p50, p99; idle and under load) and the load's rate against the SM
        count, as a PNG at ``path`` (needs matplotlib). Returns ``path``."""
        with sm_count_panels(path, "SizingResult.plot") as (top, bottom):
            self._draw(top, bottom, deadline_us)
        return path

    def _draw(self, top: Any, bottom: Any, deadline_us: float | None) -> None:
        rows = sorted(self.rows, key=lambda r: r.sm_count)
        x = [r.sm_count for r in rows]
        top.plot(x, [r.idle.p50 for r in rows], "o-", color="tab:blue", label="p50, idle")
        top.plot(x, [r.idle.p99 for r in rows], "o--", color="tab:blue", label="p99, idle")
        loaded = [r for r in rows if r.loaded is not None]
        if loaded:
            lx = [r.sm_count for r in loaded]
            top.plot(lx, [r.loaded.p50 for r in loaded if r.loaded], "s-", color="tab:red",
                     label="p50, load on the rest")
            top.plot(lx, [r.loaded.p99 for r in loaded if r.loaded], "s--", color="tab:red",
                     label="p99, load on the rest")
        top.axhline(self.plain.idle.p99, color="gray", ls=":", label="p99, plain stream, idle")
        if self.plain.loaded is not None:
            top.axhline(self.plain.loaded.p99, color="black", ls=":",
                        label="p99, plain streams, load beside")
        if deadline_us is not None:
            top.axhline(deadline_us, color="tab:green", ls="-.", label=f"deadline {deadline_us:g} us")
        top.set_ylabel("latency of the step (us)")
        top.set_title(f"{self.device.get('name', 'GPU')}: the step on k SMs, the load on the rest")
        top.legend(fontsize=8)
        if loaded and self.plain.load_alone_rate:
            alone = self.plain.load_alone_rate
            bottom.plot([r.sm_count for r in loaded], [(r.load_rate or 0) / alone for r in loaded],
                        "s-", color="tab:red", label="load on the rest, beside the step")
            if self.plain.load_rate:
                bottom.axhline(self.plain.load_rate / alone, color="black", ls=":",
                               label="load on a plain stream, beside the step")
            bottom.set_ylabel("load rate / load alone on the whole GPU")
            bottom.legend(fontsize=8)


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def check_percentile(q: Any) -> int:
    if isinstance(q, bool) or q not in PERCENTILES:
        raise ValueError(f"percentile must be one of {PERCENTILES}, got {q!r}")
    return int(q)
