"""Overlapped layouts in Layouts with fake contexts and fences (no GPU): keys, what each side can
use, the default priorities, switching both ways and warm_up. tests/gpu/test_gpu_layouts.py
runs them on a GPU."""

import pytest
import torch

import torch_green_contexts.layouts as layouts_module
from torch_green_contexts.layouts import Layout, Layouts

TOTAL = 132
HIGHEST = -5


class FakeFence:
    def __init__(self, key, log):
        self.key, self.log = key, log

    def order_after(self, before):
        self.log.append(("full", before.key, self.key))

    def order_each_after(self, before):
        self.log.append(("per_role", before.key, self.key))


@pytest.fixture
def made(monkeypatch):
    log = {"fences": [], "priorities": {}}

    def make_layout(k, total, device, priority):
        log["priorities"][k] = priority
        return Layout(f"lat{k}", f"batch{k}", f"ctx{k}", f"ctx{k}" if k in (0, total) else f"rest{k}", k, total - k)

    def make_overlapped(latency_floor, batch_floor, step, device, priority):
        key = (latency_floor, batch_floor)
        log["priorities"][key] = priority
        shared = TOTAL - latency_floor - batch_floor
        return Layout(f"lat{key}", f"batch{key}", "l", "b", latency_floor + shared, batch_floor + shared, shared)

    class FakeC:
        @staticmethod
        def device_sm_count(device):
            return TOTAL

    monkeypatch.setattr(layouts_module._layout_build, "make_layout", make_layout)
    monkeypatch.setattr(layouts_module._layout_build, "make_overlapped", make_overlapped)
    monkeypatch.setattr(layouts_module._layout_build, "make_fence",
                        lambda layout: FakeFence(layout.key, log["fences"]))
    monkeypatch.setattr(layouts_module._layout_build, "granularity", lambda device: 8)
    monkeypatch.setattr(layouts_module._validation, "highest_priority", lambda: HIGHEST)
    monkeypatch.setattr(layouts_module._device, "resolve_device", lambda device_id: 0)
    monkeypatch.setattr(layouts_module, "_C", FakeC)
    return log


def test_overlapped_layouts_say_what_each_side_can_use(made):
    layouts = Layouts([0, 16], overlapped=[(16, 64), (32, 32)], ordering="per_role")
    assert layouts.keys == (0, 16, (16, 64), (32, 32)) and layouts.counts == (0, 16) and len(layouts) == 4
    step = layouts[(16, 64)]
    assert (step.latency_floor, step.batch_floor, step.shared_sm_count) == (16, 64, 52)
    assert (step.sm_count, step.batch_sm_count) == (68, 116) and step.overlapped and step.key == (16, 64)
    assert layouts[[32, 32]].key == (32, 32), "a list names the same layout"
    disjoint = layouts[16]
    assert not disjoint.overlapped and disjoint.latency_floor == 16 and disjoint.batch_floor == 116
    assert made["priorities"] == {0: 0, 16: 0, (16, 64): HIGHEST, (32, 32): HIGHEST}
    assert "overlapped=[(16, 64), (32, 32)]" in repr(layouts)
    Layouts([16], overlapped=[(8, 8)], latency_priority=-1)
    assert made["priorities"][16] == -1 and made["priorities"][(8, 8)] == -1, "a priority given holds for all"


def test_switching_between_disjoint_and_overlapped_layouts_orders_both_ways(made):
    layouts = Layouts([16], overlapped=[(16, 64)])
    layouts.switch(16)
    layouts.switch((16, 64), ordering="per_role")
    layouts.switch(16)
    assert layouts.switch((16, 64)) is layouts.active
    assert made["fences"] == [("per_role", 16, (16, 64)), ("full", (16, 64), 16), ("full", 16, (16, 64))]
    with pytest.raises(ValueError, match=r"no overlapped layout \(8, 8\)"):
        layouts.switch((8, 8))
    with pytest.raises(ValueError, match=r"^no layout of 24 latency SMs; have \[16, \(16, 64\)\]$"):
        layouts[24]
    assert layouts[[16, 64]] is layouts[(16, 64)] and layouts.active is layouts[(16, 64)]


@pytest.mark.parametrize("pairs, error, match", [
    ([(12, 16)], ValueError, "multiples of 8"),
    ([(0, 0)], ValueError, "at least one floor"),
    ([(64, 72)], ValueError, "leaving none to share"),
    ([(8, 8), (8, 8)], ValueError, "repeated floors"),
    ([(8,)], ValueError, "pairs"),
    ([(8, True)], TypeError, "not bool"),
    ([8], TypeError, "two SM counts"),
    ("8,8", TypeError, "pairs"),
])
def test_bad_floors_are_refused_before_anything_is_made(made, pairs, error, match):
    with pytest.raises(error, match=match):
        Layouts(overlapped=pairs)
    assert made["priorities"] == {}


def test_layouts_need_a_layout_and_an_int_priority(made):
    with pytest.raises(ValueError, match="at least one layout"):
        Layouts()
    with pytest.raises(TypeError, match="latency_priority"):
        Layouts([16], latency_priority=1.5)


def test_warm_up_runs_once_on_every_distinct_stream(made, monkeypatch):
    seen = []

    class FakeStreamContext:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            seen.append(self.stream)

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(torch.cuda, "stream", FakeStreamContext)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: seen.append("sync"))
    layouts = Layouts([0, 16], overlapped=[(16, 64)])
    calls = []
    layouts.warm_up(lambda: calls.append(1))
    assert seen == ["lat0", "batch0", "lat16", "batch16", "lat(16, 64)", "batch(16, 64)", "sync"]
    assert len(calls) == 6 and layouts.active is None
