"""The simulated GPU (examples/pd/sim/device.py): work on two roles in launch order, each at its
idle speed alone and its loaded speed beside the other role's work, launches that cost the host
time, and a polling host moved to its first look after the next event without changing any
decision. No GPU."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from examples.pd.engine.lanes import Lane
from examples.pd.sim.costs import LaneCosts, Linear, Spread
from examples.pd.sim.device import SimClock, SimDevice, Work

LANE = Lane("k", "k:latency", "k:batch")


def lane_costs(decode=(1000.0, 2000.0), prefill=(3000.0, 6000.0)) -> LaneCosts:
    """A lane whose decode step takes decode[0] us alone and decode[1] beside prefill, and a
    prefill piece of one layer prefill[0] / prefill[1]; no spread."""
    def constant(us: float) -> Linear:
        return Linear(("one",), (us,))

    return LaneCosts(64, 68, 0, constant(decode[0]), constant(decode[1]), constant(prefill[0]), constant(prefill[1]),
                     Spread((1.0,)), Spread((1.0,)))


def device(clock: SimClock | None = None, **costs) -> SimDevice:
    host = {"decode_launch_us": 0.0, "piece_launch_us": 0.0, "switch_us": 0.0}
    return SimDevice(clock or SimClock(), {"k": lane_costs(**costs)}, {}, None, host, random.Random(0), 4096)


def submit(dev: SimDevice, role: str, idle_us: float, loaded_us: float, deps=()) -> Work:
    return dev._submit(role, idle_us, loaded_us, 0.0, deps)


def test_work_alone_runs_at_its_idle_speed_and_one_role_runs_in_launch_order():
    dev = device()
    a, b = submit(dev, "latency", 1000, 3000), submit(dev, "latency", 500, 3000)
    dev.advance(1.0)
    assert (a.start, a.end) == (0.0, pytest.approx(1e-3)) and (b.start, b.end) == (pytest.approx(1e-3), pytest.approx(1.5e-3))


def test_work_beside_the_other_role_runs_at_its_loaded_speed_for_the_overlap_only():
    dev = device()
    decode = submit(dev, "latency", 1000, 2000)  # 1 ms alone, 2 ms beside prefill
    piece = submit(dev, "batch", 1000, 4000)  # 1 ms alone, 4 ms beside decode
    dev.advance(1.0)
    # Both loaded until decode ends: decode needs 2 ms loaded; in those 2 ms the piece does half.
    assert decode.end == pytest.approx(2e-3)
    # The piece's other half runs alone: 0.5 ms.
    assert piece.end == pytest.approx(2.5e-3)


def test_a_decode_step_waits_for_the_prefill_it_joins_after():
    dev = device()
    piece = submit(dev, "batch", 2000, 2000)
    decode = submit(dev, "latency", 1000, 1000, deps=[piece])
    dev.advance(1.0)
    assert decode.start == pytest.approx(piece.end) and decode.end == pytest.approx(3e-3)


def test_launches_cost_the_host_and_work_starts_once_launched():
    clock = SimClock()
    dev = device(clock)
    work = dev._submit("latency", 1000, 1000, 300.0, ())
    assert clock.host_free == pytest.approx(3e-4) and work.ready_at == pytest.approx(3e-4)
    dev.advance(1.0)
    assert work.start == pytest.approx(3e-4)
    clock.sleep(50e-6)  # the host looks again only after its launch is done
    assert clock.now() >= 3e-4 + 50e-6


def test_next_end_looks_ahead_without_moving_the_device():
    dev = device()
    a = submit(dev, "latency", 1000, 2000)
    submit(dev, "batch", 1000, 4000)
    assert dev.next_end(0.0) == pytest.approx(2e-3)
    assert a.end is None and a.progress == 0.0 and dev.t == 0.0
    # Work launched before that end still starts at once and changes it.
    late = submit(dev, "latency", 100, 100)
    dev.advance(1.0)
    assert a.end == pytest.approx(2e-3) and late.start == pytest.approx(2e-3)


def test_a_polling_host_skips_to_its_first_look_after_the_next_event():
    clock = SimClock(oversleep_s=50e-6, poll_s=50e-6)
    clock.wake = lambda after: 1.03e-3
    clock.sleep(50e-6)  # looks every 100 us: the first look at or after 1.03 ms is 1.1 ms
    assert clock.now() == pytest.approx(1.1e-3)
    clock.wake = lambda after: None
    clock.sleep(50e-6)
    assert clock.now() == pytest.approx(1.2e-3)
    clock.wake = lambda after: 2.0
    clock.sleep(0.5)  # a sleep until an arrival is not a look's pause: it oversleeps, nothing is skipped
    assert clock.now() == pytest.approx(0.50125)


def test_drained_devices_answer_done_and_a_marker_of_no_work_is_ready():
    clock = SimClock()
    dev = device(clock)
    assert dev.marker().ready()
    work = submit(dev, "batch", 5000, 5000)
    marker = dev.marker()
    assert marker.work is work and not marker.ready()
    dev.drain()
    assert marker.ready() and work.end == pytest.approx(5e-3)
    assert math.isfinite(work.end)


def test_a_decode_step_beside_a_small_piece_takes_the_share_of_its_lane_measured_for_that_size():
    from examples.pd.sim.costs import PieceShares

    dev = device()
    costs = dataclasses.replace(lane_costs(), piece_shares=PieceShares((512, 2048), (0.5, 1.0)))
    decode = submit(dev, "latency", 1000, 3000)  # 1 ms alone, 3 ms beside a chunk
    decode.costs = costs
    piece = submit(dev, "batch", 10_000, 10_000)
    piece.tokens = 512  # half the slowdown: 2 ms beside it
    dev.advance(1.0)
    assert decode.end == pytest.approx(2e-3)
    whole = device()
    decode, piece = submit(whole, "latency", 1000, 3000), submit(whole, "batch", 10_000, 10_000)
    decode.costs, piece.tokens = costs, 2048
    whole.advance(1.0)
    assert decode.end == pytest.approx(3e-3)
