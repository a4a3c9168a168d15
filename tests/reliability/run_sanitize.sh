#!/usr/bin/env bash
# `make sanitize`: the whole test suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of the C core. The instrumented extension is built into build/sanitize/ (the checkout's
# in-place build stays as it is, usable by everyone else); the pytest process runs with
# PYTHONMALLOC=malloc (every Python allocation goes through ASan) and the ASan runtime
# preloaded, and sanitize_hook/sitecustomize.py makes it import the instrumented _core.
# Subprocesses the tests start (workloads, CLI, Metaflow, Chromium) run natively.
# detect_leaks=0: CPython's own allocations at exit are not ours to report; the leak tests
# (test_reliability_leaks.py, which read ASan's live-allocation count here) and valgrind
# (make valgrind) cover leaks. Any ASan or UBSan report aborts the run (halt_on_error=1).
# The default selection is the tests that reach C in the test process: the Metaflow flows,
# Chromium and the packaging builds run in processes of their own (natively, see above) and
# are left out (`make test` runs them). SANITIZE_WORKERS > 1: that many pytest-xdist workers,
# each started with the ASan runtime preloaded and PYTHONMALLOC=malloc (as the first process).
# Usage: tests/reliability/run_sanitize.sh [pytest args...]
#        (default: -m "not metaflow and not browser and not packaging" tests)
set -euo pipefail
PY=${PY:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$ROOT/build/sanitize
cd "$ROOT"
mkdir -p "$OUT"
RESOURCE_TRACKER_SANITIZE=1 "$PY" setup.py -q build_ext --build-lib "$OUT/lib" \
  --build-temp "$OUT/tmp" --force >"$OUT/build.log" 2>&1 || {
  cat "$OUT/build.log"
  echo "sanitize: the ASan+UBSan build failed (log above)" >&2
  exit 1
}
SO=$(ls "$OUT"/lib/resource_tracker/_core*.so)
ASAN_LIB=$(gcc -print-file-name=libasan.so)
UBSAN_LIB=$(gcc -print-file-name=libubsan.so)
export RESOURCE_TRACKER_CORE_SO=$SO
export PYTHONPATH=$HERE/sanitize_hook${PYTHONPATH:+:$PYTHONPATH}
export PYTHONMALLOC=malloc
# quarantine_size_mb=8: freed memory is held back (use-after-free detection) up to 8 MiB, so
# that the RSS of long loops levels off (the suite's RSS-based leak tests stay meaningful)
# The caller's options come first (ours win where both set one): e.g. ASAN_OPTIONS=log_path=/tmp/asan
# (and UBSAN_OPTIONS=log_path=...) keeps a report in a file, where a test's captured stderr
# would lose it when the process aborts.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:halt_on_error=1:quarantine_size_mb=8:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1
# the extension the tests load must be the instrumented one
LD_PRELOAD="$ASAN_LIB $UBSAN_LIB" "$PY" -c "
import resource_tracker._core as c
assert c.__file__ == '$SO', c.__file__
print('sanitize: ASan+UBSan build', c.__file__)"
if [ $# -eq 0 ]; then set -- -m "not metaflow and not browser and not packaging" tests; fi
WORKERS=${SANITIZE_WORKERS:-0}
XDIST=()
if [ "$WORKERS" -gt 1 ]; then
  PY_PATH=$(command -v "$PY")
  case $PY_PATH in /*) ;; *) PY_PATH=$ROOT/$PY_PATH ;; esac
  # each worker's interpreter: this one with the runtime preloaded (the first process takes
  # LD_PRELOAD out of its children's environment, see sanitize_hook/sitecustomize.py)
  printf '#!/bin/sh\nLD_PRELOAD="%s %s" PYTHONMALLOC=malloc exec "%s" "$@"\n' \
    "$ASAN_LIB" "$UBSAN_LIB" "$PY_PATH" >"$OUT/python-asan"
  chmod +x "$OUT/python-asan"
  # a worker that an ASan report aborts ends the run (a replaced one leaves xdist waiting)
  XDIST=(--dist loadfile --max-worker-restart=0 --tx "$WORKERS*popen//python=$OUT/python-asan")
fi
LD_PRELOAD="$ASAN_LIB $UBSAN_LIB" exec "$PY" -m pytest -p no:cacheprovider "${XDIST[@]}" "$@"
