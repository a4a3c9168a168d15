"""Loaded by every Python started by `make sanitize` (this directory is put on PYTHONPATH).

In the process started with the ASan runtime preloaded (the pytest process), it makes
``import resource_tracker._core`` load the ASan+UBSan build named by RESOURCE_TRACKER_CORE_SO
instead of the checkout's in-place build, and takes LD_PRELOAD and PYTHONMALLOC out of the
environment that children inherit: the workloads, CLI runs, Metaflow flows and Chromium the
tests start then run natively (with the normal build), so the sanitizer's overhead does not
distort what they measure and Chromium is not started under ASan.
"""

import importlib.abc
import importlib.util
import os
import sys

_SO = os.environ.get("RESOURCE_TRACKER_CORE_SO", "")


def _asan_loaded():
    try:
        with open("/proc/self/maps") as f:
            return "libasan" in f.read()
    except OSError:
        return False


class _SanitizedCore(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "resource_tracker._core":
            return importlib.util.spec_from_file_location(name, _SO)
        return None


if _SO and _asan_loaded():
    sys.meta_path.insert(0, _SanitizedCore())
    # kept for a test whose child loads this process's (instrumented) core by its path
    os.environ["RESOURCE_TRACKER_SANITIZE_PRELOAD"] = os.environ.get("LD_PRELOAD", "")
    os.environ.pop("LD_PRELOAD", None)
    os.environ.pop("PYTHONMALLOC", None)  # children keep CPython's own allocator
