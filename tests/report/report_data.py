"""Data for the report tests: synthetic long runs as real snapshots (ResourceTracker.from_snapshot
turns them into stopped trackers, exactly as it does for a saved run)."""

from __future__ import annotations

import math
from array import array

from resource_tracker.names import PROCESS_COLUMNS, SYSTEM_COLUMNS

START = 1_790_000_000.0  # 2026-09-21 UTC

SERVER_INFO = {
    "vcpus": 8,
    "memory_mb": 32768,
    "gpu_count": 1,
    "gpu_names": ["NVIDIA <b>T4</b>"],
    "gpu_memory_mb": 15360,
    "cpu_model": "Intel(R) Xeon(R) <i>Platinum</i>",
    "architecture": "x86_64",
    "os": "Debian GNU/Linux 12 (bookworm)",
    "cgroup": {"version": 2, "cpu_limit_cores": 4.0, "memory_limit_mb": 16384},
}

CLOUD_INFO = {
    "vendor": "aws",
    "instance_type": "g4dn.2xlarge",
    "region": "us-east-1",
    "discovery_time": 0.012,
}

#: where the long run has its one-sample peaks
PEAK_ROW = 43_210
PEAK_CPU = 7.5
PEAK_NET = 987_654_321.0


def long_run_snapshot(rows=86_400, interval=1.0, command="python train.py --epochs 10"):
    """A snapshot of a rows-sample run (default: 24 h at 1 s) with smooth daily patterns and
    single-sample peaks at PEAK_ROW (CPU and network) that downsampling must keep."""
    ts = array("d", (START + interval * (i + 1) for i in range(rows)))
    wave = array("d", (0.5 + 0.5 * math.sin(i / 3600.0) for i in range(rows)))
    proc = {name: array("d", bytes(8 * rows)) for name in PROCESS_COLUMNS}
    syst = {name: array("d", bytes(8 * rows)) for name in SYSTEM_COLUMNS}
    proc["timestamp"] = ts
    proc["pid"] = array("d", [4242.0]) * rows
    proc["children"] = array("d", (float(i % 4) for i in range(rows)))
    proc["cpu_usage"] = array("d", (1.0 + w for w in wave))
    proc["utime"] = array("d", (0.9 * interval * (1.0 + w) for w in wave))
    proc["stime"] = array("d", (0.1 * interval * (1.0 + w) for w in wave))
    proc["memory"] = array("d", (2_000_000.0 + 1_000_000.0 * w for w in wave))  # KiB
    proc["read_bytes"] = array("d", (4096.0 * (i % 50) for i in range(rows)))
    proc["write_bytes"] = array("d", (8192.0 * (i % 30) for i in range(rows)))
    proc["gpu_usage"] = array("d", (0.8 * w for w in wave))
    proc["gpu_vram"] = array("d", (3000.0 + 2000.0 * w for w in wave))
    proc["gpu_utilized"] = array("d", (1.0 if w > 0.2 else 0.0 for w in wave))
    syst["timestamp"] = ts
    syst["processes"] = array("d", [180.0]) * rows
    syst["cpu_usage"] = array("d", (1.3 + w for w in wave))
    syst["memory_used"] = array("d", (6_000_000.0 + 1_500_000.0 * w for w in wave))
    syst["memory_free"] = array("d", (20_000_000.0 - 1_500_000.0 * w for w in wave))
    syst["disk_read_bytes"] = array("d", (1e6 * w for w in wave))
    syst["disk_write_bytes"] = array("d", (2e6 * w for w in wave))
    syst["disk_space_total_gb"] = array("d", [500.0]) * rows
    syst["disk_space_used_gb"] = array("d", (100.0 + 50.0 * i / rows for i in range(rows)))
    syst["disk_space_free_gb"] = array("d", (400.0 - 50.0 * i / rows for i in range(rows)))
    syst["net_recv_bytes"] = array("d", (5e5 * w for w in wave))
    syst["net_sent_bytes"] = array("d", (1e5 * w for w in wave))
    syst["gpu_usage"] = array("d", (0.85 * w for w in wave))
    syst["gpu_vram"] = array("d", (3500.0 + 2000.0 * w for w in wave))
    syst["gpu_utilized"] = proc["gpu_utilized"]
    if rows > PEAK_ROW:
        proc["cpu_usage"][PEAK_ROW] = PEAK_CPU
        syst["net_recv_bytes"][PEAK_ROW] = PEAK_NET
    return {
        "format": "resource-tracker-snapshot",
        "format_version": 1,
        "version": "0.1.0",
        "pid": 4242,
        "children": True,
        "interval": interval,
        "method": "procfs",
        "command": command,
        "label": None,
        "status": "finished",
        "start_time": START,
        "stop_time": START + interval * rows,
        "track_processes": True,
        "track_system": True,
        "server_info": SERVER_INFO,
        "cloud_info": CLOUD_INFO,
        "extra": {},
        "process_metrics": {k: proc[k] for k in PROCESS_COLUMNS},
        "system_metrics": {k: syst[k] for k in SYSTEM_COLUMNS},
    }


XSS = "<script>alert(1)</script>"

WORKLOAD = (
    "import os, sys, time, tempfile\n"
    "sys.stdin.readline()\n"
    "end = time.monotonic() + 0.8\n"
    "x = 0\n"
    "while time.monotonic() < end: x += 1\n"
    "buf = bytearray(80 * 1024 * 1024)\n"
    "for i in range(0, len(buf), 4096): buf[i] = 1\n"
    "with tempfile.TemporaryFile() as f:\n"
    "    f.write(os.urandom(4 << 20)); f.flush(); os.fsync(f.fileno())\n"
    "time.sleep(0.4)\n"
)


def tracked_xss_run(interval=0.1):
    """A stopped ResourceTracker of a real child process (a second of CPU, 80 MiB touched,
    4 MB written) whose command line holds XSS."""
    import os
    import subprocess
    import sys
    import time

    from resource_tracker import ResourceTracker

    proc = subprocess.Popen([sys.executable, "-c", WORKLOAD, XSS], stdin=subprocess.PIPE, text=True)
    try:
        # the command line is read when the tracker starts: wait until the child has exec'd
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
                if XSS.encode() in f.read():
                    break
            time.sleep(0.005)
        tracker = ResourceTracker(pid=proc.pid, interval=interval, discover_cloud=False)
        proc.stdin.write("go\n")
        proc.stdin.close()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        tracker.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    return tracker
