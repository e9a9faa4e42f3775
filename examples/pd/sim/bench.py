"""A sweep's runs on the simulated GPU: the engine's real schedulers, lanes and policies over a
calibration's costs. ``SimBench`` offers what the GPU's ``Bench`` offers a sweep (reference
costs, SLOs, the static candidates, one run of one configuration)."""

from __future__ import annotations

import random
from typing import Any, Callable

from torch_green_contexts import sizing
from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.step_policy import LayoutKey

from ..bench import cli
from ..bench.estimates import Costs, run_cap
from ..bench.layout_profiles import covering
from ..bench.metrics import summarize
from ..bench.planner import label_of, plan_static
from ..bench.policies import anchor_for, mixed_step_us, mode_policy, share_policy
from ..bench.recorder import RunRecorder
from ..bench.search import Config
from ..bench.traces import trace_for
from ..engine.admission import order_for
from ..engine.chunked import ChunkedScheduler
from ..engine.lanes import (ChunkedRunner, Lane, Lanes, LayoutSubset, OverlapRunner, PlainLanes, PolicyLanes,
                            StaticLanes)
from ..engine.overlap import OverlapScheduler
from ..engine.planning import PrefillCursor
from ..engine.request import Slo
from ..engine.serve import Requests, serve
from ..engine.steps import EngineSettings
from .calibration import CalibrationError
from .costs import LaneCosts, MixedCosts
from .device import SimClock, SimDevice
from .layouts import SimLayouts, SimTimer

OVERLAP_PREFIX = "o"
PLAIN = "plain streams"


def lane_key(name: str) -> LayoutKey | None:
    """The layout key of a calibrated lane's name (``16``, ``16/64``), or None."""
    text = name[len(OVERLAP_PREFIX):] if name.startswith(OVERLAP_PREFIX) else name
    try:
        if "/" in text:
            a, b = text.split("/")
            return (int(a), int(b))
        return int(text)
    except ValueError:
        return None


