"""What `make test` installs in the system: Debian packages (the Makefile's APT_TEST), none of
which starts a service; the Prometheus and Pushgateway of the export tests are Debian's
binaries unpacked into the project (tools/test_servers.sh), and the README lists it all."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _make_variables():
    """{name: [words]} of the Makefile's `NAME := words` lines ($(OTHER) expanded)."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read().replace("\\\n", " ")
    found = {}
    for name, value in re.findall(r"^([A-Z_]+)\s*:=\s*(.*)$", text, re.M):
        words = []
        for word in value.split("#")[0].split():
            ref = re.fullmatch(r"\$\(([A-Z_]+)\)", word)
            words += found.get(ref.group(1), []) if ref else [word]
        found[name] = words
    return found


def _files_of(package):
    done = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, timeout=60)
    return done.stdout.splitlines() if done.returncode == 0 else None


def test_make_test_installs_no_package_that_starts_a_service():
    """Each package `make test` apt-installs ships no systemd unit and no init script (Debian
    enables and starts those on install); checked on the packages installed here."""
    packages = _make_variables()["APT_TEST"]
    assert "chromium" in packages and "prometheus" not in packages
    checked = 0
    for package in packages:
        files = _files_of(package)
        if files is None:
            continue  # not installed on this machine: nothing to read
        checked += 1
        services = [
            f
            for f in files
            if re.search(r"/systemd/system/[^/]+\.(service|socket|timer)$", f)
            or f.startswith("/etc/init.d/")
        ]
        assert services == [], (package, services)
    if checked == 0:
        pytest.skip("none of the packages is installed here (dpkg)")


def test_the_readme_lists_what_make_test_installs():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    found = _make_variables()
    for package in set(found["APT_TEST"]) - set(found["APT_BUILD"]):
        assert f"`{package}`" in readme, package
    assert "tools/test_servers.sh" in readme and ".test-servers/" in readme
