"""The Python API against the simulated driver (tests/simdriver), for every driver version.

Each version runs in its own interpreter, since the driver is loaded once per process. The
library is built by scripts/run_tests.sh (cmake, tests/cpp/build); without it these skip.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from ._sim import run_on_sim

LIBRARY = pathlib.Path(__file__).parent / "cpp" / "build" / "libtgc_simdriver.so"

SCRIPT = textwrap.dedent(
    """
    import warnings
    import torch
    import torch_green_contexts as tgc
    from torch_green_contexts import GreenContext, SMPartition

    def main():
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

        def fails(call, match):
            try:
                call()
            except RuntimeError as error:
                assert match in str(error), str(error)
            else:
                raise AssertionError("no RuntimeError")

        if version < 13010:
            fails(lambda: GreenContext(num_sms=8, workqueue_scope="balanced", device_id=0), "13.1")
            fails(lambda: GreenContext.max_workqueue_concurrency(0), "13.1")
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
            fails(lambda: whole.locality_domain_id, "13.4")
            fails(lambda: ctx.locality_domain_id, "13.4")
            fails(lambda: whole.split(num_sms=16, locality_domain_ids=0), "13.4")
        else:
            assert whole.locality_domain_id is None
            (g,), _ = whole.split(num_sms=16, locality_domain_ids=1)
            assert g.locality_domain_id == 1
            assert GreenContext(sm_partition=g).locality_domain_id == 1
        return version

    version = main()
    import gc
    gc.collect()
    counts = tgc.live_counts()
    assert (counts["contexts"], counts["internal_contexts"], counts["streams"]) == (0, 0, 0), counts
    assert counts["idle_contexts"] > 0, counts  # dropped contexts are kept for reuse
    tgc.release_idle_contexts()
    assert tgc.live_counts() == dict(counts, idle_contexts=0, idle_streams=0)
    print("ok", version)
    """
)


@pytest.mark.skipif(not LIBRARY.exists(), reason="simulated driver not built (scripts/run_tests.sh builds it)")
@pytest.mark.parametrize("version", [12040, 12050, 13000, 13010, 13040])
def test_python_api_on_simulated_driver(version):
    env = {
        **os.environ,
        "TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY": str(LIBRARY),
        "TGC_SIM_DRIVER_VERSION": str(version),
        "CUDA_VISIBLE_DEVICES": "",
    }
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"ok {version}" in out.stdout


FUZZ_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    import tests.fuzz_cases as cases
    from torch_green_contexts import GreenContext
    import torch_green_contexts as tgc

    cases.MAKE_STREAMS = False

    def usable():
        assert GreenContext(num_sms=8, device_id=0).sm_count == 8

    total = 0
    for kind in cases.KINDS:
        outcomes = cases.fuzz(kind, 130, 0, usable)
        total += sum(outcomes.values())
        print(kind, dict(outcomes))
    counts = tgc.live_counts()
    assert (counts["contexts"], counts["internal_contexts"], counts["streams"]) == (0, 0, 0), counts
    print("examples", total)
    """
)


