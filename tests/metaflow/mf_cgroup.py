"""A kubelet stand-in for the tuning and live-card tests: the flow's runtime runs in a real
cgroup v1 memory (or cpu) cgroup without a limit, and every task process of one step is
moved, as soon as it appears, into a child cgroup whose memory (or CPU) limit the test sets
(the step's ask, as Kubernetes or Batch would enforce it). The kernel does the rest (OOM
kill, CPU throttling included)."""

from __future__ import annotations

import os
import threading
import time

from cgroup_v1 import own_v1_cgroup, own_v1_memory_cgroup, remove_cgroup

MIB = 1024 * 1024


def v1_memory_root():
    """This process's v1 memory cgroup directory, or None (not root, v2 only, read-only)."""
    return own_v1_memory_cgroup()[0]


def v1_cpu_root():
    """This process's v1 cpu cgroup directory, or None (not root, v2 only, read-only)."""
    return own_v1_cgroup("cpu")[0]


def cpu_stat(cgroup):
    """The kernel's CPU bandwidth counters of a v1 cpu cgroup (``cpu.stat``)."""
    with open(os.path.join(cgroup, "cpu.stat")) as f:
        return {k: int(v) for k, v in (line.split() for line in f if line.strip())}


def started_kubelet(root, step, controller):
    """A started Kubelet under root (a ``controller`` cgroup dir), or pytest.skip."""
    import pytest

    if root is None:
        pytest.skip(f"needs root and a writable cgroup v1 {controller} controller")
    return Kubelet(root, step).start()


class Kubelet:
    """Parent cgroup (no limit) for the runtime; child cgroup (``set_limit``: memory,
    ``set_cpu_limit``: CPU, by the controller of ``root``) for the task processes of
    ``step``."""

    def __init__(self, root, step):
        tag = f"rt-tune-{os.getpid()}-{time.monotonic_ns()}"
        self.parent = os.path.join(root, tag)
        self.child = os.path.join(self.parent, "task")
        os.mkdir(self.parent)
        os.mkdir(self.child)
        self.children = [self.child]
        self.per_attempt = None  # a list of limits: the nth task process gets the nth
        self.needle = f"step\0{step}\0".encode()
        self.moved = []
        self._stop = threading.Event()
        self._thread = None

    def set_limit(self, limit_mib, child=None):
        with open(os.path.join(child or self.child, "memory.limit_in_bytes"), "w") as f:
            f.write(str(int(limit_mib) * MIB))

    def set_cpu_limit(self, cores, child=None):
        """A CFS quota of ``cores`` per 100 ms period (a pod's CPU limit), and the highest
        CPU weight: the pod gets its CPU (up to the quota) also on a busy machine, as a
        kubelet's CPU request gives it (else other processes, not the quota, would hold it
        back, and no test of throttling could tell anything)."""
        with open(os.path.join(self.parent, "cpu.shares"), "w") as f:
            f.write("262144")
        quota = (("cpu.cfs_period_us", 100_000), ("cpu.cfs_quota_us", cores * 1e5))
        for name, value in quota + (("cpu.shares", 262_144),):
            with open(os.path.join(child or self.child, name), "w") as f:
                f.write(str(int(value)))

    def set_attempt_limits(self, limits):
        """One child cgroup per task process, in the order they appear (one per attempt)."""
        self.per_attempt = []
        for i, limit in enumerate(limits):
            path = os.path.join(self.parent, f"attempt{i}")
            os.mkdir(path)
            self.set_limit(limit, path)
            self.per_attempt.append(path)
            self.children.append(path)

    def _target(self):
        if self.per_attempt is None:
            return self.child
        return self.per_attempt[min(len(self.moved), len(self.per_attempt) - 1)]

    def enter_parent(self):
        """preexec_fn of the runtime: into the parent cgroup before exec."""
        with open(os.path.join(self.parent, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(0.01):
            try:
                with open(os.path.join(self.parent, "cgroup.procs")) as f:
                    pids = [int(p) for p in f.read().split()]
            except OSError:
                continue
            for pid in pids:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if self.needle not in f.read():
                            continue
                    with open(os.path.join(self._target(), "cgroup.procs"), "w") as f:
                        f.write(str(pid))
                    self.moved.append(pid)
                except OSError:
                    continue

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def remove(self):
        self.stop()
        for path in self.children + [self.parent]:
            remove_cgroup(path)
