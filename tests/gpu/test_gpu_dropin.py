"""Code written purely against torch.cuda.green_contexts (torch 2.15's API) runs on this torch
once torch_green_contexts is installed in its place."""

import subprocess
import sys
import textwrap

USER_CODE = textwrap.dedent(
    """
    import torch
    from torch.cuda.green_contexts import GreenContext, SMPartition

    ctx = GreenContext.create(num_sms=16)
    assert ctx.sm_count >= 16
    stream = ctx.Stream()
    x = torch.randn(1024, 1024, device="cuda")
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = x @ x
    torch.cuda.current_stream().wait_stream(stream)
    torch.testing.assert_close(y, x @ x)

    latency, batch = GreenContext.split(num_sms=(16, 0), backfill=(False, True))
    assert latency.sm_count == 16 and batch.sm_count == SMPartition.from_device().sm_count - 16

    groups, remainder = SMPartition.from_device().split(num_sms=(16, 24))
    a, b = (GreenContext(sm_partition=g) for g in groups)
    (c,), _ = GreenContext(sm_partition=remainder).sm_partition.split(num_sms=8)
    assert (a.sm_count, b.sm_count, c.sm_count) == (16, 24, 8)
    print("user code ok", type(ctx).__module__)
    """
)


def test_user_code_with_install(tmp_path):
    code = "import torch_green_contexts; torch_green_contexts.install()\n" + USER_CODE
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "user code ok torch_green_contexts" in result.stdout


def test_user_code_through_the_runner(tmp_path):
    script = tmp_path / "user_code.py"
    script.write_text(USER_CODE)
    result = subprocess.run([sys.executable, "-m", "torch_green_contexts.run", str(script)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "user code ok torch_green_contexts" in result.stdout
