"""The system counters' rules, checked on a fake procfs and sysfs tree (the sampler reads
them through the same paths as the real ones, via proc_root / sys_root). The C sampler only:
psutil reads the real /proc and /sys and has no other root to point at."""

from __future__ import annotations

import os

import pytest

from resource_tracker import _core
from resource_tracker.names import SYSTEM_COLUMNS

DISKS = ["sda", "sda1", "sda2", "sdb", "dm-0", "md0", "loop0", "zram0", "nvme0n1", "nvme0n1p1"]


def diskstats(read, written):
    """diskstats text where every device read `read` and wrote `written` sectors."""
    return "".join(
        f"   8       {i} {name} 10 0 {read} 5 20 0 {written} 7 0 9 12 0 0 0 0 0 0\n"
        for i, name in enumerate(DISKS)
    )


def net_dev(lo, eth, veth):
    return (
        "Inter-|   Receive                            |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets\n"
        f"    lo: {lo} 1 0 0 0 0 0 0 {lo} 1 0 0 0 0 0 0\n"
        f"  eth0: {eth} 1 0 0 0 0 0 0 {eth * 2} 1 0 0 0 0 0 0\n"
        f"veth12: {veth} 1 0 0 0 0 0 0 {veth} 1 0 0 0 0 0 0\n"
    )


def write_proc(root, cpu_user, read, written, lo, eth, veth):
    (root / "net").mkdir(exist_ok=True)
    (root / "self").mkdir(exist_ok=True)
    (root / "stat").write_text(f"cpu  {cpu_user} 0 100 5000 0 0 0 0 0 0\ncpu0 1 2 3 4\n")
    (root / "meminfo").write_text(
        "MemTotal: 1000000 kB\nMemFree: 400000 kB\nMemAvailable: 600000 kB\n"
        "Buffers: 10000 kB\nCached: 150000 kB\nSReclaimable: 40000 kB\n"
        "Active: 300000 kB\nInactive: 200000 kB\n"
    )
    (root / "diskstats").write_text(diskstats(read, written))
    (root / "net" / "dev").write_text(net_dev(lo, eth, veth))
    (root / "self" / "mountinfo").write_text(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "23 22 8:1 /data /srv rw,relatime shared:2 - ext4 /dev/sda1 rw\n"
        "24 22 0:33 / /tmp rw - tmpfs tmpfs rw\n"
        "25 22 7:0 / /snap/x ro - squashfs /dev/loop0 ro\n"
    )


def make_sys(root):
    for name in ("sda", "sdb", "loop0", "nvme0n1"):
        (root / "block" / name / "slaves").mkdir(parents=True)
    (root / "block" / "dm-0" / "slaves" / "sda2").mkdir(parents=True)  # on top of sda2
    (root / "block" / "md0" / "slaves" / "sdb").mkdir(parents=True)  # on top of sdb


@pytest.fixture
def fake_roots(tmp_path):
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    make_sys(sys_root)
    write_proc(proc, cpu_user=1000, read=100, written=200, lo=10**9, eth=5000, veth=300)
    return proc, sys_root


def test_counts_whole_disks_once_network_without_loopback(fake_roots):
    proc, sys_root = fake_roots
    sampler = _core.Sampler(
        os.getpid(), 1.0, track_processes=False, proc_root=str(proc), sys_root=str(sys_root)
    )
    assert sampler.sample_now() is None  # baseline
    write_proc(proc, cpu_user=1250, read=110, written=230, lo=2 * 10**9, eth=6000, veth=350)
    _, row = sampler.sample_now()
    got = dict(zip(SYSTEM_COLUMNS, row))
    # sda, sdb and nvme0n1 are whole disks: 3 x 10 sectors x 512 bytes (partitions,
    # dm-0 / md0 stacked on them, loop0 and zram0 are not counted)
    assert got["disk_read_bytes"] == 3 * 10 * 512
    assert got["disk_write_bytes"] == 3 * 30 * 512
    # eth0 and veth12, never lo
    assert got["net_recv_bytes"] == 1000 + 50
    assert got["net_sent_bytes"] == 2000 + 50
    # CPU ticks -> seconds (USER_HZ), memory as free(1) computes it, in KiB
    assert got["utime"] == pytest.approx(250 / os.sysconf("SC_CLK_TCK"))
    assert got["memory_used"] == 1000000 - 400000 - 10000 - 150000 - 40000
    assert got["memory_cached"] == 150000 + 40000
    assert got["memory_free"] == 400000 and got["memory_buffers"] == 10000
    # one real filesystem (8:1 mounted twice, tmpfs and the loop squashfs left out)
    vfs = os.statvfs("/")
    assert got["disk_space_total_gb"] == pytest.approx(vfs.f_blocks * vfs.f_frsize / 1e9)


def test_missing_and_garbage_files_record_zeros_not_crashes(fake_roots):
    proc, sys_root = fake_roots
    sampler = _core.Sampler(
        os.getpid(), 1.0, track_processes=False, proc_root=str(proc), sys_root=str(sys_root)
    )
    sampler.sample_now()
    (proc / "diskstats").unlink()
    (proc / "net" / "dev").write_text("garbage\n\x00\xff")
    (proc / "meminfo").write_text("")
    _, row = sampler.sample_now()
    got = dict(zip(SYSTEM_COLUMNS, row))
    assert got["disk_read_bytes"] == 0 and got["net_recv_bytes"] == 0
    assert got["memory_used"] == 0
    assert sampler.read_errors >= 2  # garbage net/dev and empty meminfo are counted
