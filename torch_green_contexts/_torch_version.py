"""The oldest PyTorch release this package supports, and the check made at import and build.

2.6 is the oldest release of the compatibility matrix (scripts/compat_matrix.sh) that builds
and passes the tests; older releases were not run. Plain Python, so that setup.py can load
this file without importing the package.
"""

from __future__ import annotations

import re

MINIMUM_TORCH = (2, 6)


def torch_release(version: str) -> tuple[int, int]:
    """(major, minor) of a torch version string such as "2.15.0+cu132" or "2.7.0a0+git1234"."""
    match = re.match(r"\s*(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"not a torch version: {version!r}")
    return int(match.group(1)), int(match.group(2))


def check_torch(version: str) -> None:
    """ImportError naming the minimum unless torch ``version`` is at least MINIMUM_TORCH."""
    if torch_release(version) < MINIMUM_TORCH:
        minimum = ".".join(map(str, MINIMUM_TORCH))
        raise ImportError(
            f"torch_green_contexts needs torch {minimum} or newer (the oldest release it is built "
            f"and tested against); torch {version} is installed: upgrade torch (pip install "
            f"'torch>={minimum}'), then rebuild this package against it"
        )
