"""The file-list checks of the packaging lane (check_dists.py) catch what a package misses.

Real zip and tar archives are written with the layout of a wheel and an sdist; one file the
repository tracks is left out of each, and the check must name it."""

from __future__ import annotations

import io
import os
import sys
import tarfile
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_dists  # noqa: E402

TRACKED = [
    "csrc/table.h",
    "csrc/table.c",
    "setup.py",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "resource_tracker/__init__.py",
    "resource_tracker/report/report.css",
    "metaflow_extensions/resource_tracker/__init__.py",
    "tests/test_x.py",
]


def _wheel(path, names):
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, "x")
    return str(path)


def _sdist(path, names):
    with tarfile.open(path, "w:gz") as tar:
        for name in names:
            info = tarfile.TarInfo(f"resource_tracker-0.1.0/{name}")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    return str(path)


WHEEL_OK = [
    "resource_tracker/__init__.py",
    "resource_tracker/report/report.css",
    "resource_tracker/_core.cpython-311-x86_64-linux-gnu.so",
    "metaflow_extensions/resource_tracker/__init__.py",
    "resource_tracker-0.1.0.dist-info/licenses/LICENSE",
]
SDIST_OK = [f for f in TRACKED if not f.startswith("tests/")] + ["PKG-INFO"]


def test_complete_packages_pass(tmp_path):
    assert check_dists.check_wheel(_wheel(tmp_path / "a.whl", WHEEL_OK), TRACKED) == 5
    assert check_dists.check_sdist(_sdist(tmp_path / "a.tar.gz", SDIST_OK), TRACKED) == 10


def test_a_wheel_without_a_report_asset_or_the_extension_is_named(tmp_path):
    names = [n for n in WHEEL_OK if not n.endswith((".css", ".so"))] + ["tests/test_x.py"]
    with pytest.raises(check_dists.LaneError) as err:
        check_dists.check_wheel(_wheel(tmp_path / "b.whl", names), TRACKED)
    assert "resource_tracker/report/report.css" in str(err.value)
    assert "resource_tracker/_core.*.so" in str(err.value)
    assert "should not hold ['tests/test_x.py']" in str(err.value)


def test_an_sdist_without_a_header_is_named(tmp_path):
    names = [n for n in SDIST_OK if n != "csrc/table.h"]
    with pytest.raises(check_dists.LaneError, match=r"missing \['csrc/table.h'\]"):
        check_dists.check_sdist(_sdist(tmp_path / "b.tar.gz", names), TRACKED)
