"""Child discovery on a busy host (issue 38), side by side in one run: the CPU per sample of a
1-process and a 500-process tree on a quiet host and on a busy one, for ours finding new
members from the members' children lists (the default), ours listing /proc
(RESOURCE_TRACKER_CHILD_DISCOVERY=listing: the code before), and the floor, a naive C loop
that only reads `stat` and `statm` of each process of the tree (its pids given).

Usage (`make bench` runs it): python bench/bench_children.py [--rounds 3] [--n 40]

The hosts are private pid namespaces (`unshare --pid --fork --mount-proc`, root), so that
"quiet" is quiet on a shared machine: its /proc holds the tree and the measuring processes
only. The busy host is the same namespace with 2,000 other sleeping processes and a neighbour
creating ~200 short-lived processes a second (the last pid handed out moves every tick, as
on a machine where other people work). Samples are 50 ms apart (caches cold, as at a 1 s
interval), process part only, each figure from a fresh interpreter (bench/measure_ours.py).
Rounds interleave the hosts and the tools; the table gives medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import workloads as wl  # noqa: E402
from bench_scale import FORKER  # noqa: E402  (~200 short-lived processes a second)
from run import machine, progress  # noqa: E402

# The floor: stat and statm of each given pid per sample, samples gap_ms apart; prints the
# CPU seconds per sample (the process's own clock).
FLOOR_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void read_file(const char *path) {
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    while (read(fd, buf, sizeof(buf)) > 0) {}
    close(fd);
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]), gap_ms = atoi(argv[2]), i, k;
    double total = 0;
    char path[64];
    struct timespec gap = {0, gap_ms * 1000000L};
    for (i = 0; i < n; i++) {
        double t0;
        nanosleep(&gap, NULL);
        t0 = cpu();
        for (k = 3; k < argc; k++) {
            snprintf(path, sizeof(path), "/proc/%s/stat", argv[k]);
            read_file(path);
            snprintf(path, sizeof(path), "/proc/%s/statm", argv[k]);
            read_file(path);
        }
        total += cpu() - t0;
    }
    printf("{\"n\": %d, \"cpu_s\": %.9f}\n", n, total / n);
    return 0;
}
"""

TOOLS = ("children", "listing", "floor")
SIZES = (1, "1t", 500)  # "1t": one Python process with 4 threads (a list to read per thread)
OTHERS = 2000
THREADED = (
    "import threading, time\n"
    "for _ in range(3):\n"
    "    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    "time.sleep(600)\n"
)


def build_floor(folder):
    source = os.path.join(folder, "floor.c")
    binary = os.path.join(folder, "floor")
    with open(source, "w") as f:
        f.write(FLOOR_C)
    subprocess.run(["cc", "-O2", "-o", binary, source], check=True)
    return binary


def spawn_tree(size):
    """A sleeping tree of size processes: `sleep` alone, a Python process with 4 threads
    ("1t"), or a shell and size - 1 sleeps."""
    if size == 1:
        return subprocess.Popen(["sleep", "600"], start_new_session=True)
    if size == "1t":
        proc = subprocess.Popen([sys.executable, "-c", THREADED], start_new_session=True)
        while len(os.listdir(f"/proc/{proc.pid}/task")) < 4:  # until its threads started
            time.sleep(0.01)
        return proc
    return wl.spawn_tree(size - 1)


def tree_pids(root):
    """The root and its children (the trees here are one level deep)."""
    return [root] + wl.child_pids(root)


def measure(tool, tree, args, floor):
    if tool == "floor":
        cmd = [floor, str(args.n), "50"] + [str(p) for p in tree_pids(tree.pid)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    else:
        discovery = "auto" if tool == "children" else "listing"
        cmd = [sys.executable, os.path.join(HERE, "measure_ours.py"), "persample", "--pid",
               str(tree.pid), "--part", "process", "--gap", "0.05", "--n", str(args.n),
               "--discovery", discovery]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO).stdout
    return json.loads(out.strip().splitlines()[-1])


def neighbours():
    """2,000 sleeping processes and a forking neighbour (Popen objects)."""
    sleepers = wl.spawn_tree(OTHERS - 1)
    forker = subprocess.Popen([sys.executable, "-c", FORKER], start_new_session=True)
    return [sleepers, forker]


