"""The text the commands show about a run: the summary lines of `run` and `stats`, the live
line of `watch`, and how resources, servers and exit statuses are described."""

from __future__ import annotations

import signal


def size(nbytes) -> str:
    """A byte count for people: '0 B', '12.3 KiB', '1.5 GiB'."""
    value = float(nbytes or 0)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def describe_status(status: int) -> str:
    """'exited with status N' or 'was killed by SIGX (exit status 128+N)'."""
    if status > 128:
        try:
            name = signal.Signals(status - 128).name
        except ValueError:
            name = f"signal {status - 128}"
        return f"was killed by {name} (exit status {status})"
    return f"exited with status {status}"


def _get(stats: dict, key: str, field: str, default: float = 0.0) -> float:
    value = (stats.get(key) or {}).get(field)
    return default if value is None else value


def _row(label: str, text: str) -> str:
    return f"  {label:<11} {text}"


# -- the summary of a run --------------------------------------------------------------------


def summary_lines(tracker, historical_stats=None, server: bool = True) -> list:
    """The summary of a (stopped) tracker, as lines for stderr."""
    try:
        stats = tracker.stats()
    except Exception as exc:
        return [f"  no statistics: {type(exc).__name__}: {exc}"]
    ts = stats.get("timestamp") or {}
    info = tracker.server_info or {}
    lines = [
        _row(
            "duration",
            f"{ts.get('duration', 0.0):.1f} s, {int(ts.get('samples', 0))} samples every "
            f"{tracker.interval:g} s",
        )
    ]
    lines += _usage_rows(stats, info)
    try:
        res = tracker.recommend_resources(historical_stats=historical_stats)
    except ValueError as exc:
        return lines + [_row("recommended", f"nothing ({exc})")]
    lines.append(_row("recommended", describe_resources(res)))
    if server:
        lines += server_lines(tracker, res, ts.get("duration") or 0.0, {})
    return lines


def _usage_rows(stats: dict, info: dict) -> list:
    """CPU, memory, GPU, children, disk I/O, network, and the data quality notes."""
    from .._text import printable
    from ..tracker import data_quality_notes

    vcpus, mem_total = info.get("vcpus"), info.get("memory_mb")
    rows = [
        _row(
            "CPU",
            f"mean {_get(stats, 'process_cpu_usage', 'mean'):.2f}, "
            f"peak {_get(stats, 'process_cpu_usage', 'max'):.2f} cores"
            + (f" (machine: {vcpus} vCPUs" if vcpus else " (machine")
            + f", mean {_get(stats, 'system_cpu_usage', 'mean'):.2f} cores in use)",
        ),
        _row(
            "memory",
            f"peak {size(_get(stats, 'process_memory', 'max') * 1024)}"
            + f" (machine: peak {size(_get(stats, 'system_memory_used', 'max') * 1024)} used"
            + (f" of {size(mem_total * 2**20)})" if mem_total else ")"),
        ),
        _gpu_row(stats, info),
        _row("children", f"peak {_get(stats, 'process_children', 'max'):.0f}"),
        _row(
            "disk I/O",
            f"read {size(_get(stats, 'process_read_bytes', 'sum'))}, "
            f"written {size(_get(stats, 'process_write_bytes', 'sum'))} "
            f"(machine: read {size(_get(stats, 'system_disk_read_bytes', 'sum'))}, "
            f"written {size(_get(stats, 'system_disk_write_bytes', 'sum'))})",
        ),
        _row(
            "network",
            f"received {size(_get(stats, 'system_net_recv_bytes', 'sum'))}, "
            f"sent {size(_get(stats, 'system_net_sent_bytes', 'sum'))} (machine)",
        ),
    ]
    return rows + [_row("incomplete", printable(note)) for note in data_quality_notes(stats)]


def _gpu_row(stats: dict, info: dict) -> str:
    gpus = _get(stats, "process_gpu_utilized", "max")
    if gpus or _get(stats, "system_gpu_utilized", "max") or info.get("gpu_count"):
        return _row(
            "GPU",
            f"peak {gpus:.0f} GPUs in use, usage peak {_get(stats, 'process_gpu_usage', 'max'):.2f}"
            f", VRAM peak {size(_get(stats, 'process_gpu_vram', 'max') * 2**20)}",
        )
    return _row("GPU", "none used")


