"""The text the commands show about a run: the summary lines of `run` and `stats`, the live
line of `watch`, and how resources, servers and exit statuses are described."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Protocol, Sequence

from .. import formatting as fmt
from .._energy import energy_lines
from ..code_view import peak_text, top_cpu_text
from ..registry import Column, by_role, traffic_columns

if TYPE_CHECKING:
    from ..summary import RunSummary
    from ..tiny_data_frame import TinyDataFrame


def size(nbytes: Optional[float]) -> str:
    """A byte count for people ('0 B', '12.3 KiB', '1.5 GiB'): formatting.nbytes, 0 for
    unknown."""
    return fmt.nbytes(nbytes or 0)


def describe_status(status: int) -> str:
    """'exited with status N' or 'was killed by SIGX (exit status 128+N)'."""
    if status > 128:
        try:
            name = signal.Signals(status - 128).name
        except ValueError:
            name = f"signal {status - 128}"
        return f"was killed by {name} (exit status {status})"
    return f"exited with status {status}"


def _row(label: str, text: str) -> str:
    return f"  {label:<11} {text}"


def _value(summary: RunSummary, col: Column, field: str) -> float:
    """This run's `field` of a registry column in the summary (0 when unknown)."""
    row = summary.row(col.key, field)
    return row.value if row is not None and row.value is not None else 0.0


class Tracked(Protocol):
    """What these lines read of a tracker (``resource_tracker.ResourceTracker``, a layer
    above this one)."""

    interval: float

    @property
    def process_metrics(self) -> TinyDataFrame: ...
    @property
    def system_metrics(self) -> TinyDataFrame: ...
    def summary(self, historical_stats: Any = None, *, lookup_server: bool = True) -> RunSummary:
        """The run summary."""
        ...


# -- the summary of a run --------------------------------------------------------------------


def summary_lines(
    tracker: Tracked,
    historical_stats: Optional[Sequence[Mapping[str, Any]]] = None,
    server: bool = True,
) -> List[str]:
    """The summary of a (stopped) tracker, as lines for stderr: its run summary
    (``tracker.summary()``; the catalog is asked only when `server`)."""
    return lines_of(tracker.summary(historical_stats, lookup_server=server), server)


def lines_of(summary: RunSummary, server: bool = True) -> List[str]:
    """The lines of a RunSummary (no I/O: the summary holds the servers and costs)."""
    if summary.stats is None:
        return [f"  no statistics: {t}" for t in summary.warnings_about("data")[:1]] or [
            "  no statistics"
        ]
    ts = summary.stats.get("timestamp") or {}
    lines = [_row("job", summary.run.job)] if summary.run.job else []
    lines += [
        _row(
            "duration",
            f"{fmt.duration(summary.duration)}, "
            f"{fmt.plural(int(ts.get('samples', 0)), 'sample')} every "
            f"{fmt.duration(summary.run.interval or 0)}",
        )
    ]
    lines += _usage_rows(summary, summary.server_info or {})
    lines += insight_lines(summary)
    lines += code_lines(summary)
    if summary.resources is None:
        why = summary.warnings_about("recommendation")
        text = why[0].replace("No recommendation: ", "", 1) if why else "no data"
        return lines + [_row("recommended", f"nothing ({text})")]
    lines.append(_row("recommended", describe_resources(summary.resources)))
    if server:
        lines += server_lines(summary)
    energy = energy_lines(summary.stats.get("energy"))
    if energy is not None:
        lines.append(_row("energy", f"{energy[0]}; {energy[1]}"))
    return lines


def insight_lines(summary: RunSummary) -> List[str]:
    """One line per finding of the summary (``summary.insights``): its severity, its text."""
    return [_row(i.severity, i.message) for i in getattr(summary, "insights", ())]


def code_lines(summary: RunSummary) -> List[str]:
    """Where the memory peak and the most CPU were in the code (``summary.code``), when
    the run recorded its code profile (the phases' code is in the phases finding)."""
    view = getattr(summary, "code", None)
    if not isinstance(view, dict) or view.get("status") != "recorded":
        return []
    texts = (peak_text(view, str), top_cpu_text(view, str))
    return [_row("code", text) for text in texts if text]


