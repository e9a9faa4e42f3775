"""The GPU side of a sweep: the engine, its lanes (plain streams, disjoint and overlapped
layouts), the profiles, the policies, the static candidates, and one run of one configuration.
Uses the package's public API only."""

from __future__ import annotations

import os
from typing import Any, Callable

import torch

from torch_green_contexts import sizing
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.pd_policy import PrefillDecodePolicy

from . import cli
from .admission import order_for
from .engine import Engine, RealClock
from .estimates import run_cap
from .lanes import ChunkedRunner, OverlapRunner, PlainLanes, PolicyLanes, StaticLanes, TwoSloLanes, layout_lane
from .loops import LoopSettings, run_chunked, run_overlap
from .metrics import TARGET_ATTAINMENT, Slo, summarize
from .planning import PrefillCursor, SplitOption, bucket_reached, static_candidates
from .search import Config
from .workload import Request, make_trace, mean_lengths, trace_for

OVERLAP_PREFIX = "o"  # lane names of the overlapped Layouts (its end layouts share keys with the disjoint one)


def lengths_of(s: cli.Settings, seed: int) -> list[Request]:
    """The first --requests requests of a seed's trace (at 1 request/s): its lengths, for
    estimates and the results file."""
    return make_trace(s.requests, 1.0, seed=seed, prompts=s.prompts, outputs=s.outputs)


def profile_points(s: cli.Settings, top: int) -> list[tuple[int, int]]:
    """(batch, context tokens) points of the layout profile, from the workload's lengths: the
    median request's context at 8, 32 and ``top`` requests, and a long one at 32."""
    median = min(s.max_len - 1, int(s.prompt_median + s.output_median / 2))
    long = min(s.max_len - 1, int(s.max_prompt * 0.75 + s.output_median))
    points = {(min(b, top), min(b, top) * median) for b in (8, 32, top)} | {(min(32, top), min(32, top) * long)}
    return sorted(points)


def merged(a: sizing.LayoutProfile, b: sizing.LayoutProfile) -> sizing.LayoutProfile:
    """One profile of the layouts of both (``a``'s figures where both have a layout)."""
    return sizing.LayoutProfile({**b.measured, **a.measured}, {**b.layouts, **a.layouts}, {**b.loaded, **a.loaded},
                                {"parts": [a.settings, b.settings]})


