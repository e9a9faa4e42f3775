"""The GPU side of a sweep: the engine, its lanes (plain streams, disjoint and overlapped
layouts), the profiles, the policies, the static candidates, and one run of one configuration.
Uses the package's public API only."""

from __future__ import annotations

import itertools
import json
import os
import sys
from typing import Any, Callable

import torch

from torch_green_contexts import sizing
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.policy import SplitPolicy
from torch_green_contexts.step_policy import LayoutKey

from ..engine.admission import order_for
from ..engine.chunked import ChunkedScheduler
from ..engine.gpu import Engine, plain_lanes
from ..engine.lanes import (ChunkedRunner, Lane, Lanes, LayoutSubset, OverlapRunner, PolicyLanes, StaticLanes, key_label,
                            layout_lane)
from ..engine.overlap import OverlapScheduler
from ..engine.planning import PrefillCursor
from ..engine.request import Slo
from ..engine.serve import RealClock, Requests, serve
from ..engine.steps import EngineSettings
from ..engine.timeline import Timeline
from . import calibration, cli
from ..sim.bench import SimBench
from ..sim.calibration import load_calibration
from .calibrate import calibrate
from .layout_profiles import covering, lacking, merged
from .planner import label_of
from .policies import anchor_for, mixed_step_us, mode_policy, share_policy
from .estimates import run_cap
from .metrics import summarize
from .recorder import RunRecorder
from .search import Config
from .traces import trace_for

OVERLAP_PREFIX = "o"  # lane names of the overlapped Layouts (its end layouts share keys with the disjoint one)


def profile_points(s: cli.Settings, top: int) -> list[tuple[int, int]]:
    """(batch, context tokens) points of the layout profile, from the workload's lengths: the
    median request's context at 8, 32 and ``top`` requests, and a long one at 32."""
    median = min(s.max_len - 1, int(s.prompt_median + s.output_median / 2))
    long = min(s.max_len - 1, int(s.max_prompt * 0.75 + s.output_median))
    points = {(min(b, top), min(b, top) * median) for b in (8, 32, top)} | {(min(32, top), min(32, top) * long)}
    return sorted(points)


