"""``python -m examples.pd.prefill_bound``: see :mod:`examples.pd.bench.prefill_bound`."""

from __future__ import annotations

import sys

from .bench.prefill_bound import main

if __name__ == "__main__":
    sys.exit(main())
