"""Layouts: several splits alive at once, switched per step, on a real GPU."""

import gc
import time

import pytest
import torch

from torch_green_contexts import observed_sm_ids
from torch_green_contexts.layouts import Layouts


@pytest.fixture
def counts(granularity):
    return (granularity, 2 * granularity, 4 * granularity)


def test_every_layout_is_a_disjoint_pair_while_all_exist(device, whole, counts, live):
    with Layouts(counts, device_id=device) as layouts:
        assert layouts.counts == counts and len(layouts) == 3 and layouts.active is None
        for k, layout in zip(counts, layouts):
            assert layout is layouts[k]
            assert (layout.sm_count, layout.batch.sm_count) == (k, whole.sm_count - k)
            lat, batch = set(observed_sm_ids(layout.latency_stream)), set(observed_sm_ids(layout.batch_stream))
            assert (len(lat), len(batch)) == (k, whole.sm_count - k)
            assert not lat & batch
    del layout  # the loop's last layout holds its contexts
    gc.collect()
    assert live()["contexts"] == 0


def test_switch_orders_the_new_streams_after_the_old_without_waiting(device, counts):
    with Layouts(counts, device_id=device) as layouts:
        x = torch.zeros(1 << 20, device=device)
        y = torch.empty_like(x)
        # Every kernel used below runs once on each stream first: a kernel's first launch in a
        # context may load its module, which can wait for the device.
        for layout in layouts:
            for stream in (layout.latency_stream, layout.batch_stream):
                with torch.cuda.stream(stream):
                    torch.cuda._sleep(1000)
                    torch.mul(x, 2, out=y)
                    x.fill_(0.0)
        torch.cuda.synchronize(device)
        first = layouts.switch(counts[0])
        assert layouts.active is first
        with torch.cuda.stream(first.batch_stream):
            torch.cuda._sleep(200_000_000)  # about 0.1 s
            x.fill_(1.0)
        done = torch.cuda.Event()
        done.record(first.batch_stream)
        t0 = time.perf_counter()
        second = layouts.switch(counts[1])
        third = layouts.switch(counts[2])
        with torch.cuda.stream(third.latency_stream):
            torch.mul(x, 2, out=y)  # reads what the first layout's batch stream wrote
        elapsed = time.perf_counter() - t0
        # Everything above was queued while the sleeping kernel ran: no host wait.
        assert not done.query(), f"the host waited for the GPU ({elapsed * 1e3:.1f} ms)"
        torch.cuda.synchronize(device)
        # Unordered, y would be 0: the mul would have read x before the fill.
        assert torch.equal(y, torch.full_like(x, 2.0))
        assert second is layouts[counts[1]] and third is layouts.active
        del first, second, third, layout, stream


def test_switching_back_and_to_the_same_layout(device, counts):
    with Layouts(counts, device_id=device) as layouts:
        a = layouts.switch(counts[0])
        assert layouts.switch(counts[0]) is a  # nothing to order
        x = torch.zeros(1024, device=device)
        torch.cuda.current_stream(device).synchronize()
        for i in range(30):
            step = layouts.switch(counts[i % 3])
            stream = step.latency_stream if i % 2 else step.batch_stream
            with torch.cuda.stream(stream):
                torch.cuda._sleep(100_000)
                x.add_(1.0)
        last = layouts.active
        torch.cuda.current_stream(device).wait_stream(last.latency_stream)
        torch.cuda.current_stream(device).wait_stream(last.batch_stream)
        assert x.sum().item() == 30 * 1024
        del a, step, stream, last


def test_bad_requests_and_close(device, whole, counts, live):
    layouts = Layouts(counts, device_id=device, latency_priority=-1)
    assert layouts.device_id == device
    with pytest.raises(ValueError, match="no layout of 3 latency SMs"):
        layouts.switch(3)
    with pytest.raises(ValueError, match="have"):
        layouts[5]
    layouts.close()
    assert len(layouts) == 0 and layouts.active is None
    gc.collect()
    assert live()["contexts"] == 0
    with pytest.raises(ValueError, match=f"between 0 .* and {whole.sm_count}"):
        Layouts([whole.sm_count + 1], device_id=device)
    with pytest.raises(RuntimeError, match="device_id"):
        Layouts(counts, device_id=torch.cuda.device_count())
    assert live()["contexts"] == 0
