"""``python -m examples.pd.simulate``: see :mod:`examples.pd.bench.simulate`."""

from __future__ import annotations

import sys

from .bench.simulate import main

if __name__ == "__main__":
    sys.exit(main())
