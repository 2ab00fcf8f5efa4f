"""``python -m benchmarks.calibrate``: the installed ``tp-calibrate`` (`tp_dialect.tools
.tp_calibrate`), same options and output, kept for ``make bench`` habits and older notes."""

from __future__ import annotations

import sys

from tp_dialect.tools.tp_calibrate import main

if __name__ == "__main__":
    sys.exit(main())