@pytest.mark.skipif(not LIBRARY.exists(), reason="simulated driver not built (scripts/run_tests.sh builds it)")
@pytest.mark.parametrize("version", [13000, 13040])
def test_generated_arguments_against_the_simulated_driver(version):
    pytest.importorskip("hypothesis")
    env = dict(os.environ, TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY=str(LIBRARY),
               TGC_SIM_DRIVER_VERSION=str(version))
    root = str(pathlib.Path(__file__).resolve().parent.parent)
    result = subprocess.run([sys.executable, "-c", FUZZ_SCRIPT.format(root=root)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    examples = int(result.stdout.strip().rsplit("examples", 1)[1])
    assert examples >= 900
    print(result.stdout)


TWO_DEVICES = textwrap.dedent(
    """
    from torch_green_contexts import GreenContext, SMPartition
    on_one = SMPartition.from_device(device_id=1)
    assert on_one.device_id == 1
    assert GreenContext(num_sms=8, device_id=1).device_id == 1
    assert GreenContext(sm_partition=on_one).device_id == 1
    assert [c.device_id for c in GreenContext.split(num_sms=(8, 8), device_id=1)] == [1, 1]
    groups, _ = SMPartition.from_device(device_id=0).split(num_sms=8)
    other, _ = on_one.split(num_sms=8)
    try:
        SMPartition.union(groups[0], other[0])
    except ValueError as error:
        assert "of one device" in str(error), error
    else:
        raise AssertionError("no ValueError")
    try:
        GreenContext(sm_partition=groups[0], device_id=1)
    except ValueError as error:
        assert "device_id=1 disagrees" in str(error), error
    else:
        raise AssertionError("no ValueError")
    for call in (lambda: GreenContext(num_sms=8, device_id=2), lambda: SMPartition.from_device(device_id=2)):
        try:
            call()
        except RuntimeError as error:
            assert "valid device_id: 0..1" in str(error), error
        else:
            raise AssertionError("no RuntimeError")
    print("ok")
    """
)


@pytest.mark.skipif(not LIBRARY.exists(), reason="simulated driver not built (scripts/run_tests.sh builds it)")
def test_two_devices_against_the_simulated_driver():
    env = dict(os.environ, TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY=str(LIBRARY), TGC_SIM_DRIVER_VERSION="13000",
               TGC_SIM_DEVICE_COUNT="2")
    result = subprocess.run([sys.executable, "-c", TWO_DEVICES], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


@pytest.mark.skipif(not LIBRARY.exists(), reason="simulated driver not built (scripts/run_tests.sh builds it)")
def test_report_against_the_simulated_driver():
    env = dict(os.environ, TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY=str(LIBRARY), TGC_SIM_DRIVER_VERSION="13000")
    result = subprocess.run([sys.executable, "-m", "torch_green_contexts"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "CUDA driver: 13.0" in out
    assert "native split (cuDevSmResourceSplit)" in out and "no (needs 13.1)" in out
    assert "missing: cuDevSmResourceSplit (13.1+)" in out
    # The simulated GPCs (18 x 6, 16, 8) hold 15 aligned groups of 8, as an H200 does.
    assert "groups that fit at once: 15 of 8 SMs, 7 of 16 SMs" in out, out
    assert f"TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY={LIBRARY}" in out


SIZING = textwrap.dedent(
    """
    from torch_green_contexts import sizing
    from torch_green_contexts.layouts import Layouts

    counts = sizing.available_counts(0)
    # The simulated GPCs (18 x 6, 16, 8) hold 15 aligned groups of 8: a group and the rest can
    # be 8..120 SMs, and the whole device (132) ends the list.
    assert counts == list(range(8, 121, 8)) + [132], counts
    for call, error, text in (
        (lambda: sizing.measure(lambda: None, counts=[8, 12], device_id=0), ValueError,
         "cannot be split exactly into [12] SMs and the rest; allowed counts: [8, 16,"),
        (lambda: sizing.measure(lambda: None, counts=[128], device_id=0), ValueError, "[128]"),
        (lambda: sizing.measure(lambda: None, device_id=3), RuntimeError, "valid device_id: 0..0"),
        (lambda: Layouts([8, 133], device_id=0), ValueError, "between 0 (every SM to batch work) and 132"),
        (lambda: Layouts([8], device_id=3), RuntimeError, "valid device_id: 0..0"),
    ):
        fails(call, error, text)
    print("ok", counts)
    """
)


@pytest.mark.skipif(not LIBRARY.exists(), reason="simulated driver not built (scripts/run_tests.sh builds it)")
@pytest.mark.parametrize("version", [12040, 13000, 13040])
def test_sizing_counts_and_checks_against_the_simulated_driver(version):
    """The counts the sweep would measure, read from the driver on the emulated (12.4, 13.0) and
    native (13.4) split paths, and the checks that need a device."""
    assert run_on_sim(SIZING, version, timeout=120).startswith("ok")


UNION = textwrap.dedent(
    """
    from torch_green_contexts import GreenContext, SMPartition
    from torch_green_contexts.layouts import Layouts

    whole = SMPartition.from_device(0)
    groups, rest = whole.split(num_sms=(8, 16, 0), coscheduled_sm_count=2, backfill=(False, False, True))
    # (8, 16) are two driver splits below 13.1: only pieces of one of them combine there.
    eights, _ = whole.split(num_sms=(8, 8, 8, 0), coscheduled_sm_count=2, backfill=(False, False, False, True))
    shared = eights[3]
    latency = SMPartition.union(eights[0], shared)
    batch = SMPartition.union(eights[1], eights[2], shared)
    assert (latency.sm_count, batch.sm_count) == (8 + shared.sm_count, 16 + shared.sm_count)
    assert latency.device_id == 0 and "SMPartition(" in repr(latency)
    assert GreenContext(sm_partition=latency).sm_count == latency.sm_count
    assert GreenContext(sm_partition=batch).sm_count == batch.sm_count
    assert SMPartition.union(eights[1]).sm_count == 8
    fails(lambda: latency.split(num_sms=8), ValueError, "cannot split again")
    fails(lambda: SMPartition.union(), ValueError, "at least one")
    fails(lambda: SMPartition.union(eights[0], eights[0]), ValueError, "overlap")
    fails(lambda: SMPartition.union(eights[0], groups[1]), ValueError, "different split() calls")
    fails(lambda: SMPartition.union(whole, eights[0]), ValueError, "whole device")
    fails(lambda: SMPartition.union(eights[0], "x"), TypeError, "SMPartition objects")
    default_aligned, remainder = whole.split(num_sms=(8, 8))
    fails(lambda: SMPartition.union(default_aligned[0], remainder), ValueError, "cannot combine")
    import torch_green_contexts as tgc
    if tgc.driver_version() < 13010:
        fails(lambda: SMPartition.union(groups[0], groups[1]), ValueError, "groups of one size")
    else:
        assert SMPartition.union(groups[0], groups[1]).sm_count == 24
    for pairs, text in (([(12, 16)], "multiples of 8"), ([(0, 0)], "at least one floor"),
                        ([(64, 72)], "leaving none to share"), ([(8, 8), (8, 8)], "repeated floors"),
                        ([(8,)], "pairs"), ([(8, -8)], "multiples of 8")):
        fails(lambda: Layouts(overlapped=pairs, device_id=0), ValueError, text)
    fails(lambda: Layouts(device_id=0), ValueError, "at least one layout")
    fails(lambda: Layouts(overlapped=[(8, 8.0)], device_id=0), TypeError, "ints")
    print("ok")
    """
)


@pytest.mark.skipif(not LIBRARY.exists(), reason="simulated driver not built (scripts/run_tests.sh builds it)")
@pytest.mark.parametrize("version", [12040, 13000, 13010, 13040])
def test_unions_of_split_pieces_against_the_simulated_driver(version):
    assert run_on_sim(UNION, version).strip() == "ok"
