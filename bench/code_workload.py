"""The workload of bench_code.py: three functions burning 30 % / 50 % / 20 % of 10 s of CPU,
then one that allocates 800 MiB and holds it, in that order, tracked from inside by
resource-tracker (the process that creates the tracker is the one whose stacks are sampled)
while py-spy samples it from outside.

Each function measures its own truth (its thread's CPU time from ``time.thread_time()``,
the process's RSS while it holds its memory); the tracker's code profile and the truth are
written to a JSON file for bench_code.py.

Usage: python code_workload.py INTERVAL GO_FILE OUT_JSON [--scale S] [--no-code-profile]
(``--scale`` multiplies the CPU seconds and the hold time: ``--quick`` runs use 0.5).
"""

from __future__ import annotations

import json
import os
import sys
import time

TRUTH = {}
SCALE = 1.0
HOLD_MIB = 800


def _rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _record(name, cpu0, wall0):
    TRUTH[name] = {
        "cpu_s": time.thread_time() - cpu0,
        "start": wall0,
        "end": time.time(),
    }


def parse_records():
    """30 % of the CPU: 3 s of this thread's CPU time."""
    cpu0, wall0 = time.thread_time(), time.time()
    total = 0
    while time.thread_time() - cpu0 < 3.0 * SCALE:
        for i in range(2000):
            total += i * i
    _record("parse_records", cpu0, wall0)
    return total


def train_model():
    """50 % of the CPU: 5 s."""
    cpu0, wall0 = time.thread_time(), time.time()
    weight = 0.5
    while time.thread_time() - cpu0 < 5.0 * SCALE:
        for i in range(2000):
            weight = weight * 0.999 + i * 1e-9
    _record("train_model", cpu0, wall0)
    return weight


def write_results():
    """20 % of the CPU: 2 s."""
    cpu0, wall0 = time.thread_time(), time.time()
    text = []
    while time.thread_time() - cpu0 < 2.0 * SCALE:
        text = [str(i) for i in range(2000)]
    _record("write_results", cpu0, wall0)
    return len(text)


def load_dataset():
    """Allocates 800 MiB (every page written) and holds it: the run's memory peak."""
    cpu0, wall0 = time.thread_time(), time.time()
    data = b"\x01" * (HOLD_MIB << 20)
    TRUTH["rss_at_peak_mib"] = _rss_mib()
    time.sleep(3.0 * SCALE)  # held: the samples of these seconds see the peak here
    TRUTH["rss_at_peak_mib"] = max(TRUTH["rss_at_peak_mib"], _rss_mib())
    _record("load_dataset", cpu0, wall0)
    return len(data)


def probe(interval, seconds):
    """The capture's CPU per tick with the main thread asleep (the GIL free) and busy in
    Python (the capture waits for the GIL): prints {"asleep": us, "busy": us} as JSON."""
    import resource_tracker

    out = {}
    for state in ("asleep", "busy"):
        tracker = resource_tracker.ResourceTracker(
            interval=interval, discover_server=False, discover_cloud=False
        )
        tracker.wait_for_samples(2, timeout=30)
        before, sampler0 = _thread_cpu(), tracker._sampler.cpu_seconds
        captures0 = tracker.code_profile_status()["captures"]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if state == "asleep":
                time.sleep(end - time.monotonic())
        after, sampler1 = _thread_cpu(), tracker._sampler.cpu_seconds
        captures = tracker.code_profile_status()["captures"] - captures0
        tracker.stop()
        threads = {t: c - before.get(t, 0.0) for t, c in after.items() if t != str(os.getpid())}
        del threads[min(threads, key=lambda t: abs(threads[t] - (sampler1 - sampler0)))]
        out[state] = sum(threads.values()) / max(captures, 1) * 1e6
        out[state + "_sampler"] = (sampler1 - sampler0) / max(captures, 1) * 1e6
    print(json.dumps(out))


def main():
    global SCALE
    if sys.argv[1] == "--probe":
        return probe(float(sys.argv[2]), float(sys.argv[3]))
    interval, go, out = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    if "--scale" in args:
        SCALE = float(args[args.index("--scale") + 1])
    import resource_tracker

    options = {"code_profile": False} if "--no-code-profile" in args else {}
    tracker = resource_tracker.ResourceTracker(
        interval=interval, discover_server=False, discover_cloud=False, **options
    )
    tracker.wait_for_samples(1, timeout=interval * 3 + 5)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    sampler = getattr(tracker, "_sampler", None)
    threads0, sampler0 = _thread_cpu(), getattr(sampler, "cpu_seconds", None)
    t0, wall0 = os.times(), time.time()
    parse_records()
    # from here on, steady state: the workload's frames are in the table
    threads_mid, sampler_mid = _thread_cpu(), getattr(sampler, "cpu_seconds", None)
    wall_mid = time.time()
    train_model()
    write_results()
    load_dataset()
    t1 = os.times()
    TRUTH["process_cpu_s"] = (t1.user + t1.system) - (t0.user + t0.system)
    TRUTH["window"] = [wall0, time.time()]
    time.sleep(interval * 1.5)  # the last interval ends before stop()
    # before stop(): the sampler's and the capture's threads still run
    threads1, sampler1 = _thread_cpu(), getattr(sampler, "cpu_seconds", None)
    TRUTH["status_at_end"] = _status(tracker)
    tracker.stop()
    now = time.time()
    for key, threads, sampler_cpu, wall in (
        ("", threads0, sampler0, wall0),
        ("steady_", threads_mid, sampler_mid, wall_mid),
    ):
        TRUTH[key + "threads_cpu_s"] = {
            tid: cpu - threads.get(tid, 0.0)
            for tid, cpu in threads1.items()
            if tid != str(os.getpid())
        }
        TRUTH[key + "sampler_cpu_s"] = None if sampler0 is None else sampler1 - sampler_cpu
        TRUTH[key + "measured_s"] = now - wall
    with open(out, "w") as f:
        json.dump({"truth": TRUTH, "ours": _ours(tracker)}, f)


def _status(tracker):
    getter = getattr(tracker, "code_profile_status", None)
    return getter() if callable(getter) else {}


def _thread_cpu():
    """{thread id: CPU seconds} of this process's threads (schedstat: nanoseconds on CPU)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
    return out


def _ours(tracker):
    """The tracker's view: the code profile by function, the peak's code, its counters."""
    sampler = getattr(tracker, "_sampler", None)
    result = {
        "samples": tracker.n_samples,
        "sampler_cpu_s": getattr(sampler, "cpu_seconds", None),
    }
    profile = getattr(tracker, "code_profile", None)
    if callable(profile):
        df = profile(by="function")
        result["profile"] = [dict(zip(df.columns, row)) for row in _rows(df)]
        result["peak"] = tracker.code_peak()
        result["status"] = _status(tracker)
    return result


def _rows(df):
    cols = [list(df[c]) for c in df.columns]
    return list(zip(*cols))


if __name__ == "__main__":
    main()
