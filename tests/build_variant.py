"""Which build of the C core the tests run against (csrc/platform.h).

The Linux build has the procfs readers (``_core.HAVE_PROCFS``); the portable build
(RESOURCE_TRACKER_PORTABLE=1, or a non-Linux platform) has not, and samples with psutil.
The portable lane (tests/portable/run_lane.sh) runs the tests that apply to it; a test about
the C procfs sampler itself is marked ``needs_procfs``."""

from __future__ import annotations

import pytest

from resource_tracker import _core

HAVE_PROCFS = bool(_core.HAVE_PROCFS)

needs_procfs = pytest.mark.skipif(
    not HAVE_PROCFS,
    reason="about the C procfs sampler, which this build of the core leaves out (portable build)",
)
