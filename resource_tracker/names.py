"""Column names of the two tables and their readable labels, from the column registry."""

from __future__ import annotations

from typing import Dict, Tuple

from .registry import PROCESS, SYSTEM

PROCESS_COLUMNS: Tuple[str, ...] = tuple(c.name for c in PROCESS)
SYSTEM_COLUMNS: Tuple[str, ...] = tuple(c.name for c in SYSTEM)
SYSTEM_LABELS: Dict[str, str] = {c.name: c.label for c in SYSTEM}
PROCESS_LABELS: Dict[str, str] = {c.name: c.label for c in PROCESS if c.name != "timestamp"}

__all__ = ["PROCESS_COLUMNS", "SYSTEM_COLUMNS", "SYSTEM_LABELS", "PROCESS_LABELS"]
