"""CUDA green contexts for PyTorch: the API of ``torch.cuda.green_contexts``, on any driver
from 12.4, without cuda-python, with disjoint splits on every driver.

>>> from torch_green_contexts import GreenContext
>>> latency, batch = GreenContext.split(num_sms=(16, 0), backfill=(False, True))
>>> with torch.cuda.stream(latency.Stream()):
...     y = model(x)
"""

from __future__ import annotations

from ._green_context import GreenContext
from ._native import _C
from ._probe import observed_sm_ids
from ._sm_partition import SMPartition

__all__ = ["GreenContext", "SMPartition"]
__version__ = "0.1.0"


def driver_version() -> int:
    """The CUDA driver's version as an int (13000 for 13.0); RuntimeError without a driver."""
    return _C.driver_version()


def live_counts() -> dict[str, int]:
    """What the native core holds now: green contexts, internal contexts, streams."""
    return dict(_C.live_counts())