def describe_resources(res: dict) -> str:
    """'2 CPU, 512 MiB memory[, 1 GPU, 8192 MiB VRAM]'."""
    text = f"{res['cpu']} CPU, {res['memory']} MiB memory"
    if res.get("gpu"):
        text += f", {res['gpu']} GPU, {res['vram']} MiB VRAM"
    return text


def describe_server(server) -> str:
    """'vendor server (N vCPUs, M GiB, K GPUs, $P/h)'."""
    if not isinstance(server, dict):
        return str(server)
    name = f"{server.get('vendor_id', '?')} {server.get('server_id', '?')}"
    parts = []
    if server.get("vcpus") is not None:
        parts.append(f"{server['vcpus']} vCPUs")
    if server.get("memory_amount") is not None:
        parts.append(f"{server['memory_amount'] / 1024:g} GiB")
    if server.get("gpu_count"):
        parts.append(f"{server['gpu_count']:g} GPUs")
    price = server.get("price", server.get("min_price"))
    if price is not None:
        parts.append(f"${price:.4f}/h")
    return name + (f" ({', '.join(parts)})" if parts else "")


def server_lines(tracker, resources: dict, duration: float, filters: dict) -> list:
    """Lines on the cheapest fitting server and the cost of the run (or why there is none)."""
    from .servers import find_servers, run_costs

    found, why = find_servers(resources, **filters)
    if found is None:
        return [_row("server", why)]
    first = found[0] if isinstance(found, list) and found else found
    lines = [_row("server", describe_server(first))]
    if isinstance(first, dict) and first.get("price_source"):
        lines.append(_row("prices", first["price_source"]))
    cost = describe_costs(run_costs(duration, tracker.cloud_info, first))
    if cost:
        lines.append(_row("cost", cost))
    return lines


def describe_costs(costs: dict) -> str:
    """The cost line of a run ('' when unknown)."""
    parts = []
    if costs.get("run_cost_usd") is not None:
        note = costs.get("current_price_note")
        parts.append(
            f"this run ${costs['run_cost_usd']:.6f} on this server" + (f" ({note})" if note else "")
        )
    if costs.get("recommended_run_cost_usd") is not None:
        parts.append(f"${costs['recommended_run_cost_usd']:.6f} on the recommended server")
    if costs.get("saving_usd") is not None:
        parts.append(f"saving ${costs['saving_usd']:.6f}")
    return ", ".join(parts)


# -- the live line of watch ------------------------------------------------------------------


def _last(df, name: str) -> float:
    col = df.column_array(name) if len(df) else None
    return col[-1] if col else 0.0


def watch_line(tracker, pid, vcpus) -> str:
    """One line on the latest sample."""
    import time

    system = tracker.system_metrics
    stamp = _last(system, "timestamp") or time.time()
    parts = [time.strftime("%H:%M:%S", time.localtime(stamp))]
    if pid is not None:
        parts.append(_process_part(tracker.process_metrics, pid, tracker.interval))
    step = tracker.interval
    parts.append(
        f"system: cpu {_last(system, 'cpu_usage'):5.2f}"
        + (f"/{vcpus}" if vcpus else "")
        + f" mem {size(_last(system, 'memory_used') * 1024):>10}"
        f" disk {size(_last(system, 'disk_read_bytes') / step)}/s r "
        f"{size(_last(system, 'disk_write_bytes') / step)}/s w"
        f" net {size(_last(system, 'net_recv_bytes') / step)}/s in "
        f"{size(_last(system, 'net_sent_bytes') / step)}/s out"
    )
    return " | ".join(parts)


def _process_part(proc, pid: int, step: float) -> str:
    text = (
        f"pid {pid}: cpu {_last(proc, 'cpu_usage'):5.2f} "
        f"mem {size(_last(proc, 'memory') * 1024):>10} "
        f"children {_last(proc, 'children'):.0f} "
        f"io {size(_last(proc, 'read_bytes') / step)}/s r "
        f"{size(_last(proc, 'write_bytes') / step)}/s w"
    )
    if _last(proc, "gpu_utilized"):
        text += f" gpu {_last(proc, 'gpu_usage'):.2f} vram {size(_last(proc, 'gpu_vram') * 2**20)}"
    return text
