"""Cloud discovery time on this (non-cloud) machine, and the sampler's per-sample cost with a
GPU library loaded, side by side with the original resource-tracker 0.5.0.

Usage: python3 bench/bench_discovery.py [--baseline-python .bench-venv/bin/python]

Network safety: our discovery reads this machine's real /sys and, finding no cloud evidence,
must make no request; RESOURCE_TRACKER_METADATA_URL points at a loopback server that counts
connections (expected: 0). The original tool has its metadata addresses hard-coded, so it
runs under `unshare -n` (a network namespace of its own, only loopback up) with every URL it
opens rewritten to a loopback server that accepts connections and never answers (as a
black-holed link-local address behaves), and with socket connections to anything but
127.0.0.1 refused. Without `unshare -n` the original is not measured.

Per-sample cost: the stand-in NVML library of the tests (tests/gpu_cloud/nvml_stub.c, speaking
the NVML C interface; there is no GPU here) is compiled and loaded through the sampler's dlopen
path; the cost of one sample of an 11-process tree is measured with and without it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import workloads as wl  # noqa: E402

# Runs in the bench venv (the original package), inside `unshare -n`.
BASELINE_CODE = r"""
import json, os, socket, statistics, sys, threading, time, urllib.parse, urllib.request

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]
held = []
def accept_forever():
    while True:
        conn, _ = listener.accept()
        held.append(conn)  # accepted, never answered
threading.Thread(target=accept_forever, daemon=True).start()

real_create = socket.create_connection
def loopback_only(address, *args, **kwargs):
    if address[0] not in ("127.0.0.1", "localhost"):
        raise OSError("bench: refused a connection to %r" % (address,))
    return real_create(address, *args, **kwargs)
socket.create_connection = loopback_only

real_urlopen = urllib.request.urlopen
def to_loopback(url, *args, **kwargs):
    if isinstance(url, urllib.request.Request):
        parts = urllib.parse.urlsplit(url.full_url)
        url.full_url = parts._replace(netloc="127.0.0.1:%d" % port).geturl()
    else:
        parts = urllib.parse.urlsplit(url)
        url = parts._replace(netloc="127.0.0.1:%d" % port).geturl()
    return real_urlopen(url, *args, **kwargs)
urllib.request.urlopen = to_loopback

from resource_tracker import cloud_info as ci
times = []
for _ in range(int(sys.argv[1])):
    for name in dir(ci):
        fn = getattr(ci, name)
        if callable(fn) and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    t0 = time.perf_counter()
    info = ci.get_cloud_info()
    times.append(time.perf_counter() - t0)
print(json.dumps({"times": times, "vendor": info["vendor"], "connections": len(held)}))
"""


class CountingServer:
    """A loopback HTTP-ish listener counting the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


def ours_discovery(n):
    """Our discovery on this machine's /sys: times (s) and connections made."""
    server = CountingServer()
    env_backup = dict(os.environ)
    try:
        os.environ.pop("RESOURCE_TRACKER_SYSFS_ROOT", None)
        os.environ.pop("RESOURCE_TRACKER_DISCOVER_CLOUD", None)
        os.environ["RESOURCE_TRACKER_METADATA_URL"] = server.url
        from resource_tracker.cloud import discover_cloud, start_discovery

        times, inner = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            info = discover_cloud()
            times.append(time.perf_counter() - t0)
            inner.append(info["discovery_time"])
        t0 = time.perf_counter()
        job = start_discovery()
        start_cost = time.perf_counter() - t0
        job.result()
        time.sleep(0.1)  # let a connection, if any was made, be counted
        return {
            "vendor": info["vendor"],
            "median_s": statistics.median(times),
            "max_s": max(times),
            "c_median_s": statistics.median(inner),
            "start_discovery_s": start_cost,
            "connections": server.connections,
        }
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
        server.close()


def ours_discovery_unshared():
    """The same, in a fresh process under unshare -n (no network at all)."""
    code = (
        "import json, time\n"
        "t0 = time.perf_counter()\n"
        "from resource_tracker.cloud import discover_cloud\n"
        "t1 = time.perf_counter()\n"
        "info = discover_cloud()\n"
        "t2 = time.perf_counter()\n"
        "print(json.dumps({'import_s': t1 - t0, 'first_call_s': t2 - t1, **info}))\n"
    )
    env = dict(os.environ, RESOURCE_TRACKER_METADATA_URL="http://127.0.0.1:9")
    env.pop("RESOURCE_TRACKER_SYSFS_ROOT", None)
    out = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_discovery(python, n):
    """The original's get_cloud_info() under unshare -n with all URLs sent to loopback."""
    if not python or not os.path.exists(python):
        return {"skipped": f"no baseline python at {python}"}
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return {"skipped": "needs unshare and ip to isolate the original from the network"}
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        return {"skipped": "unshare -n is not permitted here"}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "baseline_cloud.py")
        with open(script, "w") as f:
            f.write(BASELINE_CODE)
        out = subprocess.run(
            [
                "unshare",
                "-n",
                "sh",
                "-c",
                'ip link set lo up && exec "$0" "$@"',
                python,
                script,
                str(n),
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
            timeout=120,
        )
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-500:]}
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "vendor": data["vendor"],
        "median_s": statistics.median(data["times"]),
        "max_s": max(data["times"]),
        "loopback_connections": data["connections"],
    }


