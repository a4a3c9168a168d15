"""A build without its C dependencies stops with one clear message (setup.py, CheckedBuildExt).

The headers are really missing: each build runs in a private mount namespace
(``unshare --mount``) where an empty tmpfs is mounted over the header folder (cjson/, curl/,
the Python include folder), so the compiler finds nothing, as on a machine without the -dev
package; nothing changes outside that namespace. The namespace also has no network
(``unshare --net``), and the builds use the venv's setuptools (no build isolation), so nothing is
downloaded. Skipped where unshare cannot make namespaces (not root, no user namespaces)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "csrc", "resource_tracker")
GCC_NOISE = ("fatal error", "No such file or directory", "Traceback", "compilation terminated")


def _namespaces_work():
    try:
        return subprocess.run(["unshare", "--mount", "--net", "true"]).returncode == 0
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _namespaces_work(), reason="unshare --mount --net not allowed")


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory):
    """The files a build needs, copied without the in-place extension."""
    dest = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        src = os.path.join(ROOT, name)
        if os.path.isdir(src):
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        elif os.path.exists(src):
            shutil.copy(src, dest / name)
    return dest


def _curl_header_dirs():
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = ["/usr/include/curl", f"/usr/include/{multiarch}/curl", "/usr/local/include/curl"]
    return [d for d in dirs if os.path.isdir(d)]


def _build(cwd, hidden, argv, env=None):
    """Runs argv in cwd with each folder of hidden replaced by an empty one: the result."""
    script = 'for d in "$@"; do mount -t tmpfs none "$d" || exit 97; done; exec '
    script += " ".join(f"'{a}'" for a in argv)
    done = subprocess.run(
        ["unshare", "--mount", "--net", "sh", "-c", script, "sh", *hidden],
        cwd=cwd,
        env=dict(os.environ, **(env or {})),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 97, done.stderr
    return done


def _build_ext(cwd, hidden, env=None):
    return _build(cwd, hidden, [sys.executable, "setup.py", "-q", "build_ext"], env)


def _the_one_message(done):
    """The message's text; checks that there is one, and no compiler or Python traceback."""
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert out.count("resource-tracker cannot build its C core; missing:") == 1, out
    for noise in GCC_NOISE:
        assert noise not in out, out
    return out[out.index("resource-tracker cannot build") :]


def test_pip_install_without_cjson_headers_names_them_and_the_packages(source_copy):
    if not os.path.isdir("/usr/include/cjson"):
        pytest.skip("the cJSON headers are not installed here (nothing to hide)")
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps"]
    done = _build(source_copy, ["/usr/include/cjson"], pip + ["-w", "dist", "."])
    message = _the_one_message(done)
    assert "cjson/cJSON.h" in message
    assert "apt-get install libcjson-dev" in message
    assert "dnf install cjson-devel" in message
    assert "brew install cjson" in message
    assert "Python" not in message and "curl" not in message  # only what is missing


def test_missing_python_and_curl_headers_are_named_in_one_message(source_copy):
    hidden = [sysconfig.get_paths()["include"]] + _curl_header_dirs()
    done = _build_ext(source_copy, hidden)
    message = _the_one_message(done)
    assert f"Python {sys.version_info[0]}.{sys.version_info[1]} headers (Python.h)" in message
    assert "python3-dev" in message and "python3-devel" in message
    if _curl_header_dirs():
        assert "curl/curl.h" in message
        assert "libcurl4-openssl-dev" in message and "libcurl-devel" in message
    assert "cJSON" not in message


def test_no_compiler_is_named_before_any_header(source_copy):
    done = _build_ext(source_copy, [], env={"CC": "/nonexistent/cc"})
    message = _the_one_message(done)
    assert "a C compiler" in message
    assert "apt-get install build-essential" in message and "dnf install gcc" in message
    assert "xcode-select --install" in message
    assert "Python.h" not in message and "cJSON" not in message  # unchecked without a compiler


def test_the_portable_core_builds_without_cjson_and_curl_and_samples_with_psutil(source_copy):
    """RESOURCE_TRACKER_PORTABLE=1 needs neither cJSON nor libcurl: it builds with both hidden,
    and the package it makes tracks a real busy child with psutil (the lane runs the tests)."""
    pytest.importorskip("psutil")
    hidden = ["/usr/include/cjson"] * os.path.isdir("/usr/include/cjson") + _curl_header_dirs()
    argv = [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]
    done = _build(source_copy, hidden, argv, env={"RESOURCE_TRACKER_PORTABLE": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    code = textwrap.dedent(
        """
        import json, os, subprocess, sys
        from resource_tracker import ResourceTracker, _core
        spin = ("import os, sys, time\\nwhile time.process_time() < 0.5: pass\\n"
                "print(sum(os.times()[:2]), flush=True)\\nsys.stdin.read()\\n")
        child = subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)
        t = ResourceTracker(pid=child.pid, interval=0.2, discover_cloud=False)
        truth = float(child.stdout.readline())  # its CPU, spun; it now waits, using none
        assert t.wait_for_samples(t.n_samples + 2, 120)  # readings after the spin
        child.stdin.close()
        child.wait()
        t.stop()
        cpu = sum(t.process_metrics["utime"]) + sum(t.process_metrics["stime"])
        print(json.dumps({"procfs": _core.HAVE_PROCFS, "method": t.method, "cpu": cpu,
                          "truth": truth, "so": _core.__file__}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "RESOURCE_TRACKER_METHOD"}
    env["PYTHONPATH"] = str(source_copy)
    run = subprocess.run(
        [sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr

    out = json.loads(run.stdout)
    assert out["so"].startswith(str(source_copy))
    assert out["procfs"] is False and out["method"] == "psutil"
    # what the child spun (0.5 s of CPU, its own count; a reading taken after the spin, while
    # it waits): all of it but what it used before the tracker's first reading (its start-up)
    assert out["truth"] - 0.1 < out["cpu"] < out["truth"] + 0.05, out  # (+ its exit)