def _usage_rows(summary: RunSummary, info: Mapping[str, Any]) -> List[str]:
    """CPU, memory, GPU, children, disk I/O, network, and the data quality notes."""
    vcpus, mem_total = info.get("vcpus"), info.get("memory_mb")
    cpu, machine_cpu = by_role("process", "cpu"), by_role("system", "cpu")
    memory, machine_memory = by_role("process", "memory"), by_role("system", "memory")
    rows = [
        _row(
            "CPU",
            f"mean {fmt.quantity(_value(summary, cpu, 'mean'), 'cores')}, "
            f"peak {fmt.quantity(_clamp(_value(summary, cpu, 'max'), vcpus), 'cores')}"
            + (f" (machine: {fmt.plural(vcpus, 'vCPU')}" if vcpus else " (machine")
            + f", mean {fmt.quantity(_clamp(_value(summary, machine_cpu, 'mean'), vcpus), 'cores')}"
            " in use)",
        ),
        _row(
            "memory",
            f"peak {size(_value(summary, memory, 'max') * 1024)}"
            + f" (machine: peak {size(_value(summary, machine_memory, 'max') * 1024)} used"
            + (f" of {size(mem_total * 2**20)})" if mem_total else ")"),
        ),
        _gpu_row(summary, info),
        _row("children", f"peak {fmt.quantity(_children(summary), 'processes')}"),
        _disk_row(summary),
        _network_row(summary),
    ]
    notes = summary.warnings_about("data")
    labels = [("error" if note.startswith("ERROR: ") else "incomplete") for note in notes]
    return rows + [_row(label, note) for label, note in zip(labels, notes)]


def _children(summary: RunSummary) -> float:
    return _value(summary, by_role("process", "children"), "max")


def _clamp(cores: float, vcpus: Optional[float]) -> float:
    """CPU never above the machine's cores (sampling jitter can read 2.08 of 2)."""
    return min(cores, float(vcpus)) if vcpus else cores


def _gpu_row(summary: RunSummary, info: Mapping[str, Any]) -> str:
    gpus = _value(summary, by_role("process", "gpu"), "max")
    machine_gpus = _value(summary, by_role("system", "gpu"), "max")
    if gpus or machine_gpus or info.get("gpu_count"):
        usage = _value(summary, by_role("process", "gpu_usage"), "max")
        vram = _value(summary, by_role("process", "vram"), "max")
        return _row(
            "GPU",
            f"peak {fmt.quantity(gpus, 'GPUs')} in use, usage peak {fmt.quantity(usage, 'GPUs')}, "
            f"VRAM peak {size(vram * 2**20)}",
        )
    return _row("GPU", "none used")


def _disk_row(summary: RunSummary) -> str:
    """Bytes read and written: the process tree's, then the machine's disks'."""
    (read, write), (machine_read, machine_write) = (
        (by_role(table, "disk_read"), by_role(table, "disk_write"))
        for table in ("process", "system")
    )
    return _row(
        "disk I/O",
        f"read {size(_value(summary, read, 'sum'))}, "
        f"written {size(_value(summary, write, 'sum'))} "
        f"(machine: read {size(_value(summary, machine_read, 'sum'))}, "
        f"written {size(_value(summary, machine_write, 'sum'))})",
    )


def _network_row(summary: RunSummary) -> str:
    traffic = traffic_columns()
    return _row(
        "network",
        f"received {size(_value(summary, traffic['inbound'], 'sum'))}, "
        f"sent {size(_value(summary, traffic['outbound'], 'sum'))} (machine)",
    )


def describe_resources(res: Mapping[str, Any]) -> str:
    """'1 CPU, 512 MiB memory[, 1 GPU, 8 GiB VRAM]' (memory and VRAM are MiB)."""
    text = f"{fmt.plural(res['cpu'], 'CPU')}, {size(res['memory'] * 2**20)} memory"
    if res.get("gpu"):
        text += f", {fmt.plural(res['gpu'], 'GPU')}, {size(res['vram'] * 2**20)} VRAM"
    return text


def describe_server(server: object, run_architecture: Optional[str] = None) -> str:
    """'vendor server (N vCPUs, M GiB, K GPUs, $P/h) arm64, burstable, region R, no GPU' and,
    when its architecture is not ``run_architecture``, a note saying so."""
    if not isinstance(server, dict):
        return str(server)
    name = f"{server.get('vendor_id', '?')} {server.get('server_id', '?')}"
    parts = []
    if server.get("vcpus") is not None:
        parts.append(fmt.plural(server["vcpus"], "vCPU"))
    if server.get("memory_amount") is not None:
        parts.append(size(server["memory_amount"] * 2**20))
    if server.get("gpu_count"):
        parts.append(fmt.plural(server["gpu_count"], "GPU"))
    price = server.get("price", server.get("min_price"))
    if price is not None:
        parts.append(fmt.money(price, "h"))
    text = name + (f" ({', '.join(parts)})" if parts else "")
    caveats, mismatch = fmt.server_caveats(server, run_architecture)
    text += (" " + ", ".join(caveats)) if caveats else ""
    return text + (f"; {mismatch}" if mismatch else "")


