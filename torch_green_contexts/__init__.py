"""CUDA green contexts for PyTorch: the API of ``torch.cuda.green_contexts``, on any driver
from 12.4, without cuda-python, with disjoint splits on every driver.

>>> from torch_green_contexts import GreenContext
>>> latency, batch = GreenContext.split(num_sms=(16, 0), backfill=(False, True))
>>> with torch.cuda.stream(latency.Stream()):
...     y = model(x)
"""

from __future__ import annotations

import warnings

from . import _validation
from ._available import is_available
from ._errors import DriverError, FeatureUnavailableError, SplitError
from ._green_context import GreenContext
from ._install import install, installed, uninstall
from ._locality import get_num_locality_domains, is_localization_supported
from ._native import _C
from ._probe import observed_sm_ids
from ._sm_count import sm_count
from ._sm_partition import SMPartition

# torch.cuda.green_contexts' names first (torch 2.15's __all__), then the package's own.
__all__ = [
    "GreenContext", "SMPartition", "get_num_locality_domains", "is_localization_supported",
    "install", "installed", "uninstall",
    "driver_version", "live_counts", "release_idle_contexts", "set_idle_context_limit", "observed_sm_ids",
    "sm_count", "is_available", "DriverError", "FeatureUnavailableError", "SplitError",
]
__version__ = "0.1.0"
_MOST_IDLE = (1 << 64) - 1  # the core keeps the limit as a 64-bit count


def _warn_of_a_bad_idle_limit() -> None:
    """At import, a RuntimeWarning when ``TORCH_GREEN_CONTEXTS_IDLE_LIMIT`` is set to anything
    but a whole number the core takes. Import itself does not fail (code may import the package
    only to ask :func:`is_available`, and ``python -m torch_green_contexts`` must run to report
    it); making a green context raises the same ValueError until the variable is fixed, so a
    mistyped limit is never replaced by the default without a word."""
    try:
        _C.check_idle_limit_env()
    except ValueError as error:
        warnings.warn(f"{error}. Making a green context raises this ValueError until the variable is "
                      f"fixed or unset.", RuntimeWarning, stacklevel=2)


_warn_of_a_bad_idle_limit()


def driver_version() -> int:
    """The CUDA driver's version as an int (13000 for 13.0); RuntimeError without a driver."""
    version: int = _C.driver_version()
    return version


def live_counts() -> dict[str, int]:
    """What the native core holds now: green contexts in use (``contexts``, and
    ``internal_contexts`` made by emulated splits), their ``streams``, and the contexts kept
    idle for reuse (``idle_contexts``, ``idle_streams``)."""
    return dict(_C.live_counts())


def release_idle_contexts() -> None:
    """Destroy the green contexts kept idle for reuse.

    A dropped GreenContext is not destroyed: its streams are synchronised and the context waits
    (up to :func:`set_idle_context_limit` of them) for the next GreenContext made from the same
    SMs with the same options, which then costs microseconds instead of milliseconds. On driver
    13.0 destroying a green context does not give its device memory back, so keeping it costs
    nothing more than destroying it.
    """
    _C.release_idle_contexts()


def set_idle_context_limit(limit: int) -> int:
    """Keep at most ``limit`` idle green contexts for reuse (0: destroy contexts when they are
    dropped); returns the previous limit. The default is 16, or the value of the environment
    variable ``TORCH_GREEN_CONTEXTS_IDLE_LIMIT`` (a whole number; any other value warns at import
    and makes every new context a ValueError)."""
    limit = _validation.as_int_at_least("limit", limit, 0)
    if limit > _MOST_IDLE:
        raise RuntimeError(f"limit must be between 0 and {_MOST_IDLE} idle green contexts, got {limit}")
    previous: int = _C.idle_context_limit()
    _C.set_idle_context_limit(limit)
    return previous
