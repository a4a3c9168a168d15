"""Column names of the two tables and their readable labels (as the seeds show them)."""

from __future__ import annotations

from ._core import PROCESS_COLUMNS, SYSTEM_COLUMNS

SYSTEM_LABELS = {
    "timestamp": "Timestamp",
    "processes": "System processes",
    "utime": "System CPU time (user)",
    "stime": "System CPU time (system)",
    "cpu_usage": "System CPU usage",
    "memory_free": "System free memory",
    "memory_used": "System used memory",
    "memory_buffers": "System memory buffers",
    "memory_cached": "System memory page/file cached",
    "memory_active": "System active memory",
    "memory_inactive": "System inactive memory",
    "disk_read_bytes": "System disk read",
    "disk_write_bytes": "System disk write",
    "disk_space_total_gb": "System disk space total",
    "disk_space_used_gb": "System disk space used",
    "disk_space_free_gb": "System disk space free",
    "net_recv_bytes": "System inbound network traffic",
    "net_sent_bytes": "System outbound network traffic",
    "gpu_usage": "System GPU usage",
    "gpu_vram": "System VRAM used",
    "gpu_utilized": "System GPUs in use",
}

PROCESS_LABELS = {
    "pid": "Process PID",
    "children": "Process children",
    "utime": "Process CPU time (user)",
    "stime": "Process CPU time (system)",
    "cpu_usage": "Process CPU usage",
    "memory": "Process memory usage",
    "read_bytes": "Process disk read",
    "write_bytes": "Process disk write",
    "gpu_usage": "Process GPU usage",
    "gpu_vram": "Process VRAM used",
    "gpu_utilized": "Process GPUs in use",
}

__all__ = ["PROCESS_COLUMNS", "SYSTEM_COLUMNS", "SYSTEM_LABELS", "PROCESS_LABELS"]