class Bench:
    """Everything the runs share, built once: a run of any configuration is :meth:`run`."""

    def __init__(self, s: cli.Settings, engine: Engine, total: int, counts: list[int], static_counts: list[int]) -> None:
        """``counts``: the disjoint layouts the policies choose among; ``static_counts``: every
        split the static scheduler's planner may choose (the disjoint layouts hold both)."""
        self.s, self.engine, self.total = s, engine, total
        self.policy_counts = list(counts)
        self.coarse: list[float] = []
        self.calibration_path: str | None = None
        self.plain = plain_lanes(s.device)
        engine.capture(self.plain.lane)
        self.costs = calibration.measure_costs(engine, self.plain.lane, min(32, engine.model.slots), s.context,
                                               s.max_prompt, s.chunk)
        self.slo = Slo(ttft=s.ttft_slo_ms / 1e3 if s.ttft_slo_ms else s.ttft_slo_x * self.costs.prefill_s,
                       tpot=s.tpot_slo_ms / 1e3 if s.tpot_slo_ms else s.tpot_slo_x * self.costs.decode_step_s,
                       ttft_per_token=(s.ttft_slo_ms_per_token or 0.0) / 1e3)
        self.high = torch.cuda.Stream.priority_range()[1]  # type: ignore[call-arg]
        wants = set(s.schedulers)
        self.disjoint: Layouts | None = None
        self.overlapped: Layouts | None = None
        self.profile: sizing.LayoutProfile | None = None
        self.pd: dict[tuple[str, float | str], PrefillDecodePolicy] = {}  # (scheduler, slack share or mode) -> policy
        self.pd_layouts: dict[tuple[str, float | str], LayoutSubset] = {}  # the layouts of a mode's policy
        self.anchors: dict[str, str | None] = {}
        self._planner: SimBench | None = None
        self.split_policy: SplitPolicy | None = None
        if wants & {"static", "pd", "policy"}:
            self.disjoint = Layouts(sorted(set(counts) | set(static_counts)), device_id=s.device,
                                    latency_priority=self.high, ordering="per_role")
            for k in self.disjoint.keys:
                engine.capture(layout_lane(self.disjoint[k]))
        if wants & {"static-overlap", "pd-overlap"}:
            self.overlapped = Layouts([0, total], overlapped=list(s.overlapped), device_id=s.device,
                                      latency_priority=self.high, ordering="per_role")
            for k in self.overlapped.keys:
                engine.capture(layout_lane(self.overlapped[k], OVERLAP_PREFIX))

    def close(self) -> None:
        self.engine.close()
        for layouts in (self.disjoint, self.overlapped):
            if layouts is not None:
                layouts.close()

    def profile_layouts(self) -> dict[str, Any]:
        """Measure (or read) the layout profile and make the policies; returns what the results
        file records of it."""
        s = self.s
        made = [name for name, layouts in (("pd", self.disjoint), ("pd-overlap", self.overlapped)) if layouts is not None]
        if not made:
            return {}
        policies = [name for name in made if name in s.schedulers]
        if s.layout_profile:
            with open(s.layout_profile) as f:
                self.profile = sizing.LayoutProfile.from_json(f.read())
            problem = lacking(self.profile, [k for name in policies for k in self.policy_layouts(name).keys],
                              s.layout_profile)
            if problem:
                raise SystemExit(problem)
        else:
            points = profile_points(s, self.engine.buckets[-1])
            load = self.engine.load_piece(s.chunk, s.piece_layers)
            profiles = [sizing.profile_layouts(calibration.layout_steps(self.engine), points, self.policy_layouts(name),
                                               load=load, rounds=s.profile_rounds, samples=s.profile_samples, graph=True,
                                               progress=not s.quiet, seed=s.seeds[0]) for name in made]
            self.profile = profiles[0] if len(profiles) == 1 else merged(*profiles)
        with open(os.path.join(s.out, "layout-profile.json"), "w") as f:
            f.write(self.profile.to_json())
        print(self.profile.table())
        for name in policies:
            for _, share in cli.policy_shares(s):
                self.pd[name, share] = share_policy(self.profile, self.policy_layouts(name), self.slo, s, share)
        return {"layout_profile": {"keys": [str(k) for k in self.profile.keys],
                                   "seconds": self.profile.settings.get("seconds")}}

    def calibration(self, samples: int = 8) -> dict[str, Any]:
        """The simulator's measured calibration on every lane of this bench (the overlapped
        layouts' end lanes are the disjoint ones' ends, measured once)."""
        lanes: dict[str, tuple[Lane, dict[str, int]]] = {"plain streams": (self.plain.lane, {
            "latency_sms": self.total, "batch_sms": self.total, "shared_sms": self.total})}
        aliases = {}
        made = [(layouts, prefix) for layouts, prefix in ((self.disjoint, ""), (self.overlapped, OVERLAP_PREFIX))
                if layouts is not None]
        for layouts, prefix in made:
            for key in layouts.keys:
                layout = layouts[key]
                lane = layout_lane(layout, prefix)
                if prefix and not isinstance(key, tuple) and self.disjoint is not None and key in self.disjoint.keys:
                    aliases[lane.key] = key_label(key)
                    continue
                lanes[lane.key] = (lane, {"latency_sms": layout.sm_count, "batch_sms": layout.batch_sm_count,
                                          "shared_sms": layout.shared_sm_count})
        switch = None
        if self.disjoint is not None and len(self.disjoint.keys) > 1:
            a, b = self.disjoint.keys[:2]
            flip = itertools.cycle((a, b))

            def switch() -> None:
                self.disjoint.switch(next(flip))  # type: ignore[union-attr]

        s = self.s
        measured = calibrate(self.engine, lanes, self.plain.lane, s.budgets, s.chunk, s.piece_layers, switch, samples,
                             say=lambda text: print(text, file=sys.stderr) if not s.quiet else None)
        return {**measured, "aliases": aliases}

    def make_split_policy(self) -> None:
        """The TPOT-only SplitPolicy over the disjoint layouts, from its own profile."""
        s, disjoint = self.s, self.policy_layouts("policy")
        if s.profile:
            with open(s.profile) as f:
                profile = sizing.LatencyProfile.from_json(f.read())
        else:
            measured = [k for k in disjoint.counts if k > 0]
            profile = sizing.profile(calibration.profile_steps(self.engine, s.context), self.engine.buckets,
                                     load=self.engine.load_piece(s.chunk, s.piece_layers), counts=measured,
                                     rounds=s.profile_rounds, samples=s.profile_samples, graph=True,
                                     progress=not s.quiet, device_id=s.device, seed=s.seeds[0])
        with open(os.path.join(s.out, "profile.json"), "w") as f:
            f.write(profile.to_json())
        self.split_policy = SplitPolicy(profile, disjoint, slo_us=self.slo.tpot * 1e6, percentile=99,
                                        ordering="per_role", headroom=s.policy_headroom)

    def planner(self) -> SimBench:
        """The simulated GPU of this bench's calibration, which plans the static splits."""
        if self._planner is None:
            if self.calibration_path is None:
                raise ValueError("the static splits are planned from the calibration: measure it first")
            self._planner = SimBench(self.s, load_calibration(self.calibration_path), self.profile)
            self._planner.coarse = self.coarse
            if not self.s.quiet:  # the planner's predictions in the sweep's log
                self._planner.say = lambda text: print(text, file=sys.stderr, flush=True)
        return self._planner

    def plan(self, scheduler: str, order: str | None = None) -> tuple[list[Config], dict[str, Any]]:
        """The planner's static splits of ``scheduler`` among those this bench has, simulated once."""
        planner = self.planner()
        keys = [k for k in planner.static_keys(scheduler) if k in self.layouts(scheduler).keys]
        return planner.plan(scheduler, order, keys)

    def static_configs(self, scheduler: str, order: str) -> tuple[list[Config], dict[str, Any]]:
        """The static splits to run (disjoint or overlapped): the planner's, from this bench's
        calibration simulated over every split this bench has."""
        return self.plan(scheduler, order)

    def mode_policy(self, scheduler: str, mode: str) -> PrefillDecodePolicy:
        """``scheduler``'s policy in ``mode`` (made once, kept from run to run): anchored at the
        planned best static split among its layouts, its mixed passes captured on the layout with
        every SM to decode."""
        if (scheduler, mode) not in self.pd:
            assert self.profile is not None
            prefix = OVERLAP_PREFIX if scheduler.endswith("overlap") else ""
            static = "static-overlap" if prefix else "static"
            planned = [k for k in self.planner().static_keys(static) if k in self.layouts(scheduler).keys]
            anchor = anchor_for(self.plan(static)[1], static, mode, planned)
            self.anchors[f"{scheduler}, {mode} mode"] = None if anchor is None else label_of(static, anchor)
            layouts = self.policy_layouts(scheduler, anchor)
            profile = covering(self.profile, self.planner().calibration, layouts.keys, prefix)
            mixed = None
            if self.s.policy_mixed_tokens and mode == "distserve":  # the P99 mode has no mixed steps
                mixed = mixed_step_us(self.planner().calibration, self.s.policy_mixed_tokens)
                self.engine.capture_mixed(layout_lane(layouts[self.total], prefix), self.s.policy_mixed_tokens)
            self.pd[scheduler, mode] = mode_policy(profile, layouts, self.slo, self.s, mode, anchor, mixed)
            self.pd_layouts[scheduler, mode] = layouts
        return self.pd[scheduler, mode]

    def notes(self) -> dict[str, Any]:
        """What the results record of this bench's choices: the anchors of the policies' modes."""
        return {"policy_anchors": dict(self.anchors)} if self.anchors else {}

    def layouts(self, scheduler: str) -> Layouts:
        """The layouts ``scheduler`` runs on: the overlapped ones or the disjoint ones."""
        layouts = self.overlapped if scheduler.endswith("overlap") else self.disjoint
        if layouts is None:
            raise ValueError(f"no layouts were made for scheduler {scheduler!r}")
        return layouts

    def policy_layouts(self, scheduler: str, anchor: LayoutKey | None = None) -> LayoutSubset:
        """The layouts a policy chooses among: the overlapped ones, or the disjoint ones of
        ``--layout-counts`` (not every split the static planner may choose); and ``anchor``."""
        layouts = self.layouts(scheduler)
        keys = list(layouts.keys if scheduler.endswith("overlap") else self.policy_counts)
        if anchor is not None and anchor not in keys:
            keys = sorted([*keys, anchor], key=lambda k: (isinstance(k, tuple), k))
        return LayoutSubset(layouts, keys)

    def lanes_for(self, config: Config) -> Lanes:
        name = config.scheduler
        if name == "streams":
            return self.plain
        prefix = OVERLAP_PREFIX if name.endswith("overlap") else ""
        if name.startswith("static"):
            return StaticLanes(self.layouts(name), config.param, prefix)
        if name == "policy":
            if self.split_policy is None:
                raise ValueError("the split policy was not made (make_split_policy)")
            return PolicyLanes(self.split_policy, self.policy_layouts(name))
        if name in ("pd", "pd-overlap") and isinstance(config.param, str):
            policy = self.mode_policy(name, config.param)
            return PolicyLanes(policy, self.pd_layouts[name, config.param], prefix)
        share = self.s.slack_share if config.param is None else config.param
        if name in ("pd", "pd-overlap"):
            return PolicyLanes(self.pd[name, share], self.policy_layouts(name), prefix)
        raise ValueError(f"no lanes for scheduler {name!r}")

    def run(self, config: Config, seed: int, rate: float, progress: Callable[[int, int, float], Any] | None = None) -> dict[str, Any]:
        """One run of ``config`` over the trace of ``seed`` at ``rate``; its summary."""
        s, engine = self.s, self.engine
        trace = trace_for(s, rate, seed)
        cap = s.duration_cap_s or run_cap(trace, self.slo)
        aging = s.aging_ms / 1e3 if s.aging_ms else None
        order = order_for(config.order, self.slo.ttft, self.slo.ttft_per_token, aging)
        settings = EngineSettings(engine.model.slots, engine.buckets, order, self.slo)
        engine.reset()
        scheduler: ChunkedScheduler | OverlapScheduler
        if config.scheduler == "chunked":
            engine.capture_mixed(self.plain.lane, config.param)
            engine.warm_up([self.plain.lane], s.chunk, s.piece_layers)
            scheduler = ChunkedScheduler(ChunkedRunner(engine, self.plain.lane), config.param, settings)
        else:
            lanes = self.lanes_for(config)
            engine.warm_up(lanes.all(), s.chunk, s.piece_layers)
            cursor = PrefillCursor(s.chunk, s.layers, s.piece_layers, order)
            scheduler = OverlapScheduler(OverlapRunner(engine, lanes), cursor, s.prefill_depth, settings)
        recorder = RunRecorder(trace, progress)
        if s.trace_runs:
            engine.timeline = Timeline(self.plain.lane.latency)
        seconds, cut_off = serve(scheduler, Requests(trace), recorder, RealClock(), cap_s=cap, poll_s=s.poll_us * 1e-6)
        summary = summarize(recorder.log(seconds, cut_off), self.slo)
        if config.scheduler == "chunked":
            summary["mixed_iterations"] = dict(engine.mixed_counts)
        if engine.timeline is not None:
            self.write_timeline(config, seed, rate, engine.timeline.read(), summary)
            engine.timeline = None
        engine.reset()
        return summary

    def write_timeline(self, config: Config, seed: int, rate: float, works: list[dict[str, Any]],
                       summary: dict[str, Any]) -> None:
        """The run's device timeline, as --trace-runs asks, in --out/timelines/."""
        folder = os.path.join(self.s.out, "timelines")
        os.makedirs(folder, exist_ok=True)
        name = f"{config.scheduler}-{config.name}-seed{seed}-{rate:g}".replace(" ", "").replace(",", "-").replace("/", "_")
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump({"scheduler": config.scheduler, "config": config.name, "param": config.param, "seed": seed,
                       "rate": rate, "summary": summary, "works": works}, f)
