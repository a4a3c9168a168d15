"""Fixtures of the reliability tests shared by several of their modules."""

from __future__ import annotations

import pytest
from reliability_helpers import nvml_hang_stub


@pytest.fixture(scope="session")
def hang_stub(tmp_path_factory):
    """The path of the hanging NVML stand-in (tests/reliability/nvml_hang.c), built once."""
    return nvml_hang_stub(tmp_path_factory.mktemp("nvml"))
