"""``python -m examples.pd.timeline_report``: see :mod:`examples.pd.bench.timeline_report`."""

from __future__ import annotations

import sys

from .bench.timeline_report import main

if __name__ == "__main__":
    sys.exit(main())
