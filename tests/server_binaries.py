"""Where the tests find the Prometheus and Pushgateway binaries: the project's
``.test-servers/usr/bin`` (Debian's binaries unpacked there by ``make test``,
tools/test_servers.sh: nothing installed in the system, no service started), else the PATH."""

from __future__ import annotations

import os
import shutil
from typing import Optional

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNPACKED = os.path.join(ROOT, ".test-servers", "usr", "bin")


def find_binary(name: str) -> Optional[str]:
    """The path of the binary `name` (prometheus, promtool, prometheus-pushgateway), or None."""
    local = os.path.join(UNPACKED, name)
    if os.access(local, os.X_OK):
        return local
    return shutil.which(name)


def need_binary(name: str) -> str:
    """The binary's path; the test is skipped, saying how to get it, when there is none."""
    path = find_binary(name)
    if path is None:
        pytest.skip(f"{name} is not there: `make deps-test` unpacks Debian's into .test-servers/")
    return path
