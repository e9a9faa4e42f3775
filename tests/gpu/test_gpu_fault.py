"""What partitions do not isolate: a fault. A kernel that touches an illegal address on one
partition's stream makes every later CUDA call of the process fail, on the other partition, on
the primary context, and when making new green contexts: the error is sticky for the whole
process. Servers that need fault isolation need separate processes (MPS or MIG). Run in a
child process, whose CUDA state the fault destroys."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json
    import torch
    import torch_green_contexts as tgc
    from torch_green_contexts import GreenContext, SMPartition

    g = SMPartition.from_device(0).coscheduled_sm_count
    faulty, other = GreenContext.split(num_sms=(g, 0), backfill=(False, True), device_id=0)
    faulty_stream, other_stream = faulty.Stream(), other.Stream()
    x = torch.ones(1 << 20, device=0)
    with torch.cuda.stream(other_stream):
        (x * 2).sum()
    torch.cuda.synchronize()
    before = {"other partition": float((x * 2).sum().item())}
    # The SM probe writes each block's SM id to the address it is given: here one no
    # allocation covers.
    tgc._C.launch_sm_probe(faulty_stream.cuda_stream, 1 << 20, 4, 32, 0)

    def other_partition():
        with torch.cuda.stream(other_stream):
            y = (x * 2).sum()
        other_stream.synchronize()
        return float(y.item())

    after = {}
    for name, call in (
        ("faulting stream", faulty_stream.synchronize),
        ("other partition", other_partition),
        ("primary context", lambda: float((x * 3).sum().item())),
        ("new green context", lambda: GreenContext(num_sms=g, device_id=0).sm_count),
    ):
        try:
            after[name] = "ok: " + repr(call())
        except Exception as error:  # noqa: BLE001 - what each call raises is the finding
            after[name] = f"{type(error).__name__}: {error}"
    print(json.dumps({"before": before, "after": after}))
    """
)


def test_an_illegal_address_on_one_partition_breaks_every_cuda_call_of_the_process(device):
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": str(device)})
    # Only the report matters: how the child exits with a broken CUDA state is not the question.
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report (exit {proc.returncode}): {proc.stderr[-3000:]}"
    report = json.loads(lines[-1])
    assert report["before"] == {"other partition": 2.0 * (1 << 20)}
    for name, outcome in report["after"].items():
        assert not outcome.startswith("ok"), f"{name} still worked after the fault: {outcome}"
        assert "illegal" in outcome.lower() or "CUDA_ERROR" in outcome, f"{name}: {outcome}"