def one_round(args, floor, results):
    for host in ("quiet", "busy"):
        others = neighbours() if host == "busy" else []
        try:
            time.sleep(0.5)
            for size in SIZES:
                tree = spawn_tree(size)
                try:
                    for tool in TOOLS:
                        r = measure(tool, tree, args, floor)
                        results.setdefault((host, size, tool), []).append(r)
                finally:
                    wl.stop_group(tree)
        finally:
            for p in others:
                wl.stop_group(p)


def inside(args):
    """The measurement, run inside the private pid namespace: JSON of the figures."""
    folder = tempfile.mkdtemp(prefix="rt-bench-children-")
    try:
        floor = build_floor(folder)
        results = {}
        for k in range(args.rounds):
            progress(f"round {k + 1} of {args.rounds} (load {loadavg()})")
            one_round(args, floor, results)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = {f"{h}|{s}|{t}": v for (h, s, t), v in results.items()}
    print(json.dumps(out))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def median_us(runs):
    return statistics.median(r["cpu_s"] for r in runs) * 1e6


def report(data, load_before, load_after):
    med = {k: median_us(v) for k, v in data.items()}
    rounds = len(next(iter(data.values())))
    print(f"CPU per sample, process part, 50 ms apart, medians of {rounds} interleaved rounds, "
          f"on {machine()}; load {load_before} before, {load_after} after\n")  # fmt: skip
    print("| tree | host | ours: children lists | ours: listing /proc (before) | floor: stat + "
          "statm | children / floor | listing / floor |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for size in SIZES:
        for host in ("quiet", "busy"):
            c, ls, fl = (med[f"{host}|{size}|{t}"] for t in TOOLS)
            name = "quiet" if host == "quiet" else f"{OTHERS:,} others + forking neighbour"
            tree = {1: "1 process", "1t": "1 process, 4 threads"}.get(size, f"{size} processes")
            print(f"| {tree} | {name} | {c:.0f} us | {ls:.0f} us | {fl:.0f} us | {c / fl:.2f}x | "
                  f"{ls / fl:.2f}x |")  # fmt: skip
    busy1, quiet1 = med["busy|1|children"], med["quiet|1|children"]
    floor1 = med["busy|1|floor"]
    print(f"\n1-process tree, children lists: busy / quiet host {busy1 / quiet1:.2f}x (goal <= "
          f"1.2x), busy host / floor {busy1 / floor1:.2f}x (goal <= 1.5x); listing: busy / quiet "
          f"{med['busy|1|listing'] / med['quiet|1|listing']:.2f}x")  # fmt: skip
    for host in ("quiet", "busy"):
        c, ls = med[f"{host}|500|children"], med[f"{host}|500|listing"]
        print(
            f"500-process tree, {host} host: children lists {c / 500:.2f} us per process, "
            f"listing {ls / 500:.2f} us ({c / ls:.2f}x)"
        )
    busy_t, quiet_t = med["busy|1t|children"], med["quiet|1t|children"]
    print(f"1 process with 4 threads, children lists: busy / quiet host {busy_t / quiet_t:.2f}x, "
          f"busy host / floor {busy_t / med['busy|1t|floor']:.2f}x")  # fmt: skip
    busy_runs = data["busy|1|children"]
    print(f"busy host, 1-process tree, children lists: listings {busy_runs[0]['listings']:.0f}, "
          f"list scans {busy_runs[0]['children_scans']:.0f}, probes {busy_runs[0]['probes']:.0f}"
          f" over {busy_runs[0]['n'] + 4} readings")  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=40, help="samples per figure")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        inside(args)
        return
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("child discovery on a busy host: skipped (needs root and unshare for a private "
              "pid namespace)")  # fmt: skip
        return
    load_before = loadavg()
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, os.path.abspath(__file__),
           "--inside", "--rounds", str(args.rounds), "--n", str(args.n)]  # fmt: skip
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    report(json.loads(out.strip().splitlines()[-1]), load_before, loadavg())


if __name__ == "__main__":
    main()
