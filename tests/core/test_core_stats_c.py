"""The statistics and the recommendation rules of csrc/stats.c, checked in C without Python.

tests/core/c/stats_check.c is compiled with the system's C compiler (with AddressSanitizer
and UndefinedBehaviorSanitizer when the compiler has them) against csrc/stats.c,
csrc/columns.c, csrc/float64_text.c and csrc/pid_map.c only, and run: percentiles by
selection against a full sort on random, repeated, sorted, reversed, organ-pipe and constant
inputs up to 86,400 values; one table's statistics; the history rule of the recommendation;
the snapshot's column text; the pid map that counts each GPU process once.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ["csrc/stats.c", "csrc/columns.c", "csrc/float64_text.c", "csrc/pid_map.c"]


def _compiler():
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def _build(cc, out, sanitize):
    flags = ["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    cmd = [cc, *flags, "-I", os.path.join(ROOT, "csrc"), "-o", out]
    cmd += [os.path.join(ROOT, "tests/core/c/stats_check.c")]
    cmd += [os.path.join(ROOT, s) for s in SOURCES] + ["-lm"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
def test_stats_rules_in_c_without_python(tmp_path):
    cc = _compiler()
    out = str(tmp_path / "stats_check")
    built = _build(cc, out, sanitize=True)
    if built.returncode != 0:  # no sanitizer runtime: the plain build still checks the rules
        built = _build(cc, out, sanitize=False)
    assert built.returncode == 0, built.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="halt_on_error=1")
    env.pop("LD_PRELOAD", None)
    run = subprocess.run([out], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("ok "), run.stdout
    assert int(run.stdout.split()[1]) > 500  # every check ran
