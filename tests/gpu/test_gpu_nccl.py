"""torch.distributed with the NCCL backend beside green contexts: a job of one rank on this GPU
(a FileStore on local disk, no network), in a process of its own so that NCCL's state never
reaches the other tests. Collectives (all_reduce, broadcast) run on a stream of a green context;
afterwards the calling thread's current CUDA context (the driver's, which NCCL's communicator
initialisation has been seen to switch) and PyTorch's current stream must be what they were,
the results right, and the stream still on its partition's SMs. Once with the communicator made
by init_process_group (device_id given), once made by the first collective, on the green stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.distributed as dist

import torch_green_contexts as tgc


def _nccl_available() -> bool:
    return dist.is_available() and dist.is_nccl_available()


pytestmark = pytest.mark.skipif(not _nccl_available(), reason="needs torch.distributed with the NCCL backend")

RANK = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.distributed as dist
    import torch_green_contexts as tgc
    from torch_green_contexts import GreenContext, SMPartition, observed_sm_ids

    device, store_path, eager, MARK = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "eager", sys.argv[4]
    report = {}
    torch.cuda.set_device(device)
    torch.zeros(1, device=device)
    torch.cuda.synchronize(device)
    primary = tgc._C.current_context()
    default_stream = torch.cuda.current_stream(device)
    report["primary_current_before"] = primary != 0

    def same_as_before(where):
        report[where] = {"context": tgc._C.current_context() == primary,
                         "stream": torch.cuda.current_stream(device) == default_stream}

    options = {"device_id": torch.device("cuda", device)} if eager else {}
    dist.init_process_group("nccl", store=dist.FileStore(store_path, 1), rank=0, world_size=1, **options)
    same_as_before("after_init")
    granularity = SMPartition.from_device(device).coscheduled_sm_count
    comm, compute = GreenContext.split(num_sms=(3 * granularity, 0), backfill=(False, True), device_id=device)
    green = {comm._native.context_handle, compute._native.context_handle}
    stream = comm.Stream()
    stream.wait_stream(default_stream)
    with torch.cuda.stream(stream):
        x = torch.arange(1 << 20, device=device, dtype=torch.float32)
        y = torch.full((1 << 16,), float(device + 7), device=device)
        dist.all_reduce(x)  # without device_id, this makes the communicator
        dist.broadcast(y, src=0)
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
        report["stream_inside"] = torch.cuda.current_stream(device) == stream
    stream.synchronize()
    same_as_before("after_collectives")
    report["green_current"] = tgc._C.current_context() in green
    report["results_right"] = (torch.equal(x.cpu(), torch.arange(1 << 20, dtype=torch.float32))
                               and bool(torch.all(y.cpu() == device + 7)))
    # The driver's answer for the stream (not the context the stream object holds), and the SMs
    # a kernel on it ran on.
    report["sm_count"] = [comm.sm_count, tgc._C.stream_sm_count(stream.cuda_stream, device),
                          len(observed_sm_ids(stream))]
    dist.destroy_process_group()
    report["after_destroy_context"] = ("primary" if tgc._C.current_context() == primary
                                       else "none" if tgc._C.current_context() == 0 else "another")
    report["stream_after_destroy"] = torch.cuda.current_stream(device) == default_stream
    print(MARK + json.dumps(report), flush=True)
    """
)


MARK = "rank report: "


def _run_rank(device: int, store: str, mode: str) -> dict:
    env = dict(os.environ)
    # The child imports this package from where this process found it.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tgc.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, "-c", RANK, str(device), store, mode, MARK], capture_output=True,
                            text=True, timeout=300, env=env)
    # NCCL may write to standard output too (NCCL_DEBUG): the report is the marked line.
    reports = [line[len(MARK):] for line in result.stdout.splitlines() if line.startswith(MARK)]
    assert result.returncode == 0 and reports, f"the rank failed ({result.returncode}):\n" + (
        result.stdout[-3000:] + result.stderr[-6000:])
    return json.loads(reports[-1])


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_collectives_on_a_green_context_stream_leave_context_and_stream_as_they_were(device, tmp_path, mode):
    report = _run_rank(device, str(tmp_path / "store"), mode)
    assert report["primary_current_before"], report
    assert report["after_init"] == {"context": True, "stream": True}, report
    assert report["stream_inside"], "a collective switched PyTorch's current stream inside the block"
    assert report["after_collectives"] == {"context": True, "stream": True}, report
    assert not report["green_current"], "a green context was left current"
    assert report["results_right"], report
    comm_sms, stream_sms, observed = report["sm_count"]
    assert stream_sms == comm_sms and observed == comm_sms, report
    assert report["after_destroy_context"] in ("primary", "none"), report
    assert report["stream_after_destroy"], report
