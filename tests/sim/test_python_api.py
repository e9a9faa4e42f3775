"""The Python API against the simulated driver: contexts, streams and splits, the features each
driver version has, and generated arguments for every public call."""

import gc
import os

import pytest

import torch_green_contexts as tgc
from torch_green_contexts import GreenContext, SMPartition


def _use_the_api(fails):
    version = tgc.driver_version()
    whole = SMPartition.from_device(0)
    assert (whole.sm_count, whole.coscheduled_sm_count) == (132, 8)

    ctx = GreenContext(num_sms=12, device_id=0)
    assert ctx.sm_count == 16, ctx.sm_count
    # torch.cuda.Stream itself needs PyTorch's CUDA runtime, which no simulated driver
    # satisfies: check the native stream and its PyTorch identity instead.
    stream = ctx._native.stream(0)
    assert len(stream) == 3 and stream[1] == 0 and ctx._native.stream_count == 1
    pool = [ctx._native.stream(0) for _ in range(63)]
    assert len(set(pool)) == 32 and pool[31] == stream and ctx._native.stream_count == 32
    assert ctx._native.stream(-1) not in pool and ctx._native.stream_count == 33
    assert GreenContext(sm_partition=ctx.sm_partition).sm_count == 16

    a, b = GreenContext.split(num_sms=(16, 0), backfill=(False, True), device_id=0)
    assert (a.sm_count, b.sm_count) == (16, 116)

    if version < 13010:
        fails(lambda: GreenContext(num_sms=8, workqueue_scope="balanced", device_id=0), RuntimeError, "13.1")
        fails(lambda: GreenContext.max_workqueue_concurrency(0), RuntimeError, "13.1")
        assert not tgc._C.native_split_available()
    else:
        assert tgc._C.native_split_available()
        assert GreenContext.max_workqueue_concurrency(0) == 128
        c = GreenContext(num_sms=8, workqueue_scope="balanced", workqueue_concurrency_limit=3, device_id=0)
        assert c.sm_count == 8
        ctxs = GreenContext.split(num_sms=(16, 24), coscheduled_sm_count=(8, 4),
                                  workqueue_scope="device_ctx", device_id=0)
        assert [x.sm_count for x in ctxs] == [16, 24]
    if version < 13040:
        fails(lambda: whole.locality_domain_id, RuntimeError, "13.4")
        fails(lambda: ctx.locality_domain_id, RuntimeError, "13.4")
        fails(lambda: whole.split(num_sms=16, locality_domain_ids=0), RuntimeError, "13.4")
    else:
        assert whole.locality_domain_id is None
        (g,), _ = whole.split(num_sms=16, locality_domain_ids=1)
        assert g.locality_domain_id == 1
        assert GreenContext(sm_partition=g).locality_domain_id == 1
    return version


def test_python_api_on_simulated_driver(fails):
    assert _use_the_api(fails) == int(os.environ["TGC_SIM_DRIVER_VERSION"])
    gc.collect()
    counts = tgc.live_counts()
    assert (counts["contexts"], counts["internal_contexts"], counts["streams"]) == (0, 0, 0), counts
    assert counts["idle_contexts"] > 0, counts  # dropped contexts are kept for reuse
    tgc.release_idle_contexts()
    assert tgc.live_counts() == dict(counts, idle_contexts=0, idle_streams=0)


@pytest.mark.driver_versions(13000, 13040)
@pytest.mark.filterwarnings("ignore:GreenContext.create.. with positional arguments:FutureWarning")
def test_generated_arguments_against_the_simulated_driver(monkeypatch):
    pytest.importorskip("hypothesis")
    import tests.fuzz_cases as cases

    monkeypatch.setattr(cases, "MAKE_STREAMS", False)

    def usable():
        assert GreenContext(num_sms=8, device_id=0).sm_count == 8

    total = 0
    for kind in cases.KINDS:
        outcomes = cases.fuzz(kind, 130, 0, usable)
        total += sum(outcomes.values())
        print(kind, dict(outcomes))
    counts = tgc.live_counts()
    assert (counts["contexts"], counts["internal_contexts"], counts["streams"]) == (0, 0, 0), counts
    assert total >= 900