def sampler_cost(stub_path, control_path, n_children=10):
    """CPU per sample of an 11-process tree (system + process), without and with the stub."""
    from resource_tracker import _core

    tree = wl.spawn_tree(n_children)
    try:
        with open(control_path, "w") as f:
            f.write(f"tree_pid={wl.child_pids(tree.pid)[0]}\nother_pid=1\nmode=\n")
        os.environ["NVML_STUB_CONTROL"] = control_path
        samplers = {}
        for label, library in (("no_nvml", "/nonexistent/libnvidia-ml.so.1"), ("stub", stub_path)):
            samplers[label] = _core.Sampler(tree.pid, 1.0, nvml_library=library)
            for _ in range(3):  # baseline and first rows (the library loads on first use)
                samplers[label].sample_now()
        rounds = {label: [] for label in samplers}
        for _ in range(5):  # interleaved rounds: machine noise hits both sides alike
            for label, sampler in samplers.items():
                rounds[label].append(wl.timed_loop(sampler.sample_now, min_cpu=0.3, max_n=20000))
        result = {}
        for label, sampler in samplers.items():
            table = dict(zip(_core.SYSTEM_COLUMNS, sampler.columns("system")))
            result[label] = {
                "n": sum(r[0] for r in rounds[label]),
                "cpu_us": statistics.median(r[1] for r in rounds[label]) * 1e6,
                "wall_us": statistics.median(r[2] for r in rounds[label]) * 1e6,
                "system_gpu_vram_last": memoryview(table["gpu_vram"]).cast("d")[-1],
            }
        result["gpu_part_cpu_us"] = result["stub"]["cpu_us"] - result["no_nvml"]["cpu_us"]
        return result
    finally:
        wl.stop_group(tree)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", default=os.path.join(REPO, ".bench-venv/bin/python"))
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--baseline-runs", type=int, default=3)
    args = parser.parse_args()

    results = {"ours": ours_discovery(args.runs)}
    if shutil.which("unshare"):
        results["ours_unshare_n"] = ours_discovery_unshared()
    results["original"] = baseline_discovery(
        os.path.abspath(args.baseline_python), args.baseline_runs
    )
    with tempfile.TemporaryDirectory() as tmp:
        stub = os.path.join(tmp, "libnvidia-ml-stub.so.1")
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o", stub]
            + [os.path.join(REPO, "tests", "gpu_cloud", "nvml_stub.c")],
            check=True,
        )
        results["sampler"] = sampler_cost(stub, os.path.join(tmp, "control"))

    ours, orig, samp = results["ours"], results["original"], results["sampler"]
    print("cloud discovery on this machine (not a cloud):")
    print(
        f"  ours      median {ours['median_s'] * 1e3:8.3f} ms  max {ours['max_s'] * 1e3:7.3f} ms"
        f"  vendor={ours['vendor']}  connections={ours['connections']}"
        f"  start_discovery() {ours['start_discovery_s'] * 1e3:.3f} ms"
    )
    if "median_s" in orig:
        ratio = orig["median_s"] / ours["median_s"] if ours["median_s"] else float("inf")
        print(
            f"  original  median {orig['median_s'] * 1e3:8.1f} ms"
            f"  max {orig['max_s'] * 1e3:7.1f} ms"
            f"  vendor={orig['vendor']}  (x{ratio:,.0f} slower)"
        )
    else:
        print(f"  original  not measured: {orig}")
    if "ours_unshare_n" in results:
        print(f"  ours under unshare -n: {results['ours_unshare_n']}")
    print("sampler, one sample of an 11-process tree (process + system), CPU per sample:")
    print(f"  without NVML      {samp['no_nvml']['cpu_us']:8.1f} us")
    print(
        f"  with stub NVML    {samp['stub']['cpu_us']:8.1f} us"
        f"  (GPU part {samp['gpu_part_cpu_us']:.1f} us; "
        f"system gpu_vram read {samp['stub']['system_gpu_vram_last']:.0f} MiB)"
    )
    wl.emit(results)
    return 0 if ours["connections"] == 0 and ours["vendor"] == "unknown" else 1


if __name__ == "__main__":
    sys.exit(main())
