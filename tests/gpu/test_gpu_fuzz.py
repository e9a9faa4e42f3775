"""Generated bad and good arguments on a real GPU: only ValueError, TypeError or RuntimeError
with a message, and a small GEMM still right after every call."""

import pytest
import torch

from ..fuzz_cases import KINDS, fuzz

EXAMPLES_PER_KIND = 160


@pytest.mark.parametrize("kind", list(KINDS))
def test_generated_arguments(kind, device, figures):
    a = torch.randn(64, 64, device=device)
    expected = (a.double() @ a.double()).float()

    def gemm_still_right() -> None:
        torch.testing.assert_close(a @ a, expected, rtol=1e-3, atol=1e-3)

    outcomes = fuzz(kind, EXAMPLES_PER_KIND, device, gemm_still_right)
    figures.setdefault("fuzz", {})[kind] = dict(outcomes)
    assert sum(outcomes.values()) >= EXAMPLES_PER_KIND
