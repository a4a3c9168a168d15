"""docs/migrating.md: its examples run as doctests, and its table names every 0.5 name."""

from __future__ import annotations

import doctest
import os

from resource_tracker._renamed import RENAMED

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "migrating.md")


def test_the_migration_page_examples_run():
    result = doctest.testfile(
        DOC,
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert result.attempted >= 30 and result.failed == 0


def test_the_migration_page_names_every_0_5_column_name():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    bare = [name for name in RENAMED if not name.startswith(("process_", "system_"))]
    missing = [name for name in bare if f"`{name}`" not in text and f"{name}`" not in text]
    assert not missing, missing
    assert "process_memory_mib" in text and "system_memory_used_mib" in text
