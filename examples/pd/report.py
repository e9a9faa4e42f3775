"""``python -m examples.pd.report``: see :mod:`examples.pd.bench.report`."""

from __future__ import annotations

import sys

from .bench.report import main

if __name__ == "__main__":
    sys.exit(main())
