"""Benchmarks of resource-tracker against the original resource-tracker 0.5.0, in one run.

Usage (what `make bench` runs):
    python3 bench/run.py --baseline-python .bench-venv/bin/python [--quick] [--json PATH]

Every figure comes from a fresh subprocess: bench/measure_ours.py with this Python, and
bench/measure_baseline.py with the bench venv's Python, where `resource_tracker` is the original
package with both of its backends (procfs and psutil). See bench/README.md for the method.
Prints a Markdown table: goal, ours, original (procfs), original (psutil), ratios, pass/fail.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:  # a test imports it with bench/ after tests/ (both have workloads.py)
    sys.path.insert(0, HERE)

import workloads as wl  # noqa: E402

LOOPBACK = "http://127.0.0.1:9"
BACKENDS = ("procfs", "psutil")


def bench_env():
    """The environment of every measurement: no cloud discovery, every endpoint on loopback."""
    env = dict(os.environ)
    env.update(
        RESOURCE_TRACKER_DISCOVER_CLOUD="0",
        RESOURCE_TRACKER_METADATA_URL=LOOPBACK,
        RESOURCE_TRACKER_KEEPER_URL=LOOPBACK,
        RESOURCE_TRACKER_CATALOG_URL=LOOPBACK + "/catalog.db.bz2",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("SENTINEL_API_TOKEN", None)  # the original would stream its samples there
    env.pop("RESOURCE_TRACKER_METHOD", None)
    return env


def netns_prefix():
    """['unshare', '-n'] when a private network namespace (loopback only) is available."""
    if shutil.which("unshare") is None:
        return []
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n"] if probe.returncode == 0 else []


class Runner:
    def __init__(self, baseline_python, quick):
        self.baseline_python = baseline_python
        self.quick = quick
        self.env = bench_env()
        self.netns = netns_prefix()

    def _json(self, cmd, cwd, timeout=300):
        proc = subprocess.run(
            cmd, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        return json.loads(lines[-1])

    def ours(self, task, *args):
        cmd = self.netns + [sys.executable, os.path.join(HERE, "measure_ours.py"), task]
        return self._json(cmd + [str(a) for a in args], cwd=ROOT)

    def original(self, backend, task, *args):
        script = os.path.join(HERE, "measure_baseline.py")
        cmd = self.netns + [self.baseline_python, script, task, "--backend", backend]
        # cwd outside the checkout, so that `import resource_tracker` finds the original
        return self._json(cmd + [str(a) for a in args], cwd="/tmp")

    def all_tools(self, task, *args):
        """{'ours': ..., 'procfs': ..., 'psutil': ...} for one task."""
        out = {"ours": self.ours(task, *args)}
        for backend in BACKENDS:
            out[backend] = self.original(backend, task, *args)
        return out


def progress(msg):
    sys.stderr.write(f"[bench {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def measure_per_sample(r, results):
    min_cpu = "0.3" if r.quick else "0.7"
    apart_n = "15" if r.quick else "60"
    progress("per-sample cost: 11-process tree (a shell with 10 sleeping children)")
    tree = wl.spawn_tree(10)
    try:
        for part in ("process", "system", "both"):
            results[f"tree_{part}"] = r.all_tools(
                "persample", "--pid", tree.pid, "--part", part, "--min-cpu", min_cpu
            )
        results["tree_both_apart"] = r.all_tools(
            "persample", "--pid", tree.pid, "--part", "both", "--gap", "0.05", "--n", apart_n
        )
    finally:
        wl.stop_group(tree)
    progress("per-sample cost: one process holding 4 GiB (touched)")
    big = wl.spawn_big(4)
    try:
        for part in ("process", "both"):
            results[f"big_{part}"] = r.all_tools(
                "persample", "--pid", big.pid, "--part", part, "--min-cpu", min_cpu
            )
        results["big_process_apart"] = r.all_tools(
            "persample", "--pid", big.pid, "--part", "process", "--gap", "0.05", "--n", apart_n
        )
    finally:
        wl.stop_group(big)


def measure_share(r, results):
    duration = "5" if r.quick else "20"
    for interval in ("1.0", "0.1"):
        progress(f"tracker CPU share, {interval} s interval, {duration} s per tool")
        results[f"share_{interval}"] = r.all_tools(
            "share", "--interval", interval, "--duration", duration
        )


def measure_memory(r, results):
    progress("extra memory of the tracked process (it holds a touched 200 MiB buffer)")
    # the columns grow by doubling: the growth per sample is taken over one doubling (n to 2n)
    few = 3000 if r.quick else 12000
    results["memory"] = {
        "ours": r.ours("memory", "--interval", "0.0002", "--few", few, "--samples", 2 * few),
    }
    for backend in BACKENDS:
        results["memory"][backend] = r.original(
            backend, "memory", "--interval", "0.1", "--samples", 20
        )


def _import_seconds(python, cwd, env):
    """Cumulative time of `import resource_tracker` in a fresh interpreter (-X importtime).

    CPython's own clock around the import: wall-clock differences of whole interpreters are
    lost in the noise on a loaded 2-vCPU machine.
    """
    done = subprocess.run(
        [python, "-X", "importtime", "-c", "import resource_tracker"],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    for line in done.stderr.splitlines():  # "import time: self | cumulative | name"
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "resource_tracker":
            return int(parts[1]) / 1e6
    raise RuntimeError(f"no import time of resource_tracker in: {done.stderr[-500:]}")


def import_time(python, cwd, env, repeat):
    """Median over `repeat` fresh interpreters of the import of resource_tracker (seconds)."""
    return statistics.median(_import_seconds(python, cwd, env) for _ in range(repeat))


def compile_ours(compiled):
    """Ours as a wheel install leaves it (pip byte-compiles at install, as it did for the
    original in the bench venv), or with no .pyc at all (every import compiles the source)."""
    cache = os.path.join(ROOT, "resource_tracker", "__pycache__")
    shutil.rmtree(cache, ignore_errors=True)
    if compiled:
        compileall.compile_dir(os.path.dirname(cache), quiet=1, maxlevels=0)


def measure_import_start_stop(r, results):
    repeat = 5 if r.quick else 9
    progress(f"import time (median of {repeat} fresh interpreters, python -X importtime)")
    compile_ours(False)
    results["import_source"] = import_time(sys.executable, ROOT, r.env, repeat)
    compile_ours(True)  # every measurement from here on: as installed
    results["import"] = {
        "ours": import_time(sys.executable, ROOT, r.env, repeat),
        "procfs": import_time(r.baseline_python, "/tmp", r.env, repeat),
    }
    results["import"]["psutil"] = results["import"]["procfs"]  # same import either way
    progress("start and stop times (median of fresh processes)")
    runs = {"ours": [], "procfs": [], "psutil": []}
    for _ in range(3 if r.quick else 5):
        runs["ours"].append(r.ours("startstop"))
        for backend in BACKENDS:
            runs[backend].append(r.original(backend, "startstop"))
    for key in ("start_s", "stop_s"):
        results[key] = {tool: statistics.median(x[key] for x in v) for tool, v in runs.items()}


# -- the table ---------------------------------------------------------------------------


def _ms(s):
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms"


def _us_or_ms(s):
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def _pct(x):
    return f"{x * 100:.4f}%" if x < 0.001 else f"{x * 100:.3f}%"


def _mib(kib):
    return f"{kib / 1024:.2f} MiB"


def _ratio(theirs, ours):
    if ours <= 0:
        return "inf" if theirs > 0 else "-"
    return f"{theirs / ours:.1f}x"


def build_rows(res):
    """[(measure, goal, ours, procfs, psutil, ratio procfs, ratio psutil, verdict)]."""
    rows = []

    def add(name, goal, vals, fmt, verdict):
        o, p, q = vals["ours"], vals["procfs"], vals["psutil"]
        rows.append((name, goal, fmt(o), fmt(p), fmt(q), _ratio(p, o), _ratio(q, o), verdict))

    def cost(key):
        return {t: res[key][t]["cpu_s"] for t in ("ours", "procfs", "psutil")}

    def ratio_goal(vals, factor):
        worst = min(vals["procfs"], vals["psutil"]) / max(vals["ours"], 1e-12)
        return "PASS" if worst >= factor else "FAIL"

    kids = {t: res["tree_process"][t]["children"] for t in ("ours", "procfs", "psutil")}
    add("CPU/sample, 11-proc tree: process part", "", cost("tree_process"), _us_or_ms, "")
    add("CPU/sample, system part", "", cost("tree_system"), _us_or_ms, "")
    v = cost("tree_both")
    add("CPU/sample, tree + system (back to back)", ">= 8x lower", v, _us_or_ms, ratio_goal(v, 8))
    v = cost("tree_both_apart")
    add("CPU/sample, tree + system (50 ms apart)", ">= 8x lower", v, _us_or_ms, ratio_goal(v, 8))
    v = cost("big_process")
    add("CPU/sample, 4 GiB process (back to back)", ">= 50x lower", v, _us_or_ms, ratio_goal(v, 50))
    v = cost("big_process_apart")
    add("CPU/sample, 4 GiB process (50 ms apart)", ">= 50x lower", v, _us_or_ms, ratio_goal(v, 50))
    add("CPU/sample, 4 GiB process + system", "", cost("big_both"), _us_or_ms, "")

    for interval, goal in (("1.0", "<= 0.05% of a core"), ("0.1", "")):
        sh = res[f"share_{interval}"]
        vals = {
            "ours": sh["ours"]["process_share"],
            "procfs": sh["procfs"]["helper_share"] + sh["procfs"]["process_share"],
            "psutil": sh["psutil"]["helper_share"] + sh["psutil"]["process_share"],
        }
        verdict = ("PASS" if vals["ours"] <= 0.0005 else "FAIL") if goal else ""
        add(f"tracker CPU share, {interval} s interval", goal, vals, _pct, verdict)

    mem = res["memory"]
    o = mem["ours"]

    def orig_extra(key, which):
        m = mem[key]
        return m["many"][which] - m["before"][which] + sum(h[which] for h in m["helpers"])

    def allowed_kib(samples):
        return 4 * 1024 + 300 * samples / 1024

    n1, n = o["first_n"], o["many_n"]
    for which, label in (("rss_kib", "RSS"), ("pss_kib", "PSS")):
        vals = {"ours": o["first"][which] - o["before"][which]}
        vals["procfs"] = orig_extra("procfs", which)
        vals["psutil"] = orig_extra("psutil", which)
        verdict = "PASS" if vals["ours"] <= allowed_kib(n1) else "FAIL"
        add(f"extra {label}, import + tracker + ~20 samples", "<= 4 MiB + 300 B/sample",
            vals, _mib, verdict)  # fmt: skip
    extra = o["many"]["rss_kib"] - o["before"]["rss_kib"]
    rows.append(
        (
            f"ours: extra RSS after {n} samples",
            f"<= {_mib(allowed_kib(n))}",
            _mib(extra),
            "-",
            "-",
            "-",
            "-",
            "PASS" if extra <= allowed_kib(n) else "FAIL",
        )  # fmt: skip
    )
    per_sample = (
        (o["many"]["rss_kib"] - o["few"]["rss_kib"]) * 1024 / max(1, o["many_n"] - o["few_n"])
    )
    rows.append(
        (
            f"ours: RSS growth per sample ({o['few_n']} to {n})",
            "<= 300 B",
            f"{per_sample:.0f} B",
            "-",
            "-",
            "-",
            "-",
            "PASS" if per_sample <= 300 else "FAIL",
        )  # fmt: skip
    )
    add("import resource_tracker", "<= 30 ms", res["import"], _ms,
        "PASS" if res["import"]["ours"] <= 0.030 else "FAIL")  # fmt: skip
    if "import_source" in res:
        rows.append(("ours: import compiling the source (no .pyc)", "<= 30 ms",
                     _ms(res["import_source"]), "-", "-", "-", "-",
                     "PASS" if res["import_source"] <= 0.030 else "FAIL"))  # fmt: skip
    add("ResourceTracker start", "<= 5 ms", res["start_s"], _ms,
        "PASS" if res["start_s"]["ours"] <= 0.005 else "FAIL")  # fmt: skip
    add("ResourceTracker stop", "<= 5 ms", res["stop_s"], _ms,
        "PASS" if res["stop_s"]["ours"] <= 0.005 else "FAIL")  # fmt: skip
    notes = [
        f"children seen in the 11-process tree: ours {kids['ours']:.0f}, original procfs "
        f"{kids['procfs']}, original psutil {kids['psutil']}",
        "tracker CPU share, ours: sampler thread "
        + ", ".join(
            f"{_pct(res[f'share_{i}']['ours']['sampler_share'])} at {i} s" for i in ("1.0", "0.1")
        )
        + "; original helpers count themselves as workload children: "
        + ", ".join(
            f"{res['share_1.0'][b]['children']} ({b})" for b in BACKENDS if b in res["share_1.0"]
        ),
        "the same share as CPU per sample: ours "
        + ", ".join(
            _us_or_ms(res[f"share_{i}"]["ours"]["process_share"] * float(i)) + f" at {i} s"
            for i in ("1.0", "0.1")
        ),
        f"memory samples: ours {n1}, original {mem['procfs']['many_n']} (procfs) and "
        f"{mem['psutil']['many_n']} (psutil); original helper RSS "
        + ", ".join(
            _mib(sum(h["rss_kib"] for h in mem[b]["helpers"]))
            + " / PSS "
            + _mib(sum(h["pss_kib"] for h in mem[b]["helpers"]))
            + f" ({b})"
            for b in BACKENDS
        ),
    ]
    return rows, notes


def render(rows, notes):
    head = ("measure", "goal", "ours", "original procfs", "original psutil",
            "ratio procfs", "ratio psutil", "verdict")  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines.append("")
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines)


def machine():
    """One line on the machine the figures come from."""
    cpus = os.cpu_count()
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return (
        f"{cpus} CPUs, {mem_kib / 1048576:.1f} GiB, Linux {os.uname().release}, "
        f"Python {sys.version.split()[0]}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", required=True, help="python of the bench venv")
    parser.add_argument("--quick", action="store_true", help="shorter runs (a smoke test)")
    parser.add_argument("--json", help="also write the raw results to this file")
    args = parser.parse_args()
    baseline = os.path.abspath(args.baseline_python)
    if not os.path.exists(baseline):
        sys.exit(f"{baseline} not found: make bench creates it (resource-tracker==0.5.0)")
    r = Runner(baseline, args.quick)
    if not r.netns:
        progress("no private network namespace (unshare -n): relying on discover_cloud=False")
    t0 = time.monotonic()
    results = {"machine": machine()}
    measure_import_start_stop(r, results)
    measure_per_sample(r, results)
    measure_memory(r, results)
    measure_share(r, results)
    progress(f"done in {time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    rows, notes = build_rows(results)
    print(f"resource-tracker vs resource-tracker 0.5.0 on {results['machine']}")
    print("ratio = original / ours (higher is better for ours)\n")
    print(render(rows, notes))
    failed = [row[0] for row in rows if row[-1] == "FAIL"]
    if failed:
        print(f"\nnot met: {', '.join(failed)}")


if __name__ == "__main__":
    main()
