"""The package-level budget of issue 26: what `import resource_tracker` and a short tracked
run cost, ours against the original resource-tracker 0.5.0, side by side in one run.

Usage: python bench/bench_import.py --baseline-python .bench-venv/bin/python [--repeat N]
[--run-seconds S] [--json FILE]

Measured in fresh interpreters (median of N each, the two tools interleaved), ours as a wheel
install leaves it (byte-compiled, as pip left the original):
- import time: CPython's own clock around the import (`-X importtime`, the cumulative
  microseconds of `resource_tracker`);
- RSS after the import (VmRSS of the interpreter, minus its RSS before the import);
- a short tracked run (a tracker of the interpreter itself, 0.1 s interval, `--run-seconds`
  long, then stop()): the CPU seconds it took (the interpreter's and its reaped helper
  processes', getrusage) and the RSS at its end (VmRSS, plus the largest helper process's
  peak: the original samples in processes of its own).
Every process runs with the bench's loopback-only environment and, when available, in a
network namespace of its own (see bench/README.md, "Safety").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from run import ROOT, _import_seconds, bench_env, compile_ours, netns_prefix

#: One measurement in a fresh interpreter: RSS before and after the import, then a short run.
PROBE = """
import json, resource, sys, time
def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
before = rss_kib()
import resource_tracker
after = rss_kib()
c0, w0 = cpu(), time.monotonic()
tracker = resource_tracker.ResourceTracker(interval=0.1, autostart=False, discover_cloud=False)
tracker.start()
time.sleep({seconds})
tracker.stop()
c1, w1 = cpu(), time.monotonic()
helpers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({{"import_rss_kib": after - before, "run_cpu_s": c1 - c0,
                  "run_wall_s": w1 - w0, "run_rss_kib": rss_kib() + helpers}}))
"""

FIGURES = (  # key, what, unit scale, unit
    ("import_s", "import resource_tracker (-X importtime)", 1e3, "ms"),
    ("import_rss_kib", "RSS added by the import", 1 / 1024, "MiB"),
    ("run_cpu_s", "CPU of a short tracked run", 1e3, "ms"),
    ("run_rss_kib", "RSS at the end of the run", 1 / 1024, "MiB"),
)


def _probe(prefix, python, cwd, env, seconds):
    done = subprocess.run(
        prefix + [python, "-c", PROBE.format(seconds=seconds)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{python}: the probe failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_tools(python_ours, baseline, env):
    """Ours must be this checkout's package, the baseline the original 0.5.0."""
    where = "import resource_tracker, sys; print(resource_tracker.__file__)"
    ours = subprocess.run([python_ours, "-c", where], cwd=ROOT, env=env, capture_output=True)
    if not ours.stdout.decode().startswith(os.path.join(ROOT, "resource_tracker")):
        raise SystemExit(f"ours is not this checkout's package: {ours.stdout!r}")
    version = "from importlib.metadata import version; print(version('resource-tracker'))"
    found = subprocess.run([baseline, "-c", version], cwd="/tmp", env=env, capture_output=True)
    if found.stdout.decode().strip() != "0.5.0":
        raise SystemExit(f"the baseline is not resource-tracker 0.5.0: {found.stdout!r}")


def measure(baseline, repeat, seconds):
    """{tool: {figure: median}} for 'ours' and 'original'."""
    env, prefix = bench_env(), netns_prefix()
    _check_tools(sys.executable, baseline, env)
    compile_ours(True)  # as installed, as pip left the original
    tools = {"ours": (sys.executable, ROOT), "original": (baseline, "/tmp")}
    samples = {tool: {key: [] for key, *_ in FIGURES} for tool in tools}
    for i in range(repeat):
        sys.stderr.write(f"[bench_import] round {i + 1}/{repeat}\n")
        for tool, (python, cwd) in tools.items():
            samples[tool]["import_s"].append(_import_seconds(python, cwd, env))
            for key, value in _probe(prefix, python, cwd, env, seconds).items():
                if key in samples[tool]:
                    samples[tool][key].append(value)
    return {
        tool: {key: statistics.median(values) for key, values in figures.items()}
        for tool, figures in samples.items()
    }


def table(results):
    """The side-by-side table with the ratios (ours / original)."""
    lines = [f"{'figure':44} {'ours':>12} {'0.5.0':>12} {'ours/0.5.0':>11}"]
    for key, what, scale, unit in FIGURES:
        ours, original = results["ours"][key], results["original"][key]
        ratio = f"{ours / original:.2f}" if original else "-"
        lines.append(
            f"{what:44} {ours * scale:>9.2f} {unit:<2} {original * scale:>9.2f} {unit:<2} "
            f"{ratio:>11}"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", required=True, help="python of the bench venv")
    parser.add_argument("--repeat", type=int, default=9, help="fresh interpreters per figure")
    parser.add_argument("--run-seconds", type=float, default=3.0, help="the tracked run's length")
    parser.add_argument("--json", help="also write the medians to this file")
    args = parser.parse_args()
    results = measure(
        os.path.abspath(args.baseline_python),  # its runs start in /tmp
        args.repeat,
        args.run_seconds,
    )
    print(f"import and a short run (median of {args.repeat} fresh interpreters each)")
    print(table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
