"""Roles in the registry: views find columns by the role or chart an entry declares, never by
its unit or label. The recipe of docs/architecture.md ("Adding a metric"), proved with a
test-only third byte-sum system column: watch, the summary lines and the report still pick
the disk's read and write (and the network's) columns, and draw the new one where its entry
says."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from array import array

import pytest
from workloads import wait_for_baseline

from resource_tracker import ResourceTracker, registry
from resource_tracker.cli.summary import lines_of, size, watch_line
from resource_tracker.report._render import render_summary

#: A test-only entry: a third byte total of the machine, labelled with the word "network"
#: (as an NFS client's reads could be) but drawn with the disk I/O.
NFS_READ = registry.Column(
    table="system",
    name="nfs_read_bytes",
    label="System network file system read",
    unit="B",
    fold="sum",
    aggregate="sum",
    resource=None,
    digits=0,
    role="nfs_read",
    chart="diskio",
)


@contextlib.contextmanager
def registered(entry):
    """The registry with ``entry`` added (as one more line in csrc/columns.c would)."""
    before = registry.COLUMNS
    registry._install(before + (entry,))
    try:
        yield
    finally:
        registry._install(before)


class _RunWithThirdColumn:
    """A stopped real run whose system table carries the test-only column too (what watch
    reads: the two tables and the interval)."""

    def __init__(self, tracker):
        self.interval = tracker.interval
        self.process_metrics = tracker.process_metrics
        self.system_metrics = tracker.system_metrics
        n = len(self.system_metrics)
        # far above any real disk figure of this run: picking it shows at once
        self.system_metrics[NFS_READ.name] = array("d", (7e12 + i for i in range(n)))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One real tracked run with disk writes (fsync'd), its summary built with the test-only
    entry registered."""
    path = tmp_path_factory.mktemp("roles") / "data.bin"
    with ResourceTracker(interval=0.05) as tracker:
        wait_for_baseline(tracker)  # the writes come after it: in the rows
        with open(path, "wb") as f:
            f.write(os.urandom(1 << 21))
            f.flush()
            os.fsync(f.fileno())
        end = time.thread_time() + 0.2
        while time.thread_time() < end:
            pass
        tracker.wait_for_samples(4, timeout=20)
    with registered(NFS_READ):
        summary = tracker.summary(lookup_server=False)
    return tracker, _RunWithThirdColumn(tracker), summary


def test_every_column_declares_a_role_unique_in_its_table():
    for table in ("process", "system"):
        roles = [c.role for c in registry.columns(table)]
        assert all(roles) and len(set(roles)) == len(roles), roles
    for role in ("cpu", "memory", "disk_read", "disk_write", "gpu", "vram", "timestamp"):
        assert registry.by_role("process", role).table == "process"
        assert registry.by_role("system", role).table == "system"
    assert registry.by_role("system", "net_recv").name == "net_recv_bytes"
    assert registry.by_role("system", "net_sent").name == "net_sent_bytes"
    assert [c.name for c in registry.by_chart("network")] == ["net_recv_bytes", "net_sent_bytes"]
    assert registry.by_key("system_disk_read_bytes") is registry.by_role("system", "disk_read")
    with pytest.raises(KeyError, match="no column with the role 'nope' in the system table"):
        registry.by_role("system", "nope")
    with pytest.raises(ValueError, match="share a role"):
        registry._install(registry.COLUMNS + (NFS_READ._replace(role="disk_read"),))
    assert registry.by_role("system", "disk_read").name == "disk_read_bytes"


def test_watch_picks_disk_and_network_by_role(run):
    tracker, with_third, _ = run
    with registered(NFS_READ):
        line = watch_line(with_third, os.getpid(), 2)
    system, step = with_third.system_metrics, with_third.interval

    def rate(name):
        return size(system.column_array(name)[-1] / step)

    assert (
        f" disk {rate('disk_read_bytes')}/s r {rate('disk_write_bytes')}/s w"
        f" net {rate('net_recv_bytes')}/s in {rate('net_sent_bytes')}/s out"
    ) in line, line
    proc = with_third.process_metrics
    io = (
        f"io {size(proc.column_array('read_bytes')[-1] / step)}/s r "
        f"{size(proc.column_array('write_bytes')[-1] / step)}/s w"
    )
    assert io in line, line


def test_summary_lines_pick_disk_and_network_by_role(run):
    tracker, _, summary = run
    stats = tracker.stats()
    assert stats["process_write_bytes"]["sum"] > 0  # the fsync'd MiBs are there to be shown

    def total(key):
        return size(stats[key]["sum"])

    with registered(NFS_READ):
        lines = lines_of(summary, server=False)
    disk = next(x for x in lines if x.lstrip().startswith("disk I/O"))
    assert disk.split(None, 2)[2] == (
        f"read {total('process_read_bytes')}, written {total('process_write_bytes')} "
        f"(machine: read {total('system_disk_read_bytes')}, "
        f"written {total('system_disk_write_bytes')})"
    )
    network = next(x for x in lines if x.lstrip().startswith("network"))
    assert network.split(None, 1)[1] == (
        f"received {total('system_net_recv_bytes')}, "
        f"sent {total('system_net_sent_bytes')} (machine)"
    )


def test_report_draws_each_column_in_its_declared_chart(run):
    tracker, with_third, summary = run
    with registered(NFS_READ):
        page = render_summary(summary, with_third.process_metrics, with_third.system_metrics)
    found = re.search(r'<script type="application/json" id="rt-data">(.*?)</script>', page, re.S)
    assert found, "no chart data in the page"
    data = json.loads(found.group(1))
    charts = {c["id"]: [(s["table"], s["key"]) for s in c["series"]] for c in data["charts"]}
    assert charts["diskio"] == [
        ("p", "read_bytes"),
        ("p", "write_bytes"),
        ("s", "disk_read_bytes"),
        ("s", "disk_write_bytes"),
        ("s", "nfs_read_bytes"),
    ]
    assert charts["network"] == [("s", "net_recv_bytes"), ("s", "net_sent_bytes")]
    assert charts["memory"] == [("p", "memory"), ("s", "memory_used")]
    assert charts["cpu"] == [("p", "cpu_usage"), ("s", "cpu_usage")]
    assert "nfs_read_bytes" in data["tables"]["s"]["s"]
