#!/usr/bin/env python3
"""The wheel/sdist lane: real packages, installed for real, on every Python we claim.

For each Python 3.9-3.13 that ``pyenv versions`` lists (or only the ones given with --python):

1. ``python -m build`` makes the sdist and, from it, the wheel (in a copy of the tracked files,
   so the checkout stays clean); no deprecation warning about the license is allowed;
2. the file lists are checked: the wheel holds every tracked file of the packages (report assets,
   .pyi, py.typed, data) plus the C extension and the license, and no tests; the sdist holds
   what a build needs (csrc/*.c and *.h, setup.py, pyproject.toml, README.md, LICENSE);
3. the wheel goes into one fresh venv and the sdist (compiled by pip) into another, each with
   metaflow, and tests/packaging/smoke.py runs from an empty folder outside the source tree,
   with no network when ``unshare --net`` works (endpoints point at a dead loopback port anyway).

Once, on the oldest Python, the package is also built with the oldest setuptools that
pyproject.toml's build-system allows. The classifiers must list exactly the Pythons tested.
pip and the build frontends reach PyPI through the usual pip cache. Prints what it ran and how
long each step took; exits non-zero on the first failure.

    python tests/packaging/check_dists.py                 # every Python 3.9-3.13 of pyenv
    python tests/packaging/check_dists.py --python 3.12   # one
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "tests", "packaging", "smoke.py")
SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13")
PACKAGES = ("resource_tracker/", "metaflow_extensions/")
SDIST_TOP = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")
LOOPBACK_DEAD_END = "http://127.0.0.1:9"
STARTED = time.monotonic()


class LaneError(Exception):
    pass


EMBEDDED_CATALOG = "resource_tracker/catalog/data/"


def say(text):
    print(f"=== dists ({time.monotonic() - STARTED:5.0f} s): {text}", flush=True)


def run(cmd, cwd=None, env=None, quiet=True):
    """Runs cmd; its output (stdout and stderr) as text, or LaneError with that output."""
    done = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE if quiet else None,
        stderr=subprocess.STDOUT if quiet else None,
        text=True,
    )
    if done.returncode != 0:
        raise LaneError(f"failed ({done.returncode}): {' '.join(map(str, cmd))}\n{done.stdout}")
    return done.stdout or ""


def tracked_files():
    """The repository's tracked files (what a fresh clone has)."""
    out = run(["git", "-C", ROOT, "ls-files", "-z"])
    return sorted(f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f)))


def copy_sources(files, dest):
    for rel in files:
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))


def pythons(wanted):
    """{minor: interpreter path} for the supported minors that pyenv has (newest patch)."""
    try:
        bare = run(["pyenv", "versions", "--bare"]).split()
    except (OSError, LaneError):
        bare = []
    found = {}
    for version in bare:
        m = re.fullmatch(r"(3\.\d+)\.(\d+)", version)
        if m and m.group(1) in SUPPORTED and (not wanted or m.group(1) in wanted):
            best = found.get(m.group(1))
            if best is None or int(m.group(2)) > int(best.rsplit(".", 1)[1]):
                found[m.group(1)] = version
    result = {}
    for minor, version in sorted(found.items(), key=lambda kv: int(kv[0].split(".")[1])):
        prefix = run(["pyenv", "prefix", version]).strip()
        result[minor] = os.path.join(prefix, "bin", "python")
    if not result and not wanted:  # no pyenv: the running interpreter alone
        result[f"{sys.version_info[0]}.{sys.version_info[1]}"] = sys.executable
    return result


def check_classifiers(tested):
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        claimed = set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', f.read()))
    if claimed != set(tested):
        raise LaneError(
            f"pyproject.toml classifiers claim Python {sorted(claimed)}, this lane tested "
            f"{sorted(tested)}: the classifiers must list exactly what is tested"
        )


def check_wheel(wheel, files):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {f for f in files if f.startswith(PACKAGES)}
    missing = sorted(want - names)
    if not any(re.fullmatch(r"resource_tracker/_core\..*(\.so|\.pyd)", n) for n in names):
        missing.append("resource_tracker/_core.*.so")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        missing.append("*.dist-info/licenses/LICENSE")
    extra = sorted(n for n in names if n.startswith(("tests/", "csrc/", "docs/")))
    if missing or extra:
        raise LaneError(f"{os.path.basename(wheel)}: missing {missing}, should not hold {extra}")
    return len(names)


def check_wheel_size(wheel):
    """The embedded catalog may add at most 2 MiB to the wheel (issue 12)."""
    with zipfile.ZipFile(wheel) as zf:
        catalog = sum(
            i.compress_size for i in zf.infolist() if i.filename.startswith(EMBEDDED_CATALOG)
        )
    if not catalog or catalog > 2 * 2**20:
        raise LaneError(
            f"{os.path.basename(wheel)}: embedded catalog {catalog} bytes (0 < x <= 2 MiB)"
        )
    say(f"the embedded catalog adds {catalog / 2**20:.2f} MiB to the wheel (budget 2 MiB)")


def check_sdist(sdist, files):
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        names = {n[len(top) + 1 :] for n in tar.getnames() if n.startswith(top + "/")}
    want = {f for f in files if f.startswith(PACKAGES + ("csrc/",)) or f in SDIST_TOP}
    missing = sorted(want - names)
    extra = sorted(n for n in names if n.endswith((".so", ".o", ".pyc")))
    if missing or extra:
        raise LaneError(f"{os.path.basename(sdist)}: missing {missing}, should not hold {extra}")
    return len(names)


