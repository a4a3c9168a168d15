"""The command line of the Python fuzz targets (fuzz_*.py): atheris instruments the code
imported so far and calls the target's test_one_input(data) with each input, taking
libFuzzer's flags and corpus directories from sys.argv."""

from __future__ import annotations

import sys
from typing import Callable


def fuzz(test_one_input: Callable[[bytes], None]) -> None:
    """Fuzzes test_one_input until libFuzzer stops (a crash, -max_total_time, ...)."""
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
