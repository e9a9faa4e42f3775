"""The engine's admission orders (examples/pd/engine/admission.py): first come first
served, shortest prompt first with aging, KV slots, and the prefill queue. No GPU."""

from __future__ import annotations

import math

import pytest

from examples.pd.engine.admission import FCFS, Admission, Live, Order, PrefillQueue
from examples.pd.engine.request import Request


def test_admission_is_fcfs_into_free_slots():
    trace = [Request(i, 0.1 * i, 100, 10) for i in range(5)]
    a = Admission(slots=2)
    assert a.empty
    for r in reversed(trace[:3]):  # added out of order: they wait in arrival order
        a.add(r)
    assert not a.empty and a.waiting == [] and a.admit(0.25) == []  # added, not arrived yet
    a.arrive()
    first = a.admit(0.25)
    assert [(x.request.id, x.slot) for x in first] == [(0, 0), (1, 1)]
    assert a.admit(0.25) == [] and a.held == 2
    assert [r.id for r in a.waiting] == [2]
    a.release(first[1])
    a.add(trace[3])
    a.add(trace[4])
    a.arrive()
    assert [(x.request.id, x.slot) for x in a.admit(1.0)] == [(2, 1)]
    assert [r.id for r in a.waiting] == [3, 4] and not a.empty  # 3 and 4 wait for slots
    with pytest.raises(ValueError):
        Admission(0)


def test_spf_admits_the_shortest_prompt_unless_one_has_aged():
    trace = [Request(0, 0.0, 3000, 10), Request(1, 0.1, 200, 10), Request(2, 0.2, 900, 10), Request(3, 0.3, 50, 10)]
    order = Order("spf", aging_s=1.0)
    a = Admission(slots=1, order=order)
    for r in trace:
        a.add(r)
    a.arrive()
    assert [x.request.id for x in a.admit(0.5)] == [3]  # the shortest
    a.release(Live(trace[3], 0))
    assert [x.request.id for x in a.admit(0.6)] == [1]
    a.release(Live(trace[1], 0))
    # At 1.05 request 0 has waited 1.05 s: aged, it goes ahead of the shorter 900.
    assert [x.request.id for x in a.admit(1.05)] == [0]
    a.release(Live(trace[0], 0))
    assert [x.request.id for x in a.admit(1.1)] == [2]
    assert a.empty


def test_order_keys_and_checks():
    r_long, r_short = Request(0, 0.0, 1000, 5), Request(1, 0.5, 10, 5)
    assert FCFS.key(r_long, 9.0) < FCFS.key(r_short, 9.0)
    spf = Order("spf", aging_s=2.0)
    assert spf.key(r_short, 1.0) < spf.key(r_long, 1.0)
    assert spf.key(r_long, 2.0) < spf.key(r_short, 2.0)  # aged
    both_aged = (spf.key(r_long, 5.0), spf.key(r_short, 5.0))
    assert both_aged[0] < both_aged[1]  # among the aged, the oldest first
    assert Order("spf").aging_s == math.inf and FCFS.label == "FCFS" and spf.label == "SPF, aging 2000 ms"
    with pytest.raises(ValueError, match="fcfs, spf"):
        Order("lifo")
    with pytest.raises(ValueError, match="aging_s must be positive"):
        Order("spf", aging_s=0)


def live(i, prompt, arrival=0.0, prefilled=0):
    return Live(Request(i, arrival, prompt, 10), i, prefilled)


def test_prefill_queue_is_fcfs_and_splits_long_prompts():
    a, b, c = live(0, 300), live(1, 50), live(2, 400)
    q = PrefillQueue()
    for x in (a, b, c):
        q.add(x)
    assert q.tokens == 750 and len(q) == 3
    parts = q.take(256)
    assert [(p.live, p.start, p.length, p.completes) for p in parts] == [(a, 0, 256, False)]
    parts = q.take(256)
    assert [(p.live, p.start, p.length, p.completes) for p in parts] == [
        (a, 256, 44, True), (b, 0, 50, True), (c, 0, 162, False)]
    assert list(q) == [c] and c.prefilled == 162 and q.tokens == 238


def test_prefill_queue_under_spf_keeps_the_begun_prompt_first():
    q = PrefillQueue(Order("spf", aging_s=1.0))
    big, mid = live(0, 1000, arrival=0.0), live(1, 300, arrival=0.1)
    q.add(big)
    q.add(mid)
    assert [(p.live, p.length) for p in q.take(200, now=0.2)] == [(mid, 200)]
    small = live(2, 20, arrival=0.3)
    q.add(small)
    # mid has begun: it finishes before the shorter newcomer.
    assert [(p.live, p.length) for p in q.take(150, now=0.4)] == [(mid, 100), (small, 20), (big, 30)]
    late = live(3, 10, arrival=1.5)
    q.add(late)
    # big has begun (30 tokens) and stays first anyway.
    assert [(p.live, p.length) for p in q.take(2000, now=1.6)] == [(big, 970), (late, 10)]
    assert not q


def test_prefill_queue_ages_a_long_prompt_ahead():
    q = PrefillQueue(Order("spf", aging_s=1.0))
    old = live(0, 2000, arrival=0.0)
    q.add(old)
    for i in range(1, 4):
        q.add(live(i, 100, arrival=0.5))
    assert [p.live.request.id for p in q.take(100, now=0.9)] == [1]
    assert [p.live.request.id for p in q.take(100, now=1.0)] == [0]  # waited 1 s: ahead of the short ones
