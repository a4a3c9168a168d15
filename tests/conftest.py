"""Test-wide set-up: the network safety rule, the sampler backends and common helpers.

The backends: a test that takes the ``backend`` fixture runs once per sampler backend,
``c`` (the C procfs sampler, ``_core.Sampler``) and ``psutil`` (``PsutilSampler``), as
coverage.py runs its suite once per tracer: every tracker the test makes (also in
subprocesses: the choice is RESOURCE_TRACKER_METHOD) uses that backend. ``--backend c`` or
``--backend psutil`` runs one of them (default: both); a backend this machine lacks (the C
sampler in a portable build, psutil not installed) is skipped with the reason. Tests about one
backend's own machinery do not take the fixture and say why in their docstring or marker.

Every outbound endpoint of the product points at loopback for the whole session (set in
pytest_configure, before any fixture of any scope runs, and inherited by every subprocess)
and again for each test (an autouse fixture, undoing what a test changed), so that nothing
a test does can reach a cloud metadata service or any other non-loopback address. Port 9
(discard) on 127.0.0.1 has no listener here: a request that slips through fails at once
with "connection refused".
"""

from __future__ import annotations

import faulthandler
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

LOOPBACK_DEAD_END = "http://127.0.0.1:9"

NETWORK_OVERRIDES = {
    "RESOURCE_TRACKER_METADATA_URL": LOOPBACK_DEAD_END,
    "RESOURCE_TRACKER_KEEPER_URL": LOOPBACK_DEAD_END,
    "RESOURCE_TRACKER_CATALOG_URL": LOOPBACK_DEAD_END + "/catalog.db.bz2",
    # the exporters (off unless a test turns them on; their endpoints a dead end until then)
    "RESOURCE_TRACKER_PUSHGATEWAY_URL": LOOPBACK_DEAD_END,
    "OTEL_EXPORTER_OTLP_ENDPOINT": LOOPBACK_DEAD_END,
}

