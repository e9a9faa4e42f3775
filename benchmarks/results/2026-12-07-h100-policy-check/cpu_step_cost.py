"""The Python part of PrefillDecodePolicy.step() + done() on the CPU, without a GPU: the
benchmark's trace of step figures (benchmarks/pd_policy.py) over the fake layouts of
tests/test_pd_policy.py, with a timer that records nothing and a switch that orders nothing, so
that what is left is the policy's own host cost. Run from a checkout's root:

    python3 benchmarks/results/2026-12-07-h100-policy-check/cpu_step_cost.py [--rounds N]

Prints the median of each round (20,000 steps, the first tenth left out) per configuration."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())

from tests.test_pd_policy import FakeLayouts, make_profile  # noqa: E402
from torch_green_contexts.pd_policy import PrefillDecodePolicy  # noqa: E402

OPTIONS = {"budget rule": {}, "p99 mode": {"mode": "p99", "anchor": 64, "dwell_steps": 16, "kv_pressure": (0.85, 0.3)}}


class NoTimer:
    pending = ()

    def begin(self, *args, **kwargs):
        pass

    def end(self):
        pass

    def read(self, observe):
        return 0


def median_us(options: dict, steps: int = 20000) -> float:
    policy = PrefillDecodePolicy(make_profile(), FakeLayouts(), tpot_slo_us=5000, timer=NoTimer(), **options)
    layouts = {key: policy.layouts[key] for key in policy.layouts.keys}
    policy.layouts.switch = lambda key, ordering=None: layouts[key]
    clock, costs = time.perf_counter_ns, []
    for i in range(steps):
        batch, context = (16, 64_000) if i % 6 < 3 else (1, 1_000)
        started = clock()
        policy.step(batch, context, prefill_tokens=4096, tpot_slack_us=100.0,
                    ttft_slack_us=-1.0 if i % 10 == 0 else 5e5, kv_used=0.5)
        policy.done()
        costs.append(clock() - started)
    return statistics.median(costs[steps // 10:]) / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    print(f"policy from {sys.modules[PrefillDecodePolicy.__module__].__file__}")
    for name, options in OPTIONS.items():
        print(f"{name}: median us per round " + ", ".join(f"{median_us(options):.2f}" for _ in range(rounds)))


if __name__ == "__main__":
    main()
