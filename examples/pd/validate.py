"""``python -m examples.pd.validate``: see :mod:`examples.pd.bench.validate`."""

from __future__ import annotations

import sys

from .bench.validate import main

if __name__ == "__main__":
    sys.exit(main())
