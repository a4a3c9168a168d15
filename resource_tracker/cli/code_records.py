"""`run --code`: the agents' records read back from their directory (the reader is the
library's, ``resource_tracker/_agent_records.py``: a code-profiled tracker reads its workers'
records the same way)."""

from __future__ import annotations

from .._agent_records import (
    MAX_RECORD_BYTES,
    RECORD_VERSION,
    collect,
    read_record,
    read_records,
    workload_only,
)

__all__ = [
    "MAX_RECORD_BYTES",
    "RECORD_VERSION",
    "collect",
    "read_record",
    "read_records",
    "workload_only",
]
