"""Code written for torch 2.9-2.14's torch.cuda.green_contexts (positional create,
set_context/pop_context, Stream()) runs unchanged on this torch once torch_green_contexts is
installed in its place, warning only that the positional form will go. Each script runs in a
fresh interpreter, so that nothing the other tests did decides the result."""

import subprocess
import sys
import textwrap

OLDER_CODE = textwrap.dedent(
    """
    import warnings
    import torch
    import torch_green_contexts
    torch_green_contexts.install()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ctx = torch.cuda.green_contexts.GreenContext.create(16, 0)
        tiny = torch.cuda.green_contexts.GreenContext.create(1, 0)  # as PyTorch's own tests call it
    assert [w.category for w in caught] == [FutureWarning, FutureWarning], caught
    assert ctx.sm_count >= 16 and tiny.sm_count >= 1

    x = torch.randn(512, 512, device="cuda")
    ctx.set_context()
    y = x @ x
    ctx.pop_context()
    torch.testing.assert_close(y, x @ x)

    tiny.set_context()
    z = x + 1
    tiny.pop_context()
    torch.testing.assert_close(z, x + 1)

    stream = ctx.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        w = x @ x
    torch.cuda.current_stream().wait_stream(stream)
    torch.testing.assert_close(w, x @ x)
    print("older code ok", ctx.sm_count, tiny.sm_count)
    """
)


def test_torch_2_11_code_after_install():
    result = subprocess.run([sys.executable, "-c", OLDER_CODE], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "older code ok" in result.stdout
    print(result.stdout.strip())
