"""The procfs Sampler and the psutil backend's ReaderSampler run on one C engine (csrc/engine.c):
the engine's rules hold for both alike."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from build_variant import needs_procfs


@needs_procfs
def test_a_forked_child_sees_both_engine_types_stopped_at_the_fork():
    # In the child no engine thread exists: each sampler reads as stopped, its stop time the
    # moment of the fork (after its start, before the child's own clock reading), its rows
    # kept, and stop() returns at once. (Before the procfs Sampler ran on the engine, its
    # child copy read as stopped with stop_time 0.)
    code = textwrap.dedent(
        """
        import os, time
        from resource_tracker import _core
        procfs = _core.Sampler(os.getpid(), 0.005)
        reader = _core.ReaderSampler(lambda *a: None, 0.005)
        for s in (procfs, reader):
            s.start()
        assert procfs.wait(2, 10.0)
        rows = procfs.n_samples
        pid = os.fork()
        if pid == 0:
            now = time.time()
            ok = all(s.state == "stopped" and s.start_time <= s.stop_time <= now
                     for s in (procfs, reader))
            ok = ok and procfs.n_samples >= rows
            for s in (procfs, reader):
                s.stop()
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert procfs.state == reader.state == "running"
        for s in (procfs, reader):
            s.stop()
        assert procfs.stop_time >= procfs.start_time > 0
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
