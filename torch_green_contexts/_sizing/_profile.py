"""What :func:`torch_green_contexts.sizing.profile` returns: one sizing result per value of a
workload parameter (say the decode batch size), read conservatively between them. Plain
Python: no GPU needed."""

from __future__ import annotations

import bisect
import dataclasses
import json
from typing import Any

from .._plotting import pyplot, sm_count_panels
from .._validation import as_bool, as_positive_us, check_non_negative
from ._json_input import read_json
from ._sizing_result import SizingResult, check_percentile


@dataclasses.dataclass(frozen=True)
class LatencyProfile:
    """Latency of a step against its SM count, for each measured value of a parameter.

    ``entries`` holds ``(param, SizingResult)`` pairs in ascending order of the parameter. A
    parameter that was not measured is read at the next larger measured one (a larger batch
    is never faster), and one above the largest has no figure (None): the profile never
    guesses below what was measured. Parameters are sizes: finite numbers of 0 or more.
    """

    entries: tuple[tuple[float, SizingResult], ...]
    settings: dict[str, Any]

    def __post_init__(self) -> None:
        params = [p for p, _ in self.entries]
        if not params:
            raise ValueError("a LatencyProfile needs at least one measured parameter")
        for p in params:
            _check_param(p)
        if params != sorted(set(params)):
            raise ValueError(f"a LatencyProfile's parameters must be unique and ascending, got {params}")

    @property
    def params(self) -> tuple[float, ...]:
        """The measured parameters, ascending."""
        return tuple(p for p, _ in self.entries)

    @property
    def counts(self) -> tuple[int, ...]:
        """The SM counts measured for every parameter, ascending."""
        common = set.intersection(*({r.sm_count for r in result.rows} for _, result in self.entries))
        return tuple(sorted(common))

    def result(self, p: float) -> SizingResult:
        """The :class:`SizingResult` measured at ``p`` exactly; ValueError for any other value."""
        _check_param(p)
        for param, result in self.entries:
            if param == p:
                return result
        raise ValueError(f"the parameter {p!r} was not measured; measured: {list(self.params)}")

    def read_at(self, p: float) -> float | None:
        """The measured parameter that stands for ``p``: the smallest one at or above it, or None
        when ``p`` is above every measured one."""
        _check_param(p)
        params = self.params
        i = bisect.bisect_left(params, p)
        return None if i == len(params) else params[i]

    def latency(self, p: float, sm_count: int, percentile: int = 99, under_load: bool = True) -> float | None:
        """The ``percentile`` latency (us) of the step for ``p`` on ``sm_count`` SMs, under the
        load when one was measured and ``under_load`` is true, else idle; read at
        :meth:`read_at` ``(p)``. None above the largest measured parameter, and under load for
        the row of all SMs (nothing is left for the load there). ValueError for an SM count that
        was not measured."""
        q = check_percentile(percentile)
        loaded = as_bool("under_load", under_load)
        at = self.read_at(p)
        if at is None:
            return None
        result = self.result(at)
        row = result.row(sm_count)
        figures = row.loaded if loaded and result.has_load() else row.idle
        return None if figures is None else figures.at(q)

    def smallest_meeting(self, p: float, deadline_us: float, percentile: int = 99, *,
                         under_load: bool = True) -> int | None:
        """The smallest measured SM count whose ``percentile`` latency for ``p`` is at most
        ``deadline_us`` (as :meth:`SizingResult.smallest_meeting`, read at :meth:`read_at`).
        None when no count meets it, or when ``p`` is above every measured parameter."""
        as_positive_us("deadline_us", deadline_us)
        check_percentile(percentile)
        as_bool("under_load", under_load)
        at = self.read_at(p)
        if at is None:
            return None
        return self.result(at).smallest_meeting(deadline_us, percentile, under_load=under_load)

    def to_dict(self) -> dict[str, Any]:
        return {"params": list(self.params), "settings": self.settings,
                "results": [result.to_dict() for _, result in self.entries]}

    def to_json(self, indent: int | None = 1) -> str:
        """The whole profile as JSON text (:meth:`from_json` reads it back)."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> LatencyProfile:
        """The profile :meth:`to_json` wrote, from that JSON text (a str; not a path)."""
        def build(data: dict[str, Any]) -> LatencyProfile:
            results = [SizingResult.from_dict(r) for r in data["results"]]
            if len(results) != len(data["params"]):
                raise ValueError("a profile's JSON needs one result per parameter")
            return cls(tuple(zip(data["params"], results)), data["settings"])

        return read_json(text, "LatencyProfile", build)

    def table(self, percentile: int = 99) -> str:
        """A Markdown table: one row per SM count, one column per parameter, each cell the
        ``percentile`` latency (us) under the load (idle for the row of all SMs, marked ``*``)."""
        q = check_percentile(percentile)
        head = "| SMs | " + " | ".join(f"p={p:g}" for p in self.params) + " |"
        lines = [f"p{q} latency (us) of the step under the load on the rest (* idle: no SM left for the load)",
                 "", head, "|---:|" + "---:|" * len(self.entries)]
        for k in self.counts:
            cells = []
            for p in self.params:
                loaded = self.latency(p, k, q)
                cells.append(f"{loaded:.0f}" if loaded is not None else f"{self.latency(p, k, q, False):.0f}*")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def plot(self, path: str, *, deadline_us: float | None = None, percentile: int = 99) -> str:
        """The ``percentile`` latency under load against the SM count, one curve per parameter,
        and the load's rate beside it, as a PNG at ``path`` (needs matplotlib). Returns ``path``."""
        q = check_percentile(percentile)
        with sm_count_panels(path, "LatencyProfile.plot") as (top, bottom):
            self._draw(top, bottom, q, deadline_us)
        return path

    def _draw(self, top: Any, bottom: Any, q: int, deadline_us: float | None) -> None:
        colors = pyplot("LatencyProfile.plot").get_cmap("viridis")
        for i, (p, result) in enumerate(self.entries):
            color = colors(i / max(1, len(self.entries) - 1))
            loaded = result.has_load()
            rows = sorted((r for r in result.rows if (r.loaded if loaded else r.idle) is not None),
                          key=lambda r: r.sm_count)
            top.plot([r.sm_count for r in rows], [(r.loaded if loaded else r.idle).at(q)  # type: ignore[union-attr]
                                                  for r in rows], "o-", color=color, label=f"p={p:g}")
            alone = result.plain.load_alone_rate
            rated = [r for r in rows if r.load_rate is not None]
            if alone and rated:
                bottom.plot([r.sm_count for r in rated], [(r.load_rate or 0) / alone for r in rated],
                            "s-", color=color, label=f"beside p={p:g}")
        if deadline_us is not None:
            top.axhline(deadline_us, color="tab:red", ls="-.", label=f"deadline {deadline_us:g} us")
        top.set_ylabel(f"p{q} latency of the step (us)")
        top.set_title(f"{self.entries[0][1].device.get('name', 'GPU')}: the step on k SMs, the load on the rest")
        top.legend(fontsize=8, ncol=2)
        bottom.set_ylabel("load rate / load alone on the whole GPU")
        if bottom.lines:
            bottom.legend(fontsize=8, ncol=2)


def _check_param(p: Any) -> None:
    check_non_negative("p", p, "the profile's parameter, a size such as the decode batch size")
