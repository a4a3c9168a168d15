#!/usr/bin/env bash
# `make valgrind`: the tests marked `valgrind` (pytest -m valgrind) under memcheck and then
# helgrind, with valgrind/python.supp for CPython's own noise. Fails on any error not suppressed
# (memcheck: invalid reads/writes, uninitialised values, definite leaks from the C core;
# helgrind: data races, lock misuse and lock-order problems in the C core).
# RESOURCE_TRACKER_VALGRIND=1 makes the marked tests do fewer repetitions (valgrind is ~50x
# slower); the leak figures of the leak tests are then informational: valgrind's own leak
# check is the judge.
set -uo pipefail
PY=${PY:-python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUPP=$ROOT/valgrind/python.supp
cd "$ROOT"
PY=$("$PY" -c "import sys; print(sys.executable)")  # the interpreter itself, not a shim script
export PYTHONMALLOC=malloc RESOURCE_TRACKER_VALGRIND=1
TESTS=${*:-tests/reliability}
status=0
# VALGRIND_LOG_DIR: where the logs go (default build/; CI gives a folder outside the tree, as
# its two lanes run memcheck and helgrind side by side and the suite checks that nothing it
# runs writes into the checkout)
LOG_DIR=${VALGRIND_LOG_DIR:-$ROOT/build}
for tool in ${VALGRIND_TOOLS:-memcheck helgrind}; do
  log=$LOG_DIR/valgrind-$tool.log
  mkdir -p "$LOG_DIR"
  if [ $tool = memcheck ]; then
    opts="--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite"
  else
    opts="--history-level=approx"
  fi
  start=$(date +%s)
  # --trace-children=no: the workloads the tests start run natively. --fair-sched=yes: valgrind
  # runs one thread at a time; without a fair hand-over a thread spinning in Python takes the
  # GIL back again and again and the others starve (a test took 1.7 s or 50 s, by chance)
  valgrind --tool=$tool $opts --fair-sched=yes --suppressions="$SUPP" --error-exitcode=99 \
    --num-callers=30 \
    --log-file="$log" "$PY" -m pytest -p no:cacheprovider -q -m valgrind $TESTS
  rc=$?
  errors=$(grep -E "ERROR SUMMARY" "$log" | tail -1)
  echo "valgrind $tool: exit $rc, $(( $(date +%s) - start )) s, ${errors#==*== } (log $log)"
  if [ $rc -ne 0 ]; then
    status=1
    grep -B2 -A30 -E "^==[0-9]+== (Invalid|Conditional|Use of|Possible data race|Thread #[0-9]+:|[0-9,]+ bytes in [0-9,]+ blocks are definitely)" "$log" | head -150
  fi
done
exit $status