#: removed for every test: export is opt-in, and no other OTLP endpoint or header may apply
NETWORK_REMOVED = (
    "RESOURCE_TRACKER_EXPORT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SERVICE_NAME",
    "RESOURCE_TRACKER_EXPORT_COMMAND_LINE",
    # the other OTLP variables resource-tracker reads (both forms)
    *(
        f"OTEL_EXPORTER_OTLP_{form}{name}"
        for form in ("", "METRICS_")
        for name in ("TIMEOUT", "COMPRESSION", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY")
    ),
)

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(TESTS_DIR, "data")
sys.path.insert(0, DATA_DIR)  # make_data: the readers of the repository's catalog fixtures


PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")

_SESSION_CACHE = None


@dataclass(frozen=True)
class Backend:
    """One sampler backend of the suite: its id and the tracker's ``method`` for it."""

    name: str
    method: str


BACKENDS = {"c": Backend("c", "procfs"), "psutil": Backend("psutil", "psutil")}


def pytest_addoption(parser):
    parser.addoption(
        "--backend",
        choices=["both", *BACKENDS],
        default="both",
        help="the sampler backend(s) the tests taking the `backend` fixture run over: "
        "c (the C procfs sampler), psutil, or both (default)",
    )


def pytest_generate_tests(metafunc):
    """One run per selected backend of every test taking the ``backend`` fixture."""
    if "backend" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("backend")
        names = list(BACKENDS) if chosen == "both" else [chosen]
        metafunc.parametrize("backend", names, indirect=True, ids=names)


@pytest.fixture
def backend(request, monkeypatch):
    """The sampler backend of this run of the test (a Backend); every ResourceTracker,
    PidTracker and SystemTracker made without ``method`` uses it, also in subprocesses."""
    chosen = BACKENDS[request.param]
    if chosen.name == "c":
        from resource_tracker import _core

        if not _core.HAVE_PROCFS:
            pytest.skip("the C sampler: this build of the core has no procfs readers")
    else:
        pytest.importorskip("psutil", reason="the psutil backend needs psutil")
    monkeypatch.setenv("RESOURCE_TRACKER_METHOD", chosen.method)
    return chosen


#: how the C sampler finds a tree's new processes (RESOURCE_TRACKER_CHILD_DISCOVERY): from the
#: members' children lists (where the kernel has them), or by listing /proc
DISCOVERIES = ("auto", "listing")


@pytest.fixture(params=DISCOVERIES)
def discovery(request, monkeypatch):
    """The child discovery of this run of the test ('auto' or 'listing'): every C sampler a
    tracker makes uses it, also in subprocesses; 'auto' is skipped where procfs has no
    children lists (a kernel without CONFIG_PROC_CHILDREN)."""
    own_list = f"/proc/{os.getpid()}/task/{os.getpid()}/children"
    if request.param == "auto" and not os.path.exists(own_list):
        pytest.skip("this kernel has no /proc/<pid>/task/<tid>/children")
    monkeypatch.setenv("RESOURCE_TRACKER_CHILD_DISCOVERY", request.param)
    return request.param


#: the suite's parts that reach no C code in the test process (their own processes, tools or
#: builds): `-m "not metaflow and not browser and not packaging"` (make sanitize) leaves them out
PART_MARKERS = {
    "metaflow": "real Metaflow flows (their own processes)",
    "browser": "headless Chromium drawing the report",
    "packaging": "sdists, wheels and other builds of the package",
}


def _part_of(item):
    """The part marker of a test (PART_MARKERS) or None, from its file and what it imports."""
    rel = os.path.relpath(str(item.path), TESTS_DIR).replace(os.sep, "/")
    if rel.startswith(("metaflow/", "export/test_export_metaflow.py")):
        return "metaflow"
    if rel.startswith(("packaging/", "portable/")):
        return "packaging"
    if getattr(item.module, "chromium_path", None) is not None:  # imports report_browser
        return "browser"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        part = _part_of(item)
        if part:
            item.add_marker(getattr(pytest.mark, part))


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler plugin: _log_faults replaces it
def pytest_configure(config):
    """Loopback endpoints, a private catalog cache and Hypothesis folder for the whole session
    (all scopes); a fatal-signal log per process."""
    _log_faults(config)
    for name, text in PART_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    global _SESSION_CACHE
    _SESSION_CACHE = tempfile.mkdtemp(prefix="rt-test-cache-")
    os.environ.update(NETWORK_OVERRIDES)
    os.environ["RESOURCE_TRACKER_CACHE_DIR"] = _SESSION_CACHE
    # Hypothesis keeps its example database and caches in ./.hypothesis unless told otherwise
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(_SESSION_CACHE, "hypothesis")
    for name in PROXIES + NETWORK_REMOVED:
        os.environ.pop(name, None)


ROOT = os.path.dirname(TESTS_DIR)
#: what the suite may leave changed in the checkout: version control, virtual environments,
#: make's stamps, the interpreter's bytecode caches and the linters' caches
TREE_UNWATCHED = {
    ".git", ".venv", ".bench-venv", ".make", "__pycache__", ".pytest_cache", ".mypy_cache",
    ".ruff_cache",
}  # fmt: skip
#: folders of make targets that may run beside the suite (CI runs the fuzzers and the
#: sanitizer's build beside `make test`): their products, not a test's
TREE_UNWATCHED_PATHS = {os.path.join("build", "fuzz"), os.path.join("build", "sanitize")}


def _tree_state():
    """{path: (mtime_ns, size)} of every file of the checkout outside TREE_UNWATCHED."""
    state = {}
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [
            d
            for d in dirs
            if d not in TREE_UNWATCHED
            and os.path.relpath(os.path.join(top, d), ROOT) not in TREE_UNWATCHED_PATHS
        ]
        for name in files:
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            state[os.path.relpath(path, ROOT)] = (st.st_mtime_ns, st.st_size)
    return state


#: where each process of the session writes the Python stacks of all its threads if it dies
#: of a fatal signal (a pytest-xdist worker's own stderr dies with it); made by the first
#: process, inherited by the workers, printed at the end of the run
FAULT_DIR_VARIABLE = "RT_TEST_FAULT_DIR"
_fault_log = None


def _log_faults(config):
    """Every process of the session (controller and xdist workers) writes its fatal-signal
    stacks, of all threads, to its own file in the session's fault folder."""
    global _fault_log
    folder = os.environ.get(FAULT_DIR_VARIABLE)
    if not folder:
        folder = tempfile.mkdtemp(prefix="rt-test-faults-")
        os.environ[FAULT_DIR_VARIABLE] = folder
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    _fault_log = open(os.path.join(folder, f"{worker}-{os.getpid()}.log"), "w")
    faulthandler.enable(file=_fault_log, all_threads=True)
    if worker != "main" and os.environ.get(CORES_VARIABLE) == "1":
        hard = resource.getrlimit(resource.RLIMIT_CORE)[1]  # a dead worker leaves a core,
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))  # which the controller keeps


#: RT_TEST_CORES=1: the workers write a core dump when a fatal signal kills them (the limit
#: raised to the hard one), and the controller moves it, and any other core a test's process
#: left in the checkout, to a folder that stays, printing the crashing thread's C frames (the
#: limit is inherited by the tests' own processes, some of which crash on purpose: off by
#: default)
CORES_VARIABLE = "RT_TEST_CORES"
#: the kernel's name for a core dump (a path, relative to the dying process's folder, or a
#: "|handler" it is piped to)
CORE_PATTERN = "/proc/sys/kernel/core_pattern"
_SESSION_START = time.time()


def _core_pattern():
    try:
        with open(CORE_PATTERN) as f:
            return f.read().strip()
    except OSError:
        return "core"


