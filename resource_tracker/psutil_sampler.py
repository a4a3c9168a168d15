"""PsutilSampler: the sampler for machines without procfs (macOS, Windows), built on psutil.

It is a :class:`resource_tracker.sampling.Sampler` as ``_core.Sampler`` is (plus
``sample_now`` for the CSV trackers) and fills the same columns with the same units. It is
a reader: what psutil gives becomes a row. The C sampling engine (``_core.ReaderSampler``,
csrc/engine.c) calls it once per tick from its own thread (taking the interpreter lock for
the call) and owns the rest, as the procfs sampler does: the tick grid (csrc/schedule.c), the
rows, the final reading at stop() folded into the previous row when short (csrc/row_rules.c),
stop() within STOP_TIMEOUT, fork and interpreter exit. A reading that raises is counted
(``read_errors``) and gives no row. What the reader itself does:

- The workload is the root process and its descendants (``Process.children(recursive=True)``);
  a member stays a member while it lives, also after its parent exits (orphans are followed).
  A process is its pid and its creation time (psutil's identity): a process that gets the
  root's pid after the root exited is not the root, and a member whose pid went to another
  process is gone (its later readings are not the workload's).
- CPU time and I/O bytes are conserved: the workload total is the sum over live members of
  their own plus reaped children's counters (``children_user``/``children_system``), plus
  the last seen counters of members that vanished without a tracked parent to inherit them.
  The interval value is the rise of that total over its high-water mark (never negative).
- The engine thread's own CPU time is taken off its own process when that is tracked (off
  the sum of user and system time, which is then split like the workload's rise), and the
  memory of its stored rows off that process's memory.
- Memory (KiB): RSS for a single process. With several processes, pages shared inside the
  tree are counted once: each member counts RSS minus (RSS - PSS) as last measured with
  ``memory_full_info()``, read for every member at once (a round) when members came or went
  or the figures are 30 s old, within a budget of this thread's CPU time (a share of the wall
  time). The RSS paired with a PSS is the smaller of the reads around it, and is the
  member's RSS in that reading (a member that exited since the reading's RSS step counts
  nothing); a member whose PSS read fails keeps its last figure, and a round during which a
  member forked is not used (its figures count the newcomer's share short). Until its first
  read, a forked copy of a member (the same command line: no exec) counts what it holds
  beyond its parent, and the tree counts at least its largest RSS (as the C sampler does).
  Where psutil has no PSS (macOS, Windows), the RSS of the members is summed: shared pages
  are then counted once per process that maps them.

psutil is imported when a PsutilSampler is created, never at package import.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple

from . import _core
from ._identity import MAX_PID, _check_interval
from .names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from .sampling import STOP_TIMEOUT  # noqa: F401  (the engine's stop bound, for callers)

SYSTEM_REFRESH_SECONDS = 60.0
PSS_BUDGET_SHARE = 0.005
PSS_BUDGET_BURST = 0.100
PSS_BUDGET_START = 0.050
SKIPPED_DISK_PREFIXES = ("loop", "ram", "zram", "fd")

_P = {name: i for i, name in enumerate(PROCESS_COLUMNS)}
_S = {name: i for i, name in enumerate(SYSTEM_COLUMNS)}


def _is_loopback(nic: str) -> bool:
    """True for a loopback interface name (lo on Linux, lo0 on macOS, Loopback on Windows)."""
    return nic == "lo" or (nic.startswith("lo") and nic[2:].isdigit()) or nic.startswith("Loopback")


class _Member:
    """What is known about one process of the tree."""

    __slots__ = (
        "proc",
        "pid",
        "ppid",
        "user",
        "sys",
        "read",
        "write",
        "rss",
        "zombie",
        "excess",
        "checked_at",
        "cmdline",
    )

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.ppid = 0
        self.user = self.sys = self.read = self.write = 0.0
        self.rss = 0.0
        self.zombie = False
        self.excess = 0.0
        self.checked_at = 0.0
        self.cmdline: Optional[Tuple[str, ...]] = None  # read when first needed


class _Collector:
    """One pass over the process tree and the machine per call; keeps the state between."""

    def __init__(
        self, psutil: Any, pid: int, children: bool, track_processes: bool, track_system: bool
    ) -> None:
        self.ps = psutil
        self.pid = pid
        self.children = children
        self.track_processes = track_processes
        self.track_system = track_system
        self.self_pid = os.getpid()
        self.members: Dict[int, _Member] = {}
        self.known: Dict[int, bool] = {}  # pid -> is a member, for every process listed last
        self.root_created: Optional[float] = None  # the root's creation time, once seen
        self.root_ended = False  # the root was seen gone: no process is the root again
        self.listed = False
        self.dead = [0.0, 0.0, 0.0, 0.0]
        self.high_water: Optional[List[float]] = None  # [cpu seconds, read bytes, write bytes]
        self.last_split = (0.0, 0.0)  # user and system totals at the last reading
        self.generation = 0
        self.pss_allowance = PSS_BUDGET_START
        self.round_at = 0.0  # when every member's PSS was last read
        self.round_generation = -1
        self.pss_refilled_at = 0.0
        self.system_prev: Optional[Dict[str, Any]] = None
        self.disks: Optional[Set[str]] = None
        self.cpus = _process_cpus(psutil, pid) if track_processes else _MACHINE_CPUS
        self.mounts: List[str] = []
        self.refreshed_at = 0.0
        self.has_baseline = False
        self.last_mono = 0.0
        self.io_denied = 0  # reads of a member's I/O counters refused (another user's)
        self.tree_seen = 0  # readings that found a live process of the tree (0: never seen)
        self.tree_missed = 0  # readings that did not, while the root lived (hidden)
        self.pss_denied = 0  # reads of a member's PSS refused
        # this thread's CPU seconds when the reading began and when it read this process's
        # CPU time: what the reading cost until then is in that CPU time (see _tree)
        self.reading_began_cpu = 0.0
        self.self_read_cpu = 0.0
        if track_processes:
            self._note_root_start()

    # -- the process tree ------------------------------------------------------------

    def _classify(self, pid: int, new: Dict[int, Any], depth: int = 0) -> bool:
        """True when the new process pid belongs to the tree (its parent does)."""
        if pid in self.known:
            return self.known[pid]
        proc = new.get(pid)
        if proc is None:
            return False
        if pid == self.pid:
            member = self._is_root(proc)
        elif not self.children or depth > 256:
            member = False
        else:
            try:
                ppid = proc.ppid()
            except self.ps.Error:
                ppid = 0
            member = ppid > 0 and ppid != pid and self._classify(ppid, new, depth + 1)
        self.known[pid] = member
        if member:
            self.members[pid] = _Member(proc)
            self.generation += 1
        return member

    def _note_root_start(self) -> None:
        """Takes the root's identity (its creation time) now, in the caller, as the C sampler
        does: a pid handed to another process before the engine's first reading is not the
        root. Unreadable now (already gone, hidden): the first reading that sees it decides."""
        try:
            self.root_created = self.ps.Process(self.pid).create_time()
        except Exception:
            pass

    def _is_root(self, proc: Any) -> bool:
        """True when proc (with the root's pid) is the root: the creation time the root had
        when first seen, and the root was not seen gone since (a reused pid is not)."""
        if self.root_ended:
            return False
        try:
            created = proc.create_time()
        except self.ps.Error:
            return False
        if self.root_created is None:
            self.root_created = created
        self.root_ended = created != self.root_created
        return not self.root_ended

    def _root_hidden(self) -> bool:
        """True when the root lives (for the kernel: kill(2) on POSIX, also another user's
        process) though no reading found it, and its status cannot be read here (a readable
        one is a zombie's, or that of another process that got the pid). Elsewhere psutil's
        ``pid_exists`` (``os.kill(pid, 0)`` is CTRL_C on Windows)."""
        try:
            if os.name == "posix":
                os.kill(self.pid, 0)  # psutil's pid_exists looks in /proc on Linux
            elif not self.ps.pid_exists(self.pid):
                return False
        except PermissionError:
            pass  # alive, another user's
        except Exception:
            return False  # gone
        try:
            self.ps.Process(self.pid).status()
        except Exception:  # not visible: no /proc entry, hidepid, no descriptor
            return True
        return False

    def _discover(self, pids: Sequence[int]) -> List[_Member]:
        """Updates self.known/self.members from the process list: the vanished members."""
        ps = self.ps
        current = set(pids)
        vanished = [m for pid, m in self.members.items() if pid not in current]
        for m in vanished:
            del self.members[m.pid]
            self.root_ended = self.root_ended or m.pid == self.pid
        self.known = {pid: member for pid, member in self.known.items() if pid in current}
        if not self.track_processes:
            return vanished
        if not self.listed:
            # first listing: one parent-id scan of all processes (psutil's children())
            self.listed = True
            tree = []
            try:
                root = ps.Process(self.pid)
                if self._is_root(root):
                    tree.append(root)
                    if self.children:
                        tree += root.children(recursive=True)
            except ps.Error:
                pass
            for proc in tree:
                self.members[proc.pid] = _Member(proc)
            self.known = {pid: pid in self.members for pid in current}
            return vanished
        # later listings: only processes not seen before have their parent read
        new = {}
        for pid in current:
            if pid not in self.known:
                try:
                    new[pid] = ps.Process(pid)
                except ps.Error:
                    pass  # gone already
        for pid in new:
            self._classify(pid, new)
        return vanished

    def _read_member(self, member: _Member) -> bool:
        """Reads one member's counters: False when the process is gone (or its pid reused)."""
        ps = self.ps
        proc = member.proc
        try:
            with proc.oneshot():
                cpu = proc.cpu_times()
                if member.pid == self.self_pid:
                    self.self_read_cpu = time.thread_time()
                if member.ppid == 0:
                    member.ppid = proc.ppid()  # once: psutil checks pid reuse here
                try:
                    member.zombie = proc.status() == ps.STATUS_ZOMBIE
                except ps.Error:
                    member.zombie = False
                user = cpu.user + getattr(cpu, "children_user", 0.0)
                system = cpu.system + getattr(cpu, "children_system", 0.0)
                if not proc.is_running():
                    return False  # gone, or its pid went to another process (pid + creation)
                member.user, member.sys = user, system
                if member.zombie:
                    member.rss = 0.0
                else:
                    try:
                        member.rss = proc.memory_info().rss / 1024.0
                    except ps.AccessDenied:
                        pass
                try:
                    io = proc.io_counters()
                    member.read = float(getattr(io, "read_bytes", 0))
                    member.write = float(getattr(io, "write_bytes", 0))
                except ps.AccessDenied:
                    self.io_denied += 1  # keep the last values (0 where never readable)
                except (ps.ZombieProcess, AttributeError, NotImplementedError):
                    pass  # keep the last values (0 where never readable)
        except ps.ZombieProcess:
            member.zombie = True
            member.rss = 0.0
        except ps.NoSuchProcess:
            return False
        except ps.AccessDenied:
            pass  # it exists: keep what was read
        return True

    def _reaped_by_member(
        self, gone: _Member, live_by_pid: Dict[int, _Member], vanished_by_pid: Dict[int, _Member]
    ) -> bool:
        """True when a vanished member's counters went to a live member (its reaper)."""
        ppid = gone.ppid
        for _ in range(256):
            if ppid <= 0:
                return False
            if ppid in live_by_pid:
                return True
            parent = vanished_by_pid.get(ppid)
            if parent is None:
                return False
            ppid = parent.ppid
        return False

    def _tree(
        self, now: float, own_cpu: Optional[float], pids: Sequence[int]
    ) -> Tuple[List[float], float, int, bool]:
        """(interval [user, sys, read, write], memory KiB, live members, root alive)."""
        vanished = self._discover(pids)
        for pid, member in list(self.members.items()):
            if not self._read_member(member):
                self.root_ended = self.root_ended or pid == self.pid
                vanished.append(member)
                del self.members[pid]
                self.known.pop(pid, None)  # a reused pid is classified again next time
        members = self.members
        if vanished:
            self.generation += 1
            vanished_by_pid = {m.pid: m for m in vanished}
            for gone in vanished:
                if not self._reaped_by_member(gone, members, vanished_by_pid):
                    self.dead[0] += gone.user
                    self.dead[1] += gone.sys
                    self.dead[2] += gone.read
                    self.dead[3] += gone.write
        total = list(self.dead)
        live = 0
        root_alive = False
        for m in members.values():
            total[0] += m.user
            total[1] += m.sys
            total[2] += m.read
            total[3] += m.write
            if not m.zombie:
                live += 1
                root_alive = root_alive or m.pid == self.pid
        # The sampler thread's CPU comes off the sum of user and system time: the kernel
        # splits a thread's and a process's time between the two independently, so taking
        # it off each part would leave one part too high (and its high-water mark ratchets).
        # own_cpu is the thread's CPU when the reading began; the process's CPU time, read
        # later, holds what this reading cost until then too (listing and classifying every
        # process of the machine: tens of ms on a busy one, most in the first reading), so
        # that comes off as well, or the run's CPU would count short by the difference.
        offset = 0.0
        if own_cpu is not None and self.self_pid in members:
            offset = own_cpu + max(0.0, self.self_read_cpu - self.reading_began_cpu)
        current = [total[0] + total[1] - offset, total[2], total[3]]
        interval = [0.0, 0.0, 0.0, 0.0]
        if self.high_water is None:
            self.high_water = current
        else:
            rises = [0.0, 0.0, 0.0]
            for i in range(3):
                if current[i] > self.high_water[i]:
                    rises[i] = current[i] - self.high_water[i]
                    self.high_water[i] = current[i]
            du = max(0.0, total[0] - self.last_split[0])
            ds = max(0.0, total[1] - self.last_split[1])
            user_share = du / (du + ds) if du + ds > 0 else 1.0
            interval = [rises[0] * user_share, rises[0] * (1.0 - user_share), rises[1], rises[2]]
        self.last_split = (total[0], total[1])
        return interval, self._memory(now, live), live, root_alive

    def _read_excess(self, member: _Member) -> Optional[float]:
        """How much of a member's RSS is shared (RSS - PSS, KiB), within the budget: None when
        unreadable (gone, failed); 0.0 where psutil has no PSS (macOS, Windows) or refuses it
        (another user's process: counted in full, an over-estimate, as the C sampler does).

        psutil reads PSS (smaps_rollup) first and RSS (statm) after it: a member faulting
        pages in between would have them counted as shared and never as its own, until the
        next round. The RSS that goes with the PSS lies between the one read this tick
        (before) and the one read after; the smaller is taken (as the C sampler takes both
        from the one smaps_rollup), and is the member's RSS from then on: a member that
        exited since this tick's read holds nothing (its RSS read earlier in the tick would
        count in full against a PSS of 0). The cost is this thread's CPU time, as in the C
        sampler: wall time stretches on a busy machine and would drain the budget."""
        started = time.thread_time()
        excess: Optional[float] = None
        try:
            full = member.proc.memory_full_info()
            member.rss = min(full.rss / 1024.0, member.rss)
            pss = getattr(full, "pss", None)
            excess = max(0.0, member.rss - pss / 1024.0) if pss is not None else 0.0
        except self.ps.NoSuchProcess:  # a zombie too: exited since this tick's read
            member.rss = 0.0
        except self.ps.AccessDenied:
            self.pss_denied += 1  # another user's process: its shared pages count in full
            excess = 0.0
        except (self.ps.Error, AttributeError, NotImplementedError, OSError):
            pass
        self.pss_allowance -= time.thread_time() - started
        return excess

    def _pss_round(self, now: float, members: List[_Member]) -> None:
        """Reads PSS of every member at once, when due and the budget has something left."""
        if self.pss_refilled_at > 0:
            self.pss_allowance += (now - self.pss_refilled_at) * PSS_BUDGET_SHARE
        self.pss_allowance = min(self.pss_allowance, PSS_BUDGET_BURST)
        self.pss_refilled_at = now
        due = (
            self.round_at == 0
            or self.round_generation != self.generation
            or now - self.round_at >= 30.0
        )
        if not due or self.pss_allowance <= 0:
            return
        # the figures of one round take effect together; a member whose read failed keeps
        # what it had (its last figure, or its parent's RSS off a forked copy), as in the C
        # sampler: counting its whole RSS as its own counts the shared pages once more
        read = [(m, self._read_excess(m)) for m in members if m.rss > 0]
        if self._tree_grew():
            return  # the figures mix two sharings: the last ones stay, the round stays due
        for m, excess in read:
            if excess is not None:
                m.excess, m.checked_at = excess, now
        self.round_at, self.round_generation = now, self.generation

    def _tree_grew(self) -> bool:
        """True when a process this reading did not list has a member for parent: forked into
        the tree while the round read PSS, it took its share of the pages it shares in the
        members read after its fork, but is no member yet (it would count beyond its parent
        only): such a round's figures count those pages short."""
        ps = self.ps
        try:
            pids = ps.pids()
        except Exception:
            return False
        for pid in pids:
            if pid in self.known:
                continue
            try:
                if ps.Process(pid).ppid() in self.members:
                    return True
            except ps.Error:
                pass  # gone already
        return False

    def _command_line(self, member: _Member) -> Tuple[str, ...]:
        cmdline = member.cmdline
        if cmdline is None:
            try:
                cmdline = tuple(member.proc.cmdline())
            except (self.ps.Error, OSError):
                cmdline = ()
            member.cmdline = cmdline
        return cmdline

    def _own_memory(self, m: _Member) -> float:
        """A member's own memory (KiB): RSS less its shared pages at its last PSS read; before
        that, for a forked copy of a member, what it holds beyond its parent."""
        if m.checked_at > 0:
            return max(0.0, m.rss - m.excess)
        parent = self.members.get(m.ppid)
        if parent is not None and not parent.zombie and self._command_line(m):
            if self._command_line(m) == self._command_line(parent):
                return max(0.0, m.rss - parent.rss)
        return m.rss

    def _memory(self, now: float, live: int) -> float:
        """Memory of the tree in KiB: RSS, less pages shared inside the tree (PSS)."""
        members = list(self.members.values())
        if live > 1:
            self._pss_round(now, members)
            total = sum(self._own_memory(m) for m in members)
            return max([total] + [m.rss for m in members])
        return sum(m.rss for m in members)

    # -- the machine -----------------------------------------------------------------

    def _refresh_devices(self) -> None:
        """Whole disks (names) and one mount point per real filesystem."""
        ps = self.ps
        disks: Optional[Set[str]] = None
        if os.path.isdir("/sys/block"):
            disks = set()
            for name in os.listdir("/sys/block"):
                if name.startswith(SKIPPED_DISK_PREFIXES):
                    continue
                try:
                    if os.listdir(f"/sys/block/{name}/slaves"):
                        continue  # dm/md on top of other disks: counted there
                except OSError:
                    pass
                disks.add(name)
        self.disks = disks
        mounts: Dict[str, str] = {}
        try:
            partitions = ps.disk_partitions(all=False)
        except Exception:
            partitions = []
        for part in partitions:
            device = part.device or ""
            if device.startswith("/dev/loop"):
                continue
            if part.fstype == "zfs":
                key = "zfs:" + device.split("/")[0]
            elif part.fstype == "btrfs" or device.startswith("/dev/") or os.name == "nt":
                key = device
            else:
                continue
            known = mounts.get(key)
            if known is None or len(part.mountpoint) < len(known):
                mounts[key] = part.mountpoint
        self.mounts = list(mounts.values()) or [os.path.abspath(os.sep)]

    def _counters(self) -> Dict[str, Any]:
        """Cumulative system counters: cpu user/sys seconds, per-disk and per-nic bytes."""
        ps = self.ps
        prev = self.system_prev or {"cpu": (0.0, 0.0), "disks": {}, "nics": {}}
        out = dict(prev)
        try:
            cpu = ps.cpu_times()
            out["cpu"] = (
                cpu.user + getattr(cpu, "nice", 0.0),
                cpu.system + getattr(cpu, "irq", 0.0) + getattr(cpu, "softirq", 0.0),
            )
        except Exception:
            pass
        try:
            disks = ps.disk_io_counters(perdisk=True) or {}
            out["disks"] = {
                name: (float(d.read_bytes), float(d.write_bytes))
                for name, d in disks.items()
                if (name in self.disks if self.disks is not None else True)
                and not name.startswith(SKIPPED_DISK_PREFIXES)
            }
        except Exception:
            pass
        try:
            nics = ps.net_io_counters(pernic=True) or {}
            out["nics"] = {
                name: (float(n.bytes_recv), float(n.bytes_sent))
                for name, n in nics.items()
                if not _is_loopback(name)
            }
        except Exception:
            pass
        return out

    def _system(self, now: float) -> Dict[str, float]:
        """The system row's values (without timestamp and processes) as a dict."""
        ps = self.ps
        row = dict.fromkeys(SYSTEM_COLUMNS, 0.0)
        if self.refreshed_at == 0 or now - self.refreshed_at >= SYSTEM_REFRESH_SECONDS:
            self._refresh_devices()
            self.refreshed_at = now
        counters = self._counters()
        prev = self.system_prev
        if prev is not None:
            row["utime"] = max(0.0, counters["cpu"][0] - prev["cpu"][0])
            row["stime"] = max(0.0, counters["cpu"][1] - prev["cpu"][1])
            for table, cols in (
                ("disks", ("disk_read_bytes", "disk_write_bytes")),
                ("nics", ("net_recv_bytes", "net_sent_bytes")),
            ):
                for name, values in counters[table].items():
                    before = prev[table].get(name)
                    if before is None:
                        continue  # a new device: its counters start now
                    for col, v, b in zip(cols, values, before):
                        row[col] += max(0.0, v - b)
        self.system_prev = counters
        try:
            vm = ps.virtual_memory()
            buffers = getattr(vm, "buffers", 0)
            cached = getattr(vm, "cached", 0)  # psutil adds SReclaimable on Linux
            row["memory_free"] = vm.free / 1024.0
            row["memory_used"] = max(0.0, (vm.total - vm.free - buffers - cached) / 1024.0)
            row["memory_buffers"] = buffers / 1024.0
            row["memory_cached"] = cached / 1024.0
            row["memory_active"] = getattr(vm, "active", 0) / 1024.0
            row["memory_inactive"] = getattr(vm, "inactive", 0) / 1024.0
        except Exception:
            pass
        for mount in self.mounts:
            try:
                du = ps.disk_usage(mount)
            except Exception:
                continue
            row["disk_space_total_gb"] += du.total / 1e9
            row["disk_space_used_gb"] += du.used / 1e9
            row["disk_space_free_gb"] += du.free / 1e9
        return row

    # -- one reading -----------------------------------------------------------------

    def sample(
        self, mono: float, wall: float, own_cpu: Optional[float], own_memory_kib: float
    ) -> Optional[Tuple[List[float], List[float]]]:
        """The engine's reader: (process row, system row) as lists, or None for the baseline
        (own_cpu: the engine thread's CPU seconds, None outside it)."""
        self.reading_began_cpu = self.self_read_cpu = time.thread_time()
        dt = mono - self.last_mono
        try:
            pids = self.ps.pids()
        except Exception:
            pids = list(self.known)
        interval, memory, live, root_alive = self._tree(mono, own_cpu, pids)
        if live > 0:
            self.tree_seen += 1
        elif self.track_processes and self._root_hidden():
            self.tree_missed += 1
        srow = None
        if self.track_system:
            srow = self._system(mono)
        processes = len(pids)
        self.last_mono = mono
        if not self.has_baseline:
            self.has_baseline = True
            return None
        if self.track_processes and self.self_pid in self.members:
            memory = max(0.0, memory - own_memory_kib)
        prow = [0.0] * len(PROCESS_COLUMNS)
        prow[_P["timestamp"]] = wall
        prow[_P["pid"]] = float(self.pid)
        prow[_P["children"]] = float(live - (1 if root_alive else 0))
        prow[_P["utime"]] = interval[0]
        prow[_P["stime"]] = interval[1]
        prow[_P["cpu_usage"]] = _core.cpu_rate(interval[0] + interval[1], dt, float(self.cpus))
        prow[_P["memory"]] = memory
        prow[_P["read_bytes"]] = interval[2]
        prow[_P["write_bytes"]] = interval[3]
        if srow is None:
            srow = dict.fromkeys(SYSTEM_COLUMNS, 0.0)
        srow["timestamp"] = wall
        srow["processes"] = float(processes)
        srow["cpu_usage"] = _core.cpu_rate(srow["utime"] + srow["stime"], dt, float(_MACHINE_CPUS))
        return prow, [float(srow[name]) for name in SYSTEM_COLUMNS]


def _process_cpus(psutil: Any, pid: int) -> int:
    """The CPUs pid may run on (its affinity, where the platform has one), at most the
    machine's; the machine's when it cannot be read (macOS has no affinity)."""
    try:
        allowed = len(psutil.Process(pid).cpu_affinity())
    except Exception:
        return _MACHINE_CPUS
    return allowed if 0 < allowed < _MACHINE_CPUS else _MACHINE_CPUS


_MACHINE_CPUS = os.cpu_count() or 1


class PsutilSampler:
    """The psutil reader on the C sampling engine: a ``sampling.Sampler``, as ``_core.Sampler``
    is. The engine (``_core.ReaderSampler``, csrc/engine.c) owns the thread, the schedule, the
    fold, the rows, the final reading and stop(); this class gives it the reader.

    Args:
        pid: root process of the workload.
        interval: seconds between samples.
        children: also track all descendants.
        track_processes: fill the process table.
        track_system: fill the system table.
    """

    def __init__(
        self,
        pid: int,
        interval: float,
        children: bool = True,
        track_processes: bool = True,
        track_system: bool = True,
    ) -> None:
        interval = _check_interval(interval)  # bounded: a timed wait cannot overflow
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= MAX_PID:
            raise ValueError(f"pid must be a positive process id (at most {MAX_PID}), got {pid!r}")
        try:
            import psutil
        except ImportError as exc:
            raise ImportError(
                "the psutil sampler needs psutil: pip install psutil (or resource-tracker[psutil])"
            ) from exc
        collector = _Collector(
            psutil, pid, bool(children), bool(track_processes), bool(track_system)
        )
        self._collector = collector
        self._engine = _core.ReaderSampler(
            collector.sample,
            float(interval),
            bool(track_processes),
            bool(track_system),
            float(collector.cpus),
            float(_MACHINE_CPUS),
        )
        _close_readers_at_exit()

    def start(self) -> None:
        """Starts the engine thread (RuntimeError when it was started before)."""
        self._engine.start()

    def stop(self) -> None:
        """Stops the thread after a last reading and joins it, waiting at most STOP_TIMEOUT
        seconds: a reading that hangs longer is left to end on its own (idempotent)."""
        self._engine.stop()

    def sample_now(self) -> Optional[Tuple[List[float], List[float]]]:
        """One reading in this thread: (process_row, system_row), or None for the baseline."""
        rows: Optional[Tuple[List[float], List[float]]] = self._engine.sample_now()
        return rows

    def wait(self, n: int, timeout: float) -> bool:
        """Waits up to timeout seconds until n rows are stored: True when there are."""
        return bool(self._engine.wait(n, timeout))

    def columns(self, table: str) -> List[bytes]:
        """One bytes object of float64 values per column of 'process' or 'system'."""
        cols: List[bytes] = self._engine.columns(table)
        return cols

    def column_views(self, table: str) -> Optional[List[memoryview]]:
        """Read-only float64 views of the stored columns (no copy; the rows are final from
        then on), or None while the sampler is not stopped."""
        views: Optional[List[memoryview]] = self._engine.column_views(table)
        return views

    @property
    def state(self) -> str:
        """'new', 'running' or 'stopped'."""
        return str(self._engine.state)

    @property
    def n_samples(self) -> int:
        """Rows stored so far."""
        return int(self._engine.n_samples)

    @property
    def start_time(self) -> float:
        """Start, seconds since the epoch (0.0 before start)."""
        return float(self._engine.start_time)

    @property
    def stop_time(self) -> float:
        """Stop, seconds since the epoch (0.0 while running)."""
        return float(self._engine.stop_time)

    @property
    def interval(self) -> float:
        """Seconds between samples."""
        return float(self._engine.interval)

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the engine thread (its readings included)."""
        return float(self._engine.cpu_seconds)

    @property
    def samples_taken(self) -> float:
        """Readings taken, the baseline included (as ``_core.Sampler.samples_taken``)."""
        return float(self._engine.samples_taken)

    @property
    def read_errors(self) -> float:
        """Readings that failed as a whole (and gave no row)."""
        return float(self._engine.read_errors)

    @property
    def rows_dropped(self) -> float:
        """Rows lost because memory ran out (each later row tries again)."""
        return float(self._engine.rows_dropped)

    @property
    def io_denied(self) -> float:
        """Reads of a member's I/O counters that were refused (another user's process)."""
        return float(self._collector.io_denied)

    @property
    def pss_denied(self) -> float:
        """Reads of a member's PSS (memory_full_info) that were refused."""
        return float(self._collector.pss_denied)

    @property
    def tree_seen(self) -> float:
        """Readings that found a live process of the tracked tree."""
        return float(self._collector.tree_seen)

    @property
    def tree_missed(self) -> float:
        """Readings that found no process of the tree while its root lived (hidden)."""
        return float(self._collector.tree_missed)

    # psutil has no kernel high-water mark of a process's memory (0: unknown).
    memory_hwm: float = 0.0


_gate_registered = False


def _close_readers_at_exit() -> None:
    """Registers ``_core.close_readers`` with atexit once: no engine thread calls Python while
    the interpreter finalizes."""
    global _gate_registered
    if not _gate_registered:
        import atexit

        atexit.register(_core.close_readers)
        _gate_registered = True


if TYPE_CHECKING:  # mypy proves this sampler is what sampling.py says a sampler is
    from .sampler_protocol import RowSampler

    def _implements(sampler: PsutilSampler) -> RowSampler:
        return sampler
