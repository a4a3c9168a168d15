#!/usr/bin/env bash
# The suite on a loaded machine, as a shared CI runner sees it: a fresh clone of a repository's
# HEAD, `make deps-test build`, then `make test` (the README's command) beside BUSY busy-loop
# processes (default 8: a 1-minute load of ~10 on 2 cores). A dead test worker fails the run
# (--max-worker-restart=0); core dumps are on. The clone and its logs stay in a temporary
# directory, printed at the start.
#
# Usage: tools/load_run.sh [REPO] [RUNS]   (REPO default: this checkout; RUNS default 1: runs
#        one after another, each with its own fresh clone and busy loops). Exit 0 when all pass.
set -uo pipefail
REPO=${1:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}
RUNS=${2:-1}
BUSY=${BUSY:-8}
GUARD_S=${GUARD_S:-3600} # a run that hangs is stopped (and fails) after this long

one_run() {
  local dir rc t0 pids=()
  dir=$(mktemp -d /tmp/load-run.XXXX)
  git clone -q "$REPO" "$dir/x" && cd "$dir/x" || return 1
  echo "load run $1: $(git log --oneline -1) in $dir/x at $(date -u +%T)"
  if ! make deps-test build >"$dir/setup.log" 2>&1; then
    echo "load run $1: set-up failed ($dir/setup.log)"
    tail -20 "$dir/setup.log"
    return 1
  fi
  ulimit -c unlimited
  for _ in $(seq "$BUSY"); do
    python3 -c 'while 1: pass' &
    pids+=($!)
  done
  t0=$SECONDS
  PYTEST_ADDOPTS="-v --max-worker-restart=0" timeout "$GUARD_S" make test >"$dir/test.log" 2>&1
  rc=$?
  kill "${pids[@]}"
  echo "load run $1: make test exit $rc in $((SECONDS - t0)) s, beside $BUSY busy loops ($dir/test.log)"
  grep -E "^(FAILED|ERROR)|went down|Fatal Python|[0-9]+ (passed|failed)" "$dir/test.log" | tail -15
  return "$rc"
}

failed=0
for n in $(seq "$RUNS"); do
  (one_run "$n") || failed=$((failed + 1))
done
echo "load runs: $((RUNS - failed)) of $RUNS passed"
[ "$failed" -eq 0 ]