def _new_cores(pid=None):
    """Core dumps written since the session started in the current folder (those of pid, or all)."""
    pattern = _core_pattern()
    if pattern.startswith("|"):
        return []
    names = glob.glob(re.sub(r"%.", "*", pattern)) + glob.glob("core.*")
    if pid is not None:  # the plain name "core" may be any process's: the newest is taken
        names = [n for n in names if str(pid) in os.path.basename(n) or "%p" not in pattern]
    return sorted(
        (n for n in set(names) if os.path.isfile(n) and os.path.getmtime(n) >= _SESSION_START),
        key=os.path.getmtime,
    )


def _move_core(core):
    """Moves a core dump to a folder of its own that stays: a sentence saying where, with the
    crashing thread's C frames when gdb is here."""
    kept = shutil.move(core, tempfile.mkdtemp(prefix="rt-test-core-"))
    return f"core dump: {kept} (gdb {sys.executable} {kept})\n{_crash_frames(kept)}"


def _keep_core(pid):
    """Where the core dump of the dead worker pid is kept (a sentence), or why there is none."""
    if os.environ.get(CORES_VARIABLE) != "1":
        return f"no core dump kept ({CORES_VARIABLE}=1 keeps one)"
    pattern = _core_pattern()
    if pattern.startswith("|"):
        return f"its core dump was piped to {pattern[1:].split()[0]} (coredumpctl, or its folder)"
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        return "no core dump: the hard core size limit is 0 (ulimit -Hc)"
    cores = _new_cores(pid)
    return "its " + _move_core(cores[-1]) if cores else f"no core dump found ({pattern!r})"


def _crash_frames(core):
    """The crashing thread's C frames in a core (gdb's backtrace), or "" without gdb."""
    if shutil.which("gdb") is None:
        return ""
    try:
        out = subprocess.run(
            ["gdb", "-q", "-batch", "-ex", "bt 25", sys.executable, core],
            capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    frames = dict.fromkeys(line for line in out.splitlines() if line.startswith("#"))
    return "\n".join(frames)  # gdb names the current frame before the backtrace: once


def _report_faults(folder):
    """Prints what a process that died of a fatal signal wrote (the controller only)."""
    for path in sorted(glob.glob(os.path.join(folder, "*.log"))):
        with open(path, errors="replace") as f:
            text = f.read().strip()
        if text:
            sys.stderr.write(f"\na test process died: {os.path.basename(path)}\n{text}\n")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A pytest-xdist worker that went down unasked: how its process ended (a signal's name,
    or its exit status), which its fault log cannot say when it was killed from outside."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if error is None or popen is None:
        return
    try:
        code = popen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        code = None
    if code is not None and code < 0:
        how = f"killed by {signal.Signals(-code).name}"
        if -code in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE):
            how += "; " + _keep_core(popen.pid)
    else:
        how = f"exit status {code}"
    sys.stderr.write(f"\na test worker went down ({node.gateway.id}): {how}\n")


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller of a pytest-xdist run
        session.config._rt_tree = _tree_state()


def pytest_sessionfinish(session, exitstatus):
    """Nothing a test does may write into the working tree: a file new, changed or removed
    since the session started fails the run, named (a test's output belongs in its tmp_path).
    With RT_TEST_CORES=1 the core dumps the tests' processes left are moved out first, named."""
    before = getattr(session.config, "_rt_tree", None)
    if before is None:
        return
    if os.environ.get(CORES_VARIABLE) == "1":
        for core in _new_cores():
            sys.stderr.write(f"\na test's process left a {_move_core(core)}\n")
    after = _tree_state()
    written = sorted(p for p, st in after.items() if before.get(p) != st)
    written += sorted(f"{p} (removed)" for p in before.keys() - after.keys())
    if written:
        sys.stderr.write(
            "\nthe test run wrote into the working tree (write into tmp_path instead):\n  "
            + "\n  ".join(written[:20])
            + "\n"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    if _SESSION_CACHE:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
    if not hasattr(config, "workerinput") and _fault_log is not None:
        faulthandler.disable()
        _report_faults(os.environ[FAULT_DIR_VARIABLE])
        shutil.rmtree(os.environ.pop(FAULT_DIR_VARIABLE), ignore_errors=True)


@pytest.fixture(autouse=True)
def _network_to_loopback(monkeypatch):
    """Point every endpoint of the product at loopback (tests may re-point at their mocks)."""
    for name, value in NETWORK_OVERRIDES.items():
        monkeypatch.setenv(name, value)
    # the catalog cache (downloaded dump, side indexes): per session, never the user's
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", _SESSION_CACHE)
    for name in PROXIES + NETWORK_REMOVED:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def python():
    """The interpreter running the tests, for subprocess workloads."""
    return sys.executable


@pytest.fixture(scope="session")
def catalog_dump():
    """{table: rows} of the real Spare Cores dump of 2026-01-31 (tests/data, see its README)."""
    import make_data

    return make_data.load_dump()