class Bench:
    """Everything the runs share, built once: a run of any configuration is :meth:`run`."""

    def __init__(self, s: cli.Settings, engine: Engine, total: int, counts: list[int]) -> None:
        self.s, self.engine, self.total = s, engine, total
        self.plain = PlainLanes(s.device)
        engine.capture(self.plain.lane)
        self.costs = engine.measure_costs(self.plain.lane, min(32, engine.model.slots), s.context, s.max_prompt, s.chunk)
        self.slo = Slo(ttft=s.ttft_slo_ms / 1e3 if s.ttft_slo_ms else s.ttft_slo_x * self.costs.prefill_s,
                       tpot=s.tpot_slo_ms / 1e3 if s.tpot_slo_ms else s.tpot_slo_x * self.costs.decode_step_s,
                       ttft_per_token=(s.ttft_slo_ms_per_token or 0.0) / 1e3)
        self.high = torch.cuda.Stream.priority_range()[1]  # type: ignore[call-arg]
        wants = set(s.schedulers)
        self.disjoint = self.overlapped = None
        self.profile: sizing.LayoutProfile | None = None
        self.pd: dict[tuple[str, float], Any] = {}  # (scheduler, slack_share) -> its policy
        self.split_policy = None
        if wants & {"static", "pd", "policy"}:
            self.disjoint = Layouts(counts, device_id=s.device, latency_priority=self.high, ordering="per_role")
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
        s, parts = self.s, [x for x in (self.disjoint, self.overlapped) if x is not None]
        if not parts:
            return {}
        if s.layout_profile:
            with open(s.layout_profile) as f:
                self.profile = sizing.LayoutProfile.from_json(f.read())
        else:
            points = profile_points(s, self.engine.buckets[-1])
            load = self.engine.load_piece(s.chunk, s.piece_layers)
            profiles = [sizing.profile_layouts(self.engine.layout_steps(), points, layouts, load=load,
                                               rounds=s.profile_rounds, samples=s.profile_samples, graph=True,
                                               progress=not s.quiet, seed=s.seeds[0]) for layouts in parts]
            self.profile = profiles[0] if len(profiles) == 1 else merged(*profiles)
        with open(os.path.join(s.out, "layout-profile.json"), "w") as f:
            f.write(self.profile.to_json())
        print(self.profile.table())
        for name, layouts in (("pd", self.disjoint), ("pd-overlap", self.overlapped)):
            if layouts is not None and name in s.schedulers:
                for _, share in cli.policy_shares(s):
                    self.pd[name, share] = PrefillDecodePolicy(self.profile, layouts, tpot_slo_us=self.slo.tpot * 1e6,
                                                               headroom=s.policy_headroom, slack_share=share)
        return {"layout_profile": {"keys": [str(k) for k in self.profile.keys],
                                   "seconds": self.profile.settings.get("seconds")}}

    def make_split_policy(self) -> None:
        """The TPOT-only SplitPolicy over the disjoint layouts, from its own profile."""
        from torch_green_contexts.policy import SplitPolicy

        s = self.s
        if s.profile:
            with open(s.profile) as f:
                profile = sizing.LatencyProfile.from_json(f.read())
        else:
            measured = [k for k in self.disjoint.counts if k > 0]  # type: ignore[union-attr]
            profile = sizing.profile(self.engine.profile_steps(s.context), self.engine.buckets,
                                     load=self.engine.load_piece(s.chunk, s.piece_layers), counts=measured,
                                     rounds=s.profile_rounds, samples=s.profile_samples, graph=True,
                                     progress=not s.quiet, device_id=s.device, seed=s.seeds[0])
        with open(os.path.join(s.out, "profile.json"), "w") as f:
            f.write(profile.to_json())
        self.split_policy = SplitPolicy(profile, self.disjoint, slo_us=self.slo.tpot * 1e6, percentile=99,
                                        ordering="per_role", headroom=s.policy_headroom)

    def static_configs(self, scheduler: str, runs: list[dict[str, Any]], order: str) -> tuple[list[Config], dict[str, Any]]:
        """The static splits to run (disjoint or overlapped), chosen from both SLOs: the decode
        step's modelled p99 at the largest bucket the other schedulers reached while meeting the
        SLOs, and the longest prompt's prefill scaled to the batch side within half its TTFT SLO."""
        assert self.profile is not None
        layouts = self.disjoint if scheduler == "static" else self.overlapped
        assert layouts is not None
        keys = [k for k in layouts.keys if (isinstance(k, tuple) if scheduler == "static-overlap" else 0 < k < self.total)]
        options = [SplitOption(k, layouts[k].sm_count, layouts[k].batch_sm_count) for k in keys]
        bucket = bucket_reached((r["summary"] for r in runs if not r["skipped"] and r["seed"] == self.s.seeds[0]),
                                TARGET_ATTAINMENT, self.engine.buckets[-1])
        mean_prompt, mean_output = mean_lengths(lengths_of(self.s, self.s.seeds[0]))
        context = int(bucket * (mean_prompt + mean_output / 2))
        profile = self.profile

        def decode_us(key: Any) -> float | None:
            return profile.latency(key, bucket, context, percentile=99) if key in profile.measured else None

        def prefill_fits(batch_sms: int) -> bool:
            longest_slo = self.slo.ttft_for(self.s.max_prompt)
            return batch_sms > 0 and self.costs.prefill_s * self.total / batch_sms <= longest_slo / 2

        chosen = static_candidates(options, decode_us, prefill_fits, self.slo.tpot * 1e6, self.s.static_candidates)
        why = {"bucket": bucket, "context_tokens": context, "candidates": [str(k) for k in chosen],
               "decode_p99_us": {str(k): decode_us(k) for k in keys},
               "prefill_fits": {str(k): prefill_fits(layouts[k].batch_sm_count) for k in keys}}
        label = (lambda k: f"{k[0]}/{k[1]}") if scheduler == "static-overlap" else (lambda k: f"{k} SMs")
        return [Config(scheduler, label(k), k, order) for k in chosen], why

    def lanes_for(self, config: Config) -> Any:
        name = config.scheduler
        if name == "streams":
            return self.plain
        if name == "static":
            return StaticLanes(self.disjoint, config.param)
        if name == "static-overlap":
            return StaticLanes(self.overlapped, config.param, OVERLAP_PREFIX)
        share = self.s.slack_share if config.param is None else config.param
        if name == "pd":
            return TwoSloLanes(self.pd["pd", share], self.disjoint)
        if name == "pd-overlap":
            return TwoSloLanes(self.pd["pd-overlap", share], self.overlapped, OVERLAP_PREFIX)
        if name == "policy":
            return PolicyLanes(self.split_policy, self.disjoint)
        raise ValueError(f"no lanes for scheduler {name!r}")

    def run(self, config: Config, seed: int, rate: float, progress: Callable[[int, int, float], Any] | None = None) -> dict[str, Any]:
        """One run of ``config`` over the trace of ``seed`` at ``rate``; its summary."""
        s, engine = self.s, self.engine
        trace = trace_for(s, rate, seed)
        cap = s.duration_cap_s or run_cap(trace, self.slo)
        aging = s.aging_ms / 1e3 if s.aging_ms else None
        order = order_for(config.order, self.slo.ttft, self.slo.ttft_per_token, aging)
        settings = LoopSettings(engine.model.slots, engine.buckets, cap, s.poll_us * 1e-6, progress=progress,
                                order=order, slo=self.slo)
        engine.reset()
        if config.scheduler == "chunked":
            engine.capture_mixed(self.plain.lane, config.param)
            engine.warm_up([self.plain.lane], s.chunk, s.piece_layers)
            log = run_chunked(trace, ChunkedRunner(engine, self.plain.lane), config.param, settings, RealClock())
        else:
            lanes = self.lanes_for(config)
            engine.warm_up(lanes.all(), s.chunk, s.piece_layers)
            cursor = PrefillCursor(s.chunk, s.layers, s.piece_layers, order)
            log = run_overlap(trace, OverlapRunner(engine, lanes), cursor, s.prefill_depth, settings, RealClock())
        summary = summarize(log, self.slo)
        if config.scheduler == "chunked":
            summary["mixed_iterations"] = dict(engine.mixed_counts)
        engine.reset()
        return summary
