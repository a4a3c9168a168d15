# resource-tracker: every target installs what it needs and is quick when all is there.
# `make help` lists the targets.

# The project's virtual environment: the active one ($$VIRTUAL_ENV), else .venv/ made from
# BASE_PY. The system interpreter is never installed into (Debian's is externally managed).
BASE_PY   ?= python3
VENV      ?= $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),$(CURDIR)/.venv)
PY        := $(VENV)/bin/python
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMPS    := .make
APT_BUILD := python3-dev python3-venv libcurl4-openssl-dev libcjson-dev
# chromium: the browser tests of the report and dashboard; clang-format: lint; clang and
# libclang-rt-14-dev: the sanitizer and fuzz builds; valgrind: `make valgrind`
APT_TEST  := $(APT_BUILD) chromium clang-format clang libclang-rt-14-dev valgrind
# The real Prometheus and Pushgateway of the export tests (tests/export, tests/prometheus):
# Debian's binaries unpacked here (tools/test_servers.sh), not installed: no service started
TEST_SERVERS := .test-servers
FUZZ_SECONDS ?= 60
# pytest-xdist workers of `make test` and `make sanitize` (0: one process); tests are handed
# out a file at a time, so a module's fixtures (Chromium, a catalog) are made once. A worker
# that dies (a crash in C) ends the run, naming its test: xdist 3.8 replaces a crashed worker
# under --dist loadfile and then waits for ever (--max-worker-restart=0: no replacement)
TEST_WORKERS ?= 2
XDIST     := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --max-worker-restart=0)
BENCH_PY  := .bench-venv/bin/python
CSRC      := $(wildcard csrc/*.c csrc/*.h)

# An editable install of another checkout (or none, or another venv) makes the stamps stale.
INSTALLED := $(shell [ -x $(PY) ] && cd / && $(PY) -c "import importlib.util as u; s = u.find_spec('resource_tracker'); print(s.origin if s else '')" 2>/dev/null)
ifneq ($(INSTALLED),$(CURDIR)/resource_tracker/__init__.py)
$(shell rm -f $(STAMPS)/deps.stamp $(STAMPS)/deps-test.stamp)
endif

# Install the Debian packages in $(1) that are missing (tools/apt_ensure.sh: apt only when one is;
# when another apt/dpkg holds the lock it says so and waits, at most APT_LOCK_WAIT seconds).
APT_LOCK_WAIT ?= 300
define apt_ensure
	@SUDO="$(SUDO)" APT_LOCK_WAIT=$(APT_LOCK_WAIT) sh tools/apt_ensure.sh $(1)
endef

# setuptools' note on every editable install (a folder named like the package) is no news here.
PIP_QUIET := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: help demo test build deps deps-test lint format bench sanitize valgrind fuzz soak clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# The demo stays offline: no online catalog (Keeper API) unless RESOURCE_TRACKER_KEEPER_URL is set.
demo: deps build  ## track a short real workload (resource-tracker run), print the summary, write demo/
	RESOURCE_TRACKER_KEEPER_URL=$${RESOURCE_TRACKER_KEEPER_URL:-off} \
	  $(PY) -m resource_tracker run --interval 0.5 --output demo --format html,json,csv -- \
	  $(PY) examples/workload.py

test: deps-test build  ## build the extension and run the whole test suite (TEST_WORKERS processes)
	$(PY) -m pytest $(XDIST) --durations=20 tests

build: $(STAMPS)/build.stamp  ## (re)build the C extension in place when csrc/ changed

# _version.py: the C core carries the version (RT_VERSION); a stale one refuses to import
$(STAMPS)/build.stamp: $(CSRC) setup.py resource_tracker/_version.py $(STAMPS)/deps.stamp
	@mkdir -p $(STAMPS)
	$(PY) setup.py -q build_ext --inplace
	@touch $@

deps: $(STAMPS)/deps.stamp  ## Debian packages + `pip install -e .`
	$(call apt_ensure,$(APT_BUILD))

deps-test: $(STAMPS)/deps-test.stamp  ## deps plus test extras (pytest, metaflow, chromium, ...)
	$(call apt_ensure,$(APT_TEST))
	@SUDO="$(SUDO)" sh tools/test_servers.sh $(TEST_SERVERS)

# The venv: Debian's python3 needs python3-venv for it (ensurepip).
$(PY):
	$(call apt_ensure,python3-venv)
	$(BASE_PY) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel

$(STAMPS)/deps.stamp: pyproject.toml setup.py | $(PY)
	$(call apt_ensure,$(APT_BUILD))
	@mkdir -p $(STAMPS)
	$(PIP_QUIET) $(PY) -m pip install -q -e .
	@touch $@

$(STAMPS)/deps-test.stamp: pyproject.toml setup.py | $(PY)
	$(call apt_ensure,$(APT_TEST))
	@mkdir -p $(STAMPS)
	$(PIP_QUIET) $(PY) -m pip install -q -e '.[test]'
	@touch $@ $(STAMPS)/deps.stamp

lint: deps-test build  ## clang-format check of csrc/ and the C checks of tests/, ruff check and format check of Python, mypy --strict on the whole package and metaflow_extensions, import layering and lazy imports (tools/check_imports.py), stubtest of _core.pyi against the built extension, no Python function over 60 lines; no outside folder
	@if git grep -n -e '\.\.[/]shared' -- . ; then \
	  echo "lint: the files above name the shared folder beside the repository: a clone alone must build and test; put fixtures in tests/data/" >&2; exit 1; fi
	clang-format --dry-run --Werror csrc/*.c csrc/*.h tests/core/c/*.c fuzz/*.c
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy  # the modules and rules: [tool.mypy] in pyproject.toml
	$(PY) -m mypy.stubtest resource_tracker._core --mypy-config-file pyproject.toml  # _core.pyi = the built extension
	$(PY) tools/check_function_length.py --max 60
	$(PY) tools/check_imports.py  # no import cycle, no import up a layer, no import of ours in a function but LAZY's (docs/architecture.md)
	$(PY) tools/check_c_deps.py  # no circle between the C files of csrc/ (a call back into the file that calls it)

format: deps-test  ## rewrite C and Python in the project style
	clang-format -i csrc/*.c csrc/*.h tests/core/c/*.c fuzz/*.c
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

$(BENCH_PY):
	$(PY) -m venv .bench-venv
	$(BENCH_PY) -m pip install -q resource-tracker==0.5.0 psutil

bench: deps-test build $(BENCH_PY)  ## benchmarks side by side with resource-tracker==0.5.0 (see bench/README.md)
	$(PY) bench/run.py --baseline-python $(BENCH_PY)
	$(PY) bench/bench_import.py --baseline-python $(BENCH_PY)
	$(PY) bench/bench_tree.py --baseline-python $(BENCH_PY)
	$(PY) bench/bench_accuracy.py --baseline-python $(BENCH_PY)
	$(PY) bench/bench_scale.py --baseline-python $(BENCH_PY)
	$(PY) bench/bench_children.py  # child discovery on a quiet and a busy host (pid namespaces; root)
	$(PY) bench/bench_report.py
	$(PY) bench/bench_long.py
	$(PY) bench/bench_export.py
	$(PY) bench/bench_dashboard.py
	$(PY) bench/bench_tuning.py
	$(BENCH_PY) -m pip install -q py-spy
	$(PY) bench/bench_code.py --py-spy .bench-venv/bin/py-spy --repeat 3  # medians: one run of the 1 s cost varies by ~20 %
	$(PY) bench/bench_code_children.py --py-spy .bench-venv/bin/py-spy  # run --code's cost per child Python
	$(PY) bench/bench_code_short.py --py-spy .bench-venv/bin/py-spy  # a 20 s job at the default interval vs py-spy at 100 Hz

sanitize: deps-test  ## the tests that reach C (not Metaflow, Chromium, packaging) against an ASan+UBSan build
	PY=$(PY) SANITIZE_WORKERS=$(TEST_WORKERS) tests/reliability/run_sanitize.sh

valgrind: deps-test build  ## tests marked `valgrind` under memcheck and helgrind (valgrind/python.supp)
	PY=$(PY) valgrind/run.sh

fuzz: deps-test  ## every fuzz target of fuzz/ for FUZZ_SECONDS each (default 60; CI: 20)
	$(PY) -m pip install -q atheris
	$(PY) fuzz/run.py --seconds $(FUZZ_SECONDS)

soak: deps-test build  ## the full soak: 100,000 samples at 10 ms under a fork storm (~17 min)
	RESOURCE_TRACKER_SOAK_SAMPLES=100000 $(PY) -m pytest -s tests/reliability/test_reliability_soak.py

clean:  ## remove build products and stamps
	rm -rf build $(STAMPS) resource_tracker/*.so *.egg-info $(TEST_SERVERS)
