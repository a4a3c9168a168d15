"""Rules of the C core checked in C without Python, each a program under tests/core/c/
compiled with the system's C compiler (with AddressSanitizer and UndefinedBehaviorSanitizer
when the compiler has them) against the csrc/ files it needs only, and run.

stats_check.c (csrc/stats.c, columns.c, float64_text.c, pid_map.c, row_rules.c,
cgroup_parse.c, schedule.c): percentiles
by selection against a full sort on random, repeated, sorted, reversed, organ-pipe and
constant inputs up to 86,400 values; one table's statistics; the history rule of the
recommendation; the snapshot's column text; the pid map that counts each GPU process once;
the rules of a row (the CPU rate's clock-tick floor and cap, the fold); the one parser of
the "key value" cgroup files; the tick schedule (the grid, skipping ahead, the last
partial interval).

tree_check.c (csrc/proc_tree.c, sched_wait.c, task_children.c, fd_budget.c, procfs_parse.c,
textbuf.c): the
PSS round schedule of real process trees read from the real /proc, on an injected clock
(proc_tree_sample takes the tick's time): a round when the last is PSS_MAX_AGE old,
PSS_IDLE_MAX_AGE for an idle tree; and the listing of procfs on a fake root: due every
LISTING_MAX_AGE, not made while /proc/loadavg shows nothing created or reaped, made once it
does; the children lists on a fake root: read when pids were handed out (or the one new pid
looked up), else only every CHILDREN_SCAN_MAX_AGE; the run-queue wait's reads on a fake root
of 64 one-thread processes: with the walk's hints a member's own schedstat, none while its CPU
did not move; without (a cgroup's tree) every ceil(64 / 32)-th tick, the total kept. No check
waits for any of these ages.

frames_check.c (csrc/frame_table.c): the code profile's frame table: interning, the bound
(refused and counted, nothing changed), and a simulated day at 1 s (86,400 ticks of four
running threads in a loop) within 8 MiB.

cgroup_check.c (csrc/cgroup_tree.c, cgroup_parse.c, procfs_parse.c, textbuf.c,
proc_tree.c, fd_budget.c): the re-read age of the cgroup source, on an injected clock
(cgroup_tree_sample takes the tick's time), over a real tree in a v2 cgroup laid out in a
temporary directory: a stranger written into a child cgroup's cgroup.procs is not seen
before CGROUP_PROCS_MAX_AGE (t0 + 4.9) and is after (t0 + 5.1), ending the source and named
in its note; with the tree's own pids.current unchanged, and with a child cgroup made after
the first reading (found again only every CGROUP_PROCS_MAX_AGE).

engine_check.c (csrc/engine.c, schedule.c, row_rules.c, table.c, columns.c, thread_start.c;
the stop bound ENGINE_STOP_TIMEOUT injected as 0.05 s): a thread held up between readings, or
before its first (as a starved thread on a loaded machine is), when stop() gives up on it:
freeing the engine leaves the reader to the thread, which takes no further reading, releases
the reader once itself and then frees it (before, the caller released it and the thread read
on: the xdist worker's segfault in the soak). And the table: a mapped column's +0.0 left
unwritten (its pages stay untouched), a row taken back reading as zero.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS = {
    "stats_check": [
        "csrc/stats.c",
        "csrc/columns.c",
        "csrc/float64_text.c",
        "csrc/pid_map.c",
        "csrc/row_rules.c",
        "csrc/cgroup_parse.c",
        "csrc/schedule.c",
    ],
    "tree_check": [
        "csrc/proc_tree.c",
        "csrc/sched_wait.c",
        "csrc/task_children.c",
        "csrc/fd_budget.c",
        "csrc/procfs_parse.c",
        "csrc/textbuf.c",
    ],
    "frames_check": ["csrc/frame_table.c"],
    "cgroup_check": [
        "csrc/cgroup_tree.c",
        "csrc/cgroup_parse.c",
        "csrc/procfs_parse.c",
        "csrc/textbuf.c",
        "csrc/proc_tree.c",
        "csrc/task_children.c",
        "csrc/fd_budget.c",
    ],
    "engine_check": [
        "csrc/engine.c",
        "csrc/schedule.c",
        "csrc/row_rules.c",
        "csrc/table.c",
        "csrc/columns.c",
        "csrc/thread_start.c",
    ],
}
# the engine's stop bound injected: stop() gives up on a held-up thread in 0.05 s, not 2 s
CHECK_FLAGS = {"engine_check": ["-pthread", "-DENGINE_STOP_TIMEOUT=0.05"]}


def _compiler():
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def _build(cc, check, out, sanitize):
    flags = ["-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-Wall", "-Wextra", "-Werror"]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    flags += CHECK_FLAGS.get(check, [])
    cmd = [cc, *flags, "-I", os.path.join(ROOT, "csrc"), "-o", out]
    cmd += [os.path.join(ROOT, f"tests/core/c/{check}.c")]
    cmd += [os.path.join(ROOT, s) for s in CHECKS[check]] + ["-lm"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _run_check(check, tmp_path):
    """The number of checks the program made (it stops at the first that fails)."""
    cc = _compiler()
    out = str(tmp_path / check)
    built = _build(cc, check, out, sanitize=True)
    if built.returncode != 0:  # no sanitizer runtime: the plain build still checks the rules
        built = _build(cc, check, out, sanitize=False)
    assert built.returncode == 0, built.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="halt_on_error=1")
    env.pop("LD_PRELOAD", None)
    run = subprocess.run([out], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("ok "), run.stdout
    return int(run.stdout.split()[1])


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
def test_stats_rules_in_c_without_python(tmp_path):
    assert _run_check("stats_check", tmp_path) > 500  # every check ran


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
def test_pss_round_schedule_in_c_on_an_injected_clock(tmp_path):
    """Replaces waiting 45 s of real time: 150 ticks of the injected clock in under a second."""
    assert _run_check("tree_check", tmp_path) > 140  # every tick checked


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
def test_frame_table_holds_a_day_at_one_second_within_8_mib(tmp_path):
    """Replaces a 24 h run: 86,400 ticks x 4 threads in a loop, no sample refused."""
    assert _run_check("frames_check", tmp_path) > 86400 * 4  # every sample checked


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
def test_cgroup_procs_read_again_by_age_in_c_on_an_injected_clock(tmp_path):
    """Replaces waiting 5.1 s of real time for CGROUP_PROCS_MAX_AGE: the ticks before it pass
    a stranger by, the first after it reads it."""
    assert _run_check("cgroup_check", tmp_path) > 30  # every tick checked


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler")
def test_engine_given_up_on_by_stop_keeps_its_reader_until_it_ends(tmp_path):
    """Replaces a crash seen once in a while on a loaded machine: stop() gives up on a thread
    held up (on an injected 0.05 s bound) and the thread, let go, reads nothing released."""
    assert _run_check("engine_check", tmp_path) > 100  # both cases, five times each
