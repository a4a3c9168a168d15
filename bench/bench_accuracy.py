"""Accuracy side by side: ours and the original resource-tracker 0.5.0 (procfs and psutil
backends) track the same real workloads at 1 s and 0.1 s; each workload measures its own
ground truth (PSS sum over its processes while they hold their memory; its CPU time from
os.times(), children included). Prints a Markdown table: scenario, truth, what each read,
error. docs/metrics.md shows a run of it.

Usage (`make bench` runs it):
    python bench/bench_accuracy.py --baseline-python .bench-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from run import bench_env, machine, netns_prefix, progress  # noqa: E402

PRELUDE = """
import json, os, sys, time
go, out = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.01)
def pss(pids):
    total = 0
    for p in pids:
        with open(f"/proc/{p}/smaps_rollup") as f:
            total += sum(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    return total / 1024
def truth(**kw):
    with open(out, "w") as f:
        json.dump(kw, f)
def touch(n):
    b = bytearray(n << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return b
"""

SCENARIOS = {
    "fork: 4 workers share 400 MiB, then write 50 MiB each": (
        "MiB",
        """
buf = touch(400)
pids = []
for k in range(4):
    time.sleep(0.3)
    pid = os.fork()
    if pid == 0:
        s = sum(buf[i] for i in range(0, len(buf), 4096))
        time.sleep(3)
        own = touch(50)
        time.sleep(3)
        os._exit(0)
    pids.append(pid)
time.sleep(4.5)
peak = pss([os.getpid()] + pids)
try:
    while True:
        os.wait()
except ChildProcessError:
    pass
""",
    ),
    "Pool(4) fork, 100 MiB per worker": ("MiB", "POOL:fork"),
    "Pool(4) spawn, 100 MiB per worker": ("MiB", "POOL:spawn"),
    "8 busy threads (CPU s)": (
        "CPU s",
        """
import hashlib, threading
data = os.urandom(1 << 20)
def busy():
    end = time.monotonic() + 3
    while time.monotonic() < end:
        hashlib.sha256(data).digest()
ts = [threading.Thread(target=busy) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
""",
    ),
    "15 children of 0.08 s each (CPU s)": (
        "CPU s",
        """
import subprocess
code = "import time\\nend=time.monotonic()+0.08\\nwhile time.monotonic()<end: pass"
for _ in range(15):
    subprocess.run([sys.executable, "-c", code])
""",
    ),
    "a 300 MiB spike of 0.05 s": (
        "MiB",
        """
time.sleep(1.3)
b = touch(300)
time.sleep(0.05)
peak = pss([os.getpid()])
del b
time.sleep(1.5)
""",
    ),
}

POOL = """
import multiprocessing
sys.path.insert(0, os.path.dirname(out))
from pool_task import hold
flags = out + ".flags"
os.mkdir(flags)
with multiprocessing.get_context(METHOD).Pool(4) as pool:
    res = pool.map_async(hold, [flags] * 4, chunksize=1)
    while len(os.listdir(flags)) < 4:
        time.sleep(0.05)
    time.sleep(0.3)
    peak = pss([os.getpid()] + [p.pid for p in multiprocessing.active_children()])
    time.sleep(2.5)
    open(os.path.join(flags, "release"), "w").close()
    res.get()
"""

POOL_TASK = """
import os, time
def hold(flags):
    b = bytearray(100 << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    open(os.path.join(flags, str(os.getpid())), "w").close()
    while not os.path.exists(os.path.join(flags, "release")):
        time.sleep(0.05)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
"""

EPILOGUE = """
t = os.times()
truth(peak=locals().get("peak"), cpu=t.user + t.system + t.children_user + t.children_system)
"""


def script_for(body, folder):
    if body.startswith("POOL:"):
        with open(os.path.join(folder, "pool_task.py"), "w") as f:
            f.write(POOL_TASK)
        body = POOL.replace("METHOD", repr(body.split(":")[1]))
    return PRELUDE + body + EPILOGUE


def run_one(tool_python, backend, body, interval, env, netns):
    with tempfile.TemporaryDirectory() as folder:
        go, out, ready = (os.path.join(folder, n) for n in ("go", "truth.json", "ready"))
        work = subprocess.Popen([sys.executable, "-c", script_for(body, folder), go, out])
        cmd = netns + [tool_python, os.path.join(HERE, "track_pid.py"), "--pid", str(work.pid)]
        cmd += ["--interval", str(interval), "--backend", backend, "--ready", ready]
        cwd = ROOT if backend == "ours" else "/tmp"  # /tmp: the original is imported there
        tracker = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=cwd)
        deadline = time.monotonic() + 60
        while not os.path.exists(ready) and tracker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        open(go, "w").close()
        # not reaped until the tracker is done: its last reading sees the final CPU totals
        os.waitid(os.P_PID, work.pid, os.WEXITED | os.WNOWAIT)
        stdout, _ = tracker.communicate(timeout=120)
        work.wait()
        with open(out) as f:
            truth = json.load(f)
    try:
        return truth, json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return truth, None


def cell(value, truth, unit):
    if value is None or not truth:
        return "n/a"
    digits = 0 if unit == "MiB" else 2
    return f"{value:.{digits}f} / {truth:.{digits}f} {unit} ({(value - truth) / truth:+.0%})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", required=True)
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args()
    env, netns = bench_env(), netns_prefix()
    tools = [("ours", sys.executable, "ours")]
    baseline = os.path.abspath(args.baseline_python)
    tools += [(f"0.5.0 {b}", baseline, b) for b in ("procfs", "psutil")]
    rows, raw = [], []
    for name, (unit, body) in SCENARIOS.items():
        for interval in (1.0, 0.1):
            cells = []
            for label, python, backend in tools:
                progress(f"{name} at {interval} s: {label}")
                truth, got = run_one(python, backend, body, interval, env, netns)
                truth_value = truth["peak" if unit == "MiB" else "cpu"]
                value = got and (got["peak_mib"] if unit == "MiB" else got["cpu_s"])
                raw.append({"scenario": name, "interval": interval, "tool": label,
                            "truth": truth_value, "read": value, "tracker": got})  # fmt: skip
                cells.append(cell(value, truth_value, unit))
                if backend == "ours" and unit == "MiB":
                    cells.append(cell(got and got.get("hwm_mib"), truth_value, unit))
                elif backend == "ours":
                    cells.append("")
            rows.append(f"| {name} | {interval:g} s | " + " | ".join(cells) + " |")
    print(f"Accuracy on {machine()}. Each cell: what the tool read / the truth of that run")
    print("(each tool tracks its own run of the workload), and the error.\n")
    print("| scenario | interval | ours | ours: one process's kernel peak (VmHWM) "
          "| original 0.5.0 procfs | original 0.5.0 psutil |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
