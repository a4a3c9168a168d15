#!/usr/bin/env bash
# The portable-build lane: builds the C core as a non-Linux platform would
# (RESOURCE_TRACKER_PORTABLE=1: the portable sources only, csrc/platform.h) into a venv of its
# own, checks that the Linux readers are really out of it, and runs the psutil tests and the
# core tests that apply against that build (it has no procfs sampler: psutil samples).
#
#   tests/portable/run_lane.sh            # python3.11 of the project venv by default
#   BASE_PY=python3.13 tests/portable/run_lane.sh
#   tests/portable/run_lane.sh psutil/test_psutil_api.py -x   # other pytest arguments (from tests/)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
base_py=${BASE_PY:-$( [ -x "$root/.venv/bin/python" ] && echo "$root/.venv/bin/python" || echo python3)}
work=$(mktemp -d "${TMPDIR:-/tmp}/rt-portable.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
say() { echo "=== portable lane: $* ($(( SECONDS - started )) s)"; }

# The sources without any in-place build (a clone's files; the tests come along).
say "copying the sources to $work/src"
mkdir -p "$work/src"
tar -C "$root" --exclude='*.so' --exclude=__pycache__ --exclude=build --exclude='*.egg-info' \
    -cf - setup.py pyproject.toml README.md csrc resource_tracker metaflow_extensions tests \
  | tar -C "$work/src" -xf -

say "venv from $base_py"
"$base_py" -m venv "$work/venv"
py=$work/venv/bin/python
"$py" -m pip install -q --upgrade pip setuptools wheel psutil pytest pandas

say "building with RESOURCE_TRACKER_PORTABLE=1"
RESOURCE_TRACKER_PORTABLE=1 "$py" -m pip install -q --no-deps --no-build-isolation "$work/src"

# The build is the portable one: no procfs sampler, and no Linux-only call or path inside.
cd "$work"
so=$("$py" -c 'import resource_tracker._core as c; print(c.__file__)')
"$py" - <<'PY'
import resource_tracker
from resource_tracker import _core
from resource_tracker.tracker import _default_method
assert _core.HAVE_PROCFS is False, "the lane's build still has the procfs readers"
linux_parts = ("Sampler", "gpu_inventory", "discover_cloud", "keeper_servers")
present = [name for name in linux_parts if hasattr(_core, name)]
assert not present, f"Linux readers registered in the portable build: {present}"
assert _default_method() == "psutil", _default_method()
print("portable core:", _core.__file__)
print("  functions:", sorted(n for n in dir(_core) if not n.startswith("_")))
PY
linux_only='^(mremap|pthread_condattr_setclock|dlopen|dlsym|sysconf|statvfs|opendir|cJSON_.*|curl_.*)$'
imported=$(nm -D --undefined-only "$so" | awk '{print $NF}' | sed 's/@.*//')
if echo "$imported" | grep -Eq "$linux_only"; then
  echo "portable build imports Linux-only symbols:"; echo "$imported" | grep -E "$linux_only"; exit 1
fi
if strings "$so" | grep -q '/proc/'; then
  echo "portable build still reads /proc"; exit 1
fi
echo "  imports no Linux-only symbol ($(echo "$imported" | wc -l) symbols checked), no /proc path"

# The tests run from the copy, never from the checkout (whose resource_tracker/ holds the Linux
# build); cwd is tests/ so that the copy's resource_tracker/ folder does not shadow the install.
say "pytest: tests/psutil + the core tests that apply (sampler: psutil)"
cd "$work/src/tests"
if [ $# -eq 0 ]; then
  # the core behaviour tests run with the psutil backend (their `backend` fixture); left out:
  # test_core_system_rules.py (fake procfs trees for the C sampler) and the other modules
  # about the C sampler's own machinery (kernel high-water mark, CPU affinity cap)
  set -- psutil core/test_core_api.py core/test_core_accuracy.py core/test_core_registry.py \
    core/test_core_tiny_data_frame.py portable --backend psutil
fi
"$py" -m pytest -q -p no:cacheprovider "$@"
say "passed"