def smoke_env(cache_dir):
    env = dict(os.environ)
    for var in ("PYTHONPATH", "VIRTUAL_ENV", "RESOURCE_TRACKER_METHOD"):
        env.pop(var, None)
    env.update(
        RESOURCE_TRACKER_METADATA_URL=LOOPBACK_DEAD_END,
        RESOURCE_TRACKER_KEEPER_URL=LOOPBACK_DEAD_END,
        RESOURCE_TRACKER_CATALOG_URL=LOOPBACK_DEAD_END + "/catalog.db.bz2",
        RESOURCE_TRACKER_CACHE_DIR=cache_dir,
        METAFLOW_HOME=cache_dir,
    )
    return env


def no_network_prefix():
    try:
        ok = subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode == 0
    except OSError:
        ok = False
    return ["unshare", "--net"] if ok else []


def install_and_smoke(python, target, where, times, label):
    """A fresh venv in where/venv with target (+ metaflow) installed; the smoke test run in an
    empty folder outside the source tree."""
    t0 = time.monotonic()
    venv = os.path.join(where, "venv")
    run([python, "-m", "venv", venv])
    vpy = os.path.join(venv, "bin", "python")
    pip = [vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
    run(pip + [target, "metaflow"])  # --no-compile: no .pyc for all of boto3, quicker to delete
    t1 = time.monotonic()
    rundir, out = os.path.join(where, "run"), os.path.join(where, "out")
    os.makedirs(rundir)
    os.makedirs(out)
    shutil.copy(SMOKE, rundir)
    cmd = no_network_prefix() + [vpy, "smoke.py", ROOT, out]
    print(run(cmd, cwd=rundir, env=smoke_env(os.path.join(where, "cache"))), end="", flush=True)
    times[f"{label} install"] = t1 - t0
    times[f"{label} smoke"] = time.monotonic() - t1


def lane_for(minor, python, files, src, work):
    times = {}
    base = os.path.join(work, f"py{minor}")
    say(f"Python {minor} ({python}): python -m build")
    t0 = time.monotonic()
    tools = os.path.join(base, "build-venv")
    run([python, "-m", "venv", tools])
    tpy = os.path.join(tools, "bin", "python")
    run([tpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "build"])
    dist = os.path.join(base, "dist")
    log = run([tpy, "-m", "build", "--outdir", dist, src])
    for warning in ("TOML table is deprecated", "License classifiers are deprecated"):
        if warning in log:
            raise LaneError(f"python -m build warns: {warning}\n{log}")
    times["build"] = time.monotonic() - t0
    (sdist,) = glob.glob(os.path.join(dist, "*.tar.gz"))
    (wheel,) = glob.glob(os.path.join(dist, "*.whl"))
    n_wheel, n_sdist = check_wheel(wheel, files), check_sdist(sdist, files)
    say(
        f"Python {minor}: {os.path.basename(wheel)} ({n_wheel} files, "
        f"{os.path.getsize(wheel) / 2**20:.2f} MiB) and {os.path.basename(sdist)} "
        f"({n_sdist} files, {os.path.getsize(sdist) / 2**20:.2f} MiB) hold what they must"
    )
    check_wheel_size(wheel)
    say(f"Python {minor}: the wheel in a fresh venv, smoke test")
    install_and_smoke(python, wheel, os.path.join(base, "wheel"), times, "wheel")
    say(f"Python {minor}: the sdist in a fresh venv (pip compiles it), smoke test")
    install_and_smoke(python, sdist, os.path.join(base, "sdist"), times, "sdist")
    return times


def oldest_setuptools(python, src, work):
    """Builds the wheel with the oldest setuptools that pyproject.toml allows."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        floor = re.search(r'"setuptools>=([\d.]+)"', f.read()).group(1)
    say(f"the oldest allowed setuptools ({floor}) on {python}")
    venv = os.path.join(work, "floor-venv")
    run([python, "-m", "venv", venv])
    vpy = os.path.join(venv, "bin", "python")
    run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"setuptools=={floor}"])
    out = os.path.join(work, "floor-dist")
    run([vpy, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", out, src])
    (wheel,) = glob.glob(os.path.join(out, "*.whl"))
    say(f"setuptools {floor} built {os.path.basename(wheel)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", help="a minor version, e.g. 3.12")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    found = pythons(args.python)
    if not found:
        raise LaneError(f"no Python {args.python or SUPPORTED} found (pyenv versions)")
    if not args.python:
        check_classifiers(found)
    say(f"Pythons: {', '.join(f'{m} ({p})' for m, p in found.items())}")
    work = tempfile.mkdtemp(prefix="rt-dists-")
    try:
        files = tracked_files()
        src = os.path.join(work, "src")
        copy_sources(files, src)
        all_times = {minor: lane_for(minor, py, files, src, work) for minor, py in found.items()}
        oldest_setuptools(next(iter(found.values())), src, work)
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            t0 = time.monotonic()
            shutil.rmtree(work, ignore_errors=True)
            say(f"removed the venvs and builds in {time.monotonic() - t0:.0f} s")
    for minor, times in all_times.items():
        say(f"Python {minor}: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    say(f"passed on Python {', '.join(found)} in {time.monotonic() - STARTED:.0f} s")


if __name__ == "__main__":
    try:
        main()
    except LaneError as exc:
        say(f"FAILED: {exc}")
        sys.exit(1)
