"""``python -m examples.pd.prefill_rate``: see :mod:`examples.pd.bench.prefill_rate`."""

from __future__ import annotations

import sys

from .bench.prefill_rate import main

if __name__ == "__main__":
    sys.exit(main())