class SimBench:
    """Everything the simulated runs share, from ``calibration`` (and the policies' layout
    ``profile``, as the GPU sweep measured or read it)."""

    def __init__(self, s: cli.Settings, calibration: dict[str, Any], profile: sizing.LayoutProfile | None) -> None:
        self.s, self.calibration, self.profile = s, calibration, profile
        model = calibration["model"]
        self.total = int(calibration["device"]["sm_count"])
        self.slots, self.buckets, self.max_len = int(model["slots"]), list(model["buckets"]), int(model["max_len"])
        if s.max_len > self.max_len:
            raise CalibrationError(f"the calibration's engine has slots of {self.max_len} tokens, fewer than "
                                   f"--max-prompt + --max-output ({s.max_len}): calibrate with this workload")
        c = calibration["costs"]
        self.costs = Costs(c["decode_step_ms"] / 1e3, c["decode_batch"], c["prefill_ms"] / 1e3, c["prefill_tokens"])
        self.slo = Slo(ttft=s.ttft_slo_ms / 1e3 if s.ttft_slo_ms else s.ttft_slo_x * self.costs.prefill_s,
                       tpot=s.tpot_slo_ms / 1e3 if s.tpot_slo_ms else s.tpot_slo_x * self.costs.decode_step_s,
                       ttft_per_token=(s.ttft_slo_ms_per_token or 0.0) / 1e3)
        chunk = calibration["settings"]["chunk"]
        self.lane_costs = {name: LaneCosts.fit(lane, chunk) for name, lane in calibration["lanes"].items()}
        self.aliases = dict(calibration.get("aliases", {}))
        plain = self.lane_costs.get(PLAIN)
        if plain is None:
            raise CalibrationError(f"the calibration has no lane {PLAIN!r}: measure it with --calibrate-only")
        self.mixed = MixedCosts.of(calibration)
        self.host_us = dict(calibration["host"])
        sleep_us = calibration.get("host_sleep_us") or self.host_us.get("sleep_50us_us", s.poll_us)
        self.oversleep_s = max(0.0, (sleep_us - s.poll_us) * 1e-6)
        self.plain = PlainLanes(Lane(PLAIN, "plain:latency", "plain:batch"), lambda lane: self._device().marker())
        self.layouts = {"": self._layouts(""), OVERLAP_PREFIX: self._layouts(OVERLAP_PREFIX)}
        self.timers: list[SimTimer] = []
        self.policies: dict[tuple[str, float | str], PrefillDecodePolicy] = {}
        self.policy_sets: dict[tuple[str, float | str], LayoutSubset] = {}  # the layouts of each policy
        self._policy_layouts: dict[tuple[str, tuple[LayoutKey, ...]], LayoutSubset] = {}
        self._plans: dict[str, tuple[list[Config], dict[str, Any]]] = {}
        self.anchors: dict[str, str | None] = {}
        self.device: SimDevice | None = None
        self.last_device: SimDevice | None = None
        self.coarse: list[float] = []
        self.skip_looks = True  # a polling host moves straight to its first look after the next event
        self.record_timelines = False  # each run's device keeps its timeline (last_device.timeline())
        self.say: Callable[[str], None] = lambda text: None

    def _device(self) -> SimDevice:
        assert self.device is not None, "no simulated run in progress"
        return self.device

    def _layouts(self, prefix: str) -> SimLayouts:
        counts: dict[LayoutKey, tuple[int, int, int]] = {}
        names = list(self.lane_costs) + [a for a in self.aliases if a.startswith(prefix)]
        for name in names:
            if prefix and not name.startswith(prefix) or not prefix and name.startswith(OVERLAP_PREFIX):
                continue
            key = lane_key(name)
            if key is None:
                continue
            lane = self.lane_costs[self.aliases.get(name, name)]
            counts[key] = (lane.latency_sms, lane.batch_sms, lane.shared_sms)
        return SimLayouts(dict(sorted(counts.items(), key=lambda kv: (isinstance(kv[0], tuple), kv[0]))), prefix)

    def static_keys(self, scheduler: str) -> list[LayoutKey]:
        """Every static split the calibration can run: disjoint counts strictly between 0 and
        all SMs, or the overlapped layouts' floors."""
        if scheduler == "static-overlap":
            return [k for k in self.layouts[OVERLAP_PREFIX].keys if isinstance(k, tuple)]
        return [k for k in self.layouts[""].keys if isinstance(k, int) and 0 < k < self.total]

    def policy_layouts(self, scheduler: str, anchor: LayoutKey | None = None) -> LayoutSubset:
        """The layouts a policy chooses among: ``--layout-counts`` (the sweep's default ones) on
        disjoint layouts, or ``--overlapped`` and the two ends; and ``anchor``."""
        if scheduler.endswith("overlap"):
            wanted: list[LayoutKey] = [0, self.total, *self.s.overlapped]
            source = self.layouts[OVERLAP_PREFIX]
        else:
            wanted = [*(self.s.layout_counts if self.s.layout_counts is not None else cli.DEFAULT_COUNTS), self.total]
            source = self.layouts[""]
        if anchor is not None and anchor not in wanted:
            wanted = sorted([*wanted, anchor], key=lambda k: (isinstance(k, tuple), k))
        missing = [k for k in wanted if k not in source.keys]
        if missing:
            raise CalibrationError(f"the calibration has no lanes for the layouts {missing} that {scheduler} uses: "
                                   "calibrate with these --layout-counts / --overlapped")
        key = (scheduler, tuple(wanted))
        if key not in self._policy_layouts:
            self._policy_layouts[key] = LayoutSubset(source, wanted)
        return self._policy_layouts[key]

    def policy(self, scheduler: str, param: float | str) -> PrefillDecodePolicy:
        """The two-SLO policy of ``scheduler`` at slack share ``param`` or in mode ``param``,
        kept from run to run."""
        if (scheduler, param) not in self.policies:
            if self.profile is None:
                raise CalibrationError(f"{scheduler} needs the layout profile its policy reads: give --layout-profile "
                                       "(layout-profile.json of the sweep or calibration)")
            timer = SimTimer()
            self.timers.append(timer)
            if isinstance(param, str):
                static = "static-overlap" if scheduler.endswith("overlap") else "static"
                anchor = anchor_for(self.plan(static)[1], static, param, self.static_keys(static))
                self.anchors[f"{scheduler}, {param} mode"] = None if anchor is None else label_of(static, anchor)
                layouts = self.policy_layouts(scheduler, anchor)
                profile = covering(self.profile, self.calibration, layouts.keys,
                                   OVERLAP_PREFIX if scheduler.endswith("overlap") else "")
                priced = self.s.policy_mixed_tokens and param == "distserve"  # the P99 mode has no mixed steps
                mixed = mixed_step_us(self.calibration, self.s.policy_mixed_tokens) if priced else None
                made = mode_policy(profile, layouts, self.slo, self.s, param, anchor, mixed, timer)
            else:
                layouts = self.policy_layouts(scheduler)
                made = share_policy(self.profile, layouts, self.slo, self.s, param, timer)
            self.policies[scheduler, param], self.policy_sets[scheduler, param] = made, layouts
        return self.policies[scheduler, param]

    def plan(self, scheduler: str, order: str | None = None,
             keys: list[LayoutKey] | None = None) -> tuple[list[Config], dict[str, Any]]:
        """The static planner's choice for ``scheduler`` among ``keys`` (every split the
        calibration has), simulated once at the sweep's coarse rates for the first seed."""
        if scheduler not in self._plans:
            s = self.s
            if not self.coarse:
                raise ValueError("the coarse rates are not set: plan the static splits after choosing them")
            self._plans[scheduler] = plan_static(
                self.run, scheduler, self.static_keys(scheduler) if keys is None else keys, order or s.admission[0],
                self.coarse, s.seeds[0], s.static_candidates, s.stop_below, s.min_rates, s.max_rates, self.say)
        return self._plans[scheduler]

    def static_configs(self, scheduler: str, order: str) -> tuple[list[Config], dict[str, Any]]:
        """The static splits to run: the planner's (see :meth:`plan`)."""
        return self.plan(scheduler, order)

    def notes(self) -> dict[str, Any]:
        """What the results record of this bench's choices: the anchors of the policies' modes."""
        return {"policy_anchors": dict(self.anchors)} if self.anchors else {}

    def lanes_for(self, config: Config) -> Lanes:
        name = config.scheduler
        if name == "streams":
            return self.plain
        prefix = OVERLAP_PREFIX if name.endswith("overlap") else ""
        if name.startswith("static"):
            return StaticLanes(self.layouts[prefix], config.param, prefix)
        if name in ("pd", "pd-overlap"):
            param = self.s.slack_share if config.param is None else config.param
            return PolicyLanes(self.policy(name, param), self.policy_sets[name, param], prefix)
        raise CalibrationError(f"the simulator does not run scheduler {name!r} (its profile is not calibrated)")

    def run(self, config: Config, seed: int, rate: float,
            progress: Callable[[int, int, float], Any] | None = None) -> dict[str, Any]:
        """One simulated run of ``config`` over the trace of ``seed`` at ``rate``; its summary."""
        s = self.s
        trace = trace_for(s, rate, seed)
        cap = s.duration_cap_s or run_cap(trace, self.slo)
        aging = s.aging_ms / 1e3 if s.aging_ms else None
        order = order_for(config.order, self.slo.ttft, self.slo.ttft_per_token, aging)
        settings = EngineSettings(self.slots, self.buckets, order, self.slo)
        lanes = None if config.scheduler == "chunked" else self.lanes_for(config)  # may plan: runs of its own first
        clock = SimClock(self.oversleep_s, s.poll_us * 1e-6)
        rng = random.Random(f"{seed}/{rate:g}/{config.scheduler}/{config.name}")
        device = self.device = SimDevice(clock, self.lane_costs, self.aliases, self.mixed, self.host_us, rng,
                                         self.max_len)
        if self.record_timelines:
            device.recorded = []
        for layouts in self.layouts.values():
            layouts.attach(device)
        for timer in self.timers:
            timer.attach(device)
        source = Requests(trace)

        def wake(after: float) -> float | None:  # the next change a look could see: an end, an arrival, the cap
            moments = [t for t in (device.next_end(after), source.next_arrival, cap) if t is not None]
            return min(moments)

        clock.wake = wake if self.skip_looks else None
        scheduler: ChunkedScheduler | OverlapScheduler
        if config.scheduler == "chunked":
            device.use_budget(config.param)
            scheduler = ChunkedScheduler(ChunkedRunner(device, self.plain.lane), config.param, settings)
        else:
            assert lanes is not None
            if isinstance(config.param, str) and s.policy_mixed_tokens:  # a policy mode's mixed passes
                device.use_budget(s.policy_mixed_tokens)
            cursor = PrefillCursor(s.chunk, s.layers, s.piece_layers, order)
            scheduler = OverlapScheduler(OverlapRunner(device, lanes), cursor, s.prefill_depth, settings)
        recorder = RunRecorder(trace, progress)
        seconds, cut_off = serve(scheduler, source, recorder, clock, cap_s=cap, poll_s=s.poll_us * 1e-6)
        device.drain()
        self.last_device, self.device = device, None
        summary = summarize(recorder.log(seconds, cut_off), self.slo)
        summary["simulated"] = True
        return summary