def server_lines(summary: RunSummary) -> List[str]:
    """Lines on the cheapest fitting server and the cost of the run (or why there is none),
    from the summary (the catalog was asked when it was built). Like every line of the
    commands they reach the terminal through common.out / common.say (made printable)."""
    choice = summary.server
    if choice.best is None:
        if choice.unavailable and not choice.no_match:
            return [_row("server", fmt.catalog_problem(choice.unavailable))]
        why = choice.no_match or choice.unavailable or "no server recommendation"
        return [_row("server", why.splitlines()[0])]
    first = choice.best
    run_arch = (summary.server_info or {}).get("architecture")
    lines = [_row("server", describe_server(first, run_arch))]
    if choice.alternative:
        lines.append(_row("or", fmt.alternative_server(choice.alternative)))
    if first.get("price_source"):
        lines.append(_row("prices", first["price_source"]))
    cost = describe_costs(choice.costs or {})
    if cost:
        lines.append(_row("cost", cost))
    return lines


def describe_costs(costs: Mapping[str, Any]) -> str:
    """The cost line of a run ('' when unknown)."""
    parts = []
    if costs.get("run_cost_usd") is not None:
        note = costs.get("current_price_note")
        parts.append(
            f"this run {fmt.money(costs['run_cost_usd'])} on this server"
            + (f" ({note})" if note else "")
        )
    if costs.get("recommended_run_cost_usd") is not None:
        parts.append(f"{fmt.money(costs['recommended_run_cost_usd'])} on the recommended server")
    if costs.get("saving_usd") is not None:
        parts.append(f"saving {fmt.money(costs['saving_usd'])}")
    return ", ".join(parts)


# -- the live line of watch ------------------------------------------------------------------
# The latest sample, not the run summary: a summary is a whole-run value (rebuilding it every
# tick would compute the statistics of the whole run once a second). Its columns, units and
# byte formatting come from the registry and this module, as the summary lines'.


def _last(df: TinyDataFrame, col: Column, step: float = 0.0) -> float:
    """The column's latest value (an amount per interval as a rate per second with step)."""
    values = df.column_array(col.name) if len(df) else None
    value: float = values[-1] if values else 0.0
    return value / step if step and col.fold == "sum" else value


def watch_line(tracker: Tracked, pid: Optional[int], vcpus: Optional[float]) -> str:
    """One line on the latest sample."""
    import time

    system = tracker.system_metrics
    stamp = _last(system, by_role("system", "timestamp")) or time.time()
    parts = [time.strftime("%H:%M:%S", time.localtime(stamp))]
    if pid is not None:
        parts.append(_process_part(tracker.process_metrics, pid, tracker.interval))
    step = tracker.interval
    traffic = traffic_columns()
    disk_read, disk_write = by_role("system", "disk_read"), by_role("system", "disk_write")
    parts.append(
        f"system: cpu {_clamp(_last(system, by_role('system', 'cpu')), vcpus):5.2f}"
        + (f"/{vcpus}" if vcpus else "")
        + f" mem {size(_last(system, by_role('system', 'memory')) * 1024):>10}"
        f" disk {size(_last(system, disk_read, step))}/s r "
        f"{size(_last(system, disk_write, step))}/s w"
        f" net {size(_last(system, traffic['inbound'], step))}/s in "
        f"{size(_last(system, traffic['outbound'], step))}/s out"
    )
    return " | ".join(parts)


def _process_part(proc: TinyDataFrame, pid: int, step: float) -> str:
    read, write = by_role("process", "disk_read"), by_role("process", "disk_write")
    text = (
        f"pid {pid}: cpu {_last(proc, by_role('process', 'cpu')):5.2f} "
        f"mem {size(_last(proc, by_role('process', 'memory')) * 1024):>10} "
        f"children {_last(proc, by_role('process', 'children')):.0f} "
        f"io {size(_last(proc, read, step))}/s r "
        f"{size(_last(proc, write, step))}/s w"
    )
    if _last(proc, by_role("process", "gpu")):
        usage = _last(proc, by_role("process", "gpu_usage"))
        vram = _last(proc, by_role("process", "vram"))
        text += f" gpu {usage:.2f} vram {size(vram * 2**20)}"
    return text
