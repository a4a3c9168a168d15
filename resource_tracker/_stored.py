"""A run as stored: ``snapshot()``, ``dumps()``, ``from_snapshot()`` and ``loads()`` of
:class:`~resource_tracker.tracker.ResourceTracker`, and the checks of a stored run.

Loaded on first use (the tracker's methods call in here): a tracker that samples and stops
needs none of it, and ``import resource_tracker`` stays small.
"""

from __future__ import annotations

import json
import re
from array import array
from typing import Any, Callable, Dict, List, Mapping, NoReturn, Sequence, TypeVar, Union

from . import _core, _gpu_series, settings
from ._identity import MAX_INTERVAL, MAX_PID, SNAPSHOT_FORMAT, SNAPSHOT_VERSION
from ._renamed import old_names
from ._run_data import _data_quality
from ._tracked import TrackedRun
from ._version import __version__
from .code_profile import validate_record
from .names import PROCESS_COLUMNS, SYSTEM_COLUMNS
from .sampling import StoredRun as _StoredRun
from .tiny_data_frame import TinyDataFrame

_T = TypeVar("_T")
#: Decodes a snapshot's ``summary`` entry (the summary module's stored_summary, a layer up:
#: the facade passes it in).


def snapshot(tracker: TrackedRun) -> Dict[str, Any]:
    """Everything about this run as a dict of plain Python values (lossless).

    The tables are stored as dumps() stores them: ``{"encoding": "float64-le-base64",
    "rows": n, "columns": {name: base64 text}}`` (every float bit for bit, about 11 bytes
    a value; a list of floats would take 32)."""
    snap = snapshot_fields(tracker)
    for key, table in _TABLE_KEYS:
        snap[key] = _encode_columns(tracker._table_columns(table))
    return snap


def snapshot_fields(tracker: TrackedRun) -> Dict[str, Any]:
    """snapshot() without the two tables (with the per-GPU series, when the run has them)."""
    fields = {
        "format": SNAPSHOT_FORMAT,
        "format_version": SNAPSHOT_VERSION,
        "version": __version__,
        "pid": tracker.pid,
        "children": tracker.children,
        "interval": tracker.interval,
        "method": tracker.method,
        "command": tracker.command,
        "label": tracker.label,
        "job": getattr(tracker, "job", None),
        "status": tracker.status,
        "start_time": tracker.start_time,
        "stop_time": tracker.stop_time,
        "track_processes": tracker.track_processes,
        "track_system": tracker.track_system,
        "server_info": tracker.server_info,
        "cloud_info": tracker.cloud_info,
        "extra": dict(tracker.extra),
        "data_quality": tracker.data_quality(),
        "cgroup_metrics": tracker.cgroup_metrics,
        "tree_source": tracker.tree_source,
        "memory_hwm": tracker.memory_hwm,
        # the run summary, when one was made (so a loaded run shows the same servers)
        "summary": tracker._summary.to_dict() if getattr(tracker, "_summary", None) else None,
        "metadata": snapshot_metadata(tracker),
        "code_profile": tracker._code_record(),  # docs/code_profile.md
    }
    gpus = tracker._gpu_devices()
    if gpus:  # optional: runs without per-GPU series store no key (as older snapshots)
        fields["gpu_devices"] = _gpu_series.encoded(gpus)
    return fields


def snapshot_metadata(tracker: TrackedRun) -> Dict[str, Any]:
    """The run's settings and times as the original package's snapshots and Metaflow
    artifacts nest them under ``metadata`` (code written for 0.4/0.5 reads them there), with
    ``duration``: seconds from start to stop (to now while running; None before start)."""
    import time

    start, stop = tracker.start_time, tracker.stop_time
    duration = round((stop or time.time()) - start, 2) if start else None
    meta = {
        "version": SNAPSHOT_VERSION,
        "resource_tracker": {"version": __version__, "implementation": tracker.method},
        "pid": tracker.pid,
        "children": tracker.children,
        "interval": tracker.interval,
        "method": tracker.method,
        "autostart": getattr(tracker, "autostart", None),
        "track_processes": tracker.track_processes,
        "track_system": tracker.track_system,
        "discover_server": tracker.discover_server,
        "discover_cloud": tracker.discover_cloud,
        "start_time": start,
        "stop_time": stop,
        "duration": duration,
    }
    stored = getattr(tracker, "_settings_stored", None) or {}
    meta.update((k, v) for k, v in stored.items() if isinstance(v, bool))
    return meta


#: The settings a snapshot's metadata keeps for a loaded run (the loaded tracker has its own).
_STORED_SETTINGS = ("autostart", "discover_server", "discover_cloud")


#: The fields a stored run keeps as they were (the tracker's settings of that run).
_RUN_FIELDS = (
    "pid",
    "children",
    "interval",
    "method",
    "command",
    "label",
    "job",
    "track_processes",
    "track_system",
)


class DecodedRun:
    """A run read back from a snapshot: its settings, its figures and its samples (a
    ``StoredRun``). Run data, not a tracker: the facade wraps it
    (``ResourceTracker.from_snapshot``/``loads``); ``summary`` is the stored summary's dict,
    decoded by the analysis layer."""

    __slots__ = (
        "fields",
        "settings",
        "extra",
        "server_info",
        "cloud_info",
        "cgroup_metrics",
        "memory_hwm",
        "tree_source",
        "code_record",
        "summary",
        "sampler",
    )

    def __init__(self, snapshot: Mapping[str, Any]) -> None:
        self.fields: Dict[str, Any] = {key: snapshot.get(key) for key in _RUN_FIELDS}
        meta = snapshot.get("metadata")
        self.settings: Dict[str, Any] = {  # the run's own (a loaded run discovers nothing)
            key: meta[key] for key in _STORED_SETTINGS if isinstance(meta, dict) and key in meta
        }
        self.extra: Dict[str, Any] = dict(snapshot.get("extra") or {})
        self.server_info: Any = snapshot.get("server_info")
        self.cloud_info: Any = snapshot.get("cloud_info")
        self.cgroup_metrics: Any = snapshot.get("cgroup_metrics")
        self.memory_hwm: Any = snapshot.get("memory_hwm")
        self.tree_source: Any = snapshot.get("tree_source")
        self.code_record: Any = _stored_code_record(snapshot.get("code_profile"))
        self.summary: Any = snapshot.get("summary")
        process = _stored_table(snapshot.get("process_metrics"), PROCESS_COLUMNS)
        system = _stored_table(snapshot.get("system_metrics"), SYSTEM_COLUMNS)
        self.sampler = _StoredRun(
            process,
            system,
            snapshot.get("start_time") or 0.0,
            snapshot.get("stop_time") or 0.0,
            self.fields["interval"],
            _stored_quality(snapshot.get("data_quality")),
        )
        self.sampler.gpus = _gpu_series.stored(snapshot.get("gpu_devices"), len(system))


def from_snapshot(snapshot: Mapping[str, Any]) -> DecodedRun:
    """The run data of snapshot() (or of the ``tracker`` entry of the Metaflow artifact: a
    snapshot whose tables are the artifact's TinyDataFrames), checked."""
    if isinstance(snapshot, dict) and "format" not in snapshot and "metadata" in snapshot:
        snapshot = from_original(snapshot)  # written by the original package (0.4/0.5)
    _check_format(snapshot)
    _validate_snapshot(snapshot)
    return DecodedRun(snapshot)


def from_original(original: Mapping[str, Any]) -> Dict[str, Any]:
    """A snapshot of this package from one the original package (0.4/0.5) made: its fields
    under ``metadata``, its tables as lists of row dicts, 0.5's in 0.5's names and units
    (memory in MiB: converted to KiB). ValueError when it is not one."""
    meta = original.get("metadata")
    if not isinstance(meta, dict):
        raise ValueError("not a resource-tracker snapshot: 'metadata' is not an object")
    snap: Dict[str, Any] = {"format": SNAPSHOT_FORMAT, "format_version": SNAPSHOT_VERSION}
    for key in ("pid", "children", "interval", "start_time", "stop_time"):
        snap[key] = meta.get(key)
    about = meta.get("resource_tracker")
    snap["method"] = meta.get("method") or (
        about.get("implementation") if isinstance(about, dict) else None
    )
    for key in ("track_processes", "track_system"):
        snap[key] = bool(meta.get(key, True))
    snap["server_info"] = original.get("server_info")
    snap["cloud_info"] = original.get("cloud_info")
    snap["metadata"] = meta
    for key, table in _TABLE_KEYS:
        snap[key] = _original_table(original.get(key), table)
    return snap


def _original_table(rows: Any, table: str) -> Dict[str, List[float]]:
    """{column: values} in this package's names and units from the original's row dicts."""
    if rows is None:
        return {}
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ValueError(f"not a resource-tracker snapshot: {table} table is not a list of rows")

    renamed = old_names(table)
    columns: Dict[str, List[float]] = {}
    for name in PROCESS_COLUMNS if table == "process" else SYSTEM_COLUMNS:
        old, factor = renamed.get(name, (name, 1.0))
        try:
            columns[name] = [
                float(row[name]) if name in row else float(row.get(old) or 0.0) * factor
                for row in rows
            ]
        except (TypeError, ValueError):
            raise ValueError(
                f"not a resource-tracker snapshot: column {name} holds something other than numbers"
            ) from None
    return columns


def _check_format(snapshot: Any) -> None:
    """ValueError unless snapshot is a dict made by snapshot() of a version this one reads."""
    if not isinstance(snapshot, dict) or snapshot.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(
            "not a resource-tracker snapshot: expected a dict made by "
            "ResourceTracker.snapshot() (or text made by dumps())"
        )
    if snapshot.get("format_version", 0) > SNAPSHOT_VERSION:
        raise ValueError(
            f"snapshot format {snapshot['format_version']} is newer than this "
            f"resource-tracker ({__version__}) reads: upgrade resource-tracker"
        )


def _stored_code_record(record: Any) -> Any:
    """The code profile record of a snapshot (None: none, or not one this version reads)."""
    if not isinstance(record, dict) or record.get("version") != 1:
        return None

    return validate_record(record)


def dumps(tracker: TrackedRun) -> str:
    """The snapshot as compact JSON text (columns as base64 float64: lossless).

    Written in one piece by a streaming encoder: the text of the columns is made from the
    samples directly (no float lists, no intermediate bytes)."""
    head = json.dumps(
        snapshot_fields(tracker), separators=(",", ":"), allow_nan=False, default=_json_default
    )
    pieces = [head[:-1]]  # without its closing brace: the tables follow
    for key, table in _TABLE_KEYS:
        columns = tracker._table_columns(table)
        rows = len(next(iter(columns.values()), ()))
        pieces.append(f',"{key}":{{"encoding":"{_ENCODING}","rows":{rows},"columns":{{')
        for i, (name, col) in enumerate(columns.items()):
            pieces += [("," if i else "") + json.dumps(name) + ':"', _float64(col), '"']
        pieces.append("}}")
    pieces.append("}")
    return _core.float64_text(pieces)


def loads(text: Union[str, bytes], wrap: Callable[[DecodedRun], _T]) -> _T:
    """What ``wrap`` makes of the run of dumps() text (str or bytes; a UTF-8 BOM is allowed).

    ValueError, and only ValueError, for anything else: text over the size limit
    (snapshot_limit()), invalid JSON, NaN or an infinity, an integer beyond 2**64, a field of
    the wrong type."""
    snapshot = _parse(text)
    try:
        if isinstance(snapshot, dict):  # decode the tables now, dropping each text as it goes
            for key, _ in _TABLE_KEYS:
                if isinstance(snapshot.get(key), dict):
                    snapshot[key] = _decode_columns(snapshot[key], consume=True)
        return wrap(from_snapshot(snapshot))
    except (KeyError, TypeError, AttributeError, RecursionError, OverflowError) as exc:
        raise ValueError(f"not a resource-tracker snapshot: damaged ({exc!r:.200})") from None


#: Environment variable of the largest snapshot loads() and the CLI read, in MiB.
SNAPSHOT_LIMIT_ENV = "RESOURCE_TRACKER_MAX_SNAPSHOT_MIB"


def snapshot_limit() -> int:
    """The largest snapshot text read, in bytes (characters for a str): 256 MiB unless
    RESOURCE_TRACKER_MAX_SNAPSHOT_MIB says otherwise. A snapshot takes ~352 bytes a sample
    (a week at 1 s is ~200 MiB) and loading one peaks at about 3 times its size (measured:
    620 MiB for 200 MiB), so the limit bounds the memory a file from outside can take."""
    return int(settings.get(SNAPSHOT_LIMIT_ENV) * 2**20)


def too_large(size: int, limit: int) -> str:
    """The message for a snapshot of size bytes over limit."""
    return (
        f"snapshot too large ({size / 2**20:.1f} MiB, the limit is {limit / 2**20:g} MiB; "
        f"raise it with {SNAPSHOT_LIMIT_ENV})"
    )


def _parse(text: Union[str, bytes]) -> Any:
    """The JSON value of a snapshot's text, strictly (strict_json), within the size limit."""
    limit = snapshot_limit()
    if len(text) > limit:
        raise ValueError(f"not a resource-tracker snapshot: {too_large(len(text), limit)}")
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
        return strict_json(text)
    except TooDeep:
        raise ValueError(
            "not a resource-tracker snapshot: JSON nested too deeply to be one"
        ) from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError among them
        raise ValueError(
            f"not a resource-tracker snapshot: invalid JSON ({str(exc):.200})"
        ) from None
    except TypeError:
        raise ValueError("not a resource-tracker snapshot: expected text (str or bytes)") from None


class TooDeep(ValueError):
    """JSON nested deeper than the parser's recursion allows."""


def strict_json(text: str) -> Any:
    """The JSON value of text (a leading UTF-8 BOM skipped), strictly: only numbers JSON has
    (no NaN or Infinity, none that overflows a float64, integers up to 2**64). ValueError
    saying what is wrong (TooDeep for nesting deeper than the parser's recursion allows)."""
    try:
        start = _after_space(text, 1 if text.startswith("\ufeff") else 0)  # a BOM skipped
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        raise TooDeep("JSON nested too deeply") from None
    if _after_space(text, end) != len(text):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def _json_int(text: str) -> int:
    if len(text) > 21 or abs(int(text)) > 2**64:
        raise ValueError(f"integer {text:.24} out of range")
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text:.24} out of range")
    return value


def _json_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(
    parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant
)
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace (as json.decoder skips it)


def _after_space(text: str, pos: int) -> int:
    """The position of the first character at or after pos that is not JSON whitespace."""
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


# the latest start/stop time taken as real: year 5138 (a larger one breaks dates and durations)
_MAX_EPOCH = 1e11


def _validate_snapshot(snapshot: Mapping[str, Any]) -> None:
    """ValueError naming the first field of a snapshot that later calls (stats(), report())
    could not use: times, interval, pid, the info dicts and the texts."""

    def bad(key: str, what: str) -> NoReturn:
        raise ValueError(
            f"not a resource-tracker snapshot: {key} must be {what}, got {snapshot.get(key)!r:.80}"
        )

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    for key in ("start_time", "stop_time"):
        value = snapshot.get(key)
        if value is not None and not (number(value) and 0 <= value <= _MAX_EPOCH):
            bad(key, "seconds since the epoch (or null)")
    interval = snapshot.get("interval")
    if interval is not None and not (number(interval) and 0 < interval <= MAX_INTERVAL):
        bad("interval", f"a number of seconds up to {MAX_INTERVAL:g}")
    pid = snapshot.get("pid")
    if pid is not None and not (isinstance(pid, int) and 0 < pid <= MAX_PID):
        bad("pid", "a process id")
    for key in (
        "server_info",
        "cloud_info",
        "extra",
        "cgroup_metrics",
        "tree_source",
        "summary",
        "code_profile",
    ):
        if snapshot.get(key) is not None and not isinstance(snapshot[key], dict):
            bad(key, "an object (or null)")
    hwm = snapshot.get("memory_hwm")
    if hwm is not None and not (number(hwm) and 0 <= hwm < 2**63):
        bad("memory_hwm", "a number of KiB (or null)")
    _validate_fields(snapshot)
    for key in ("command", "label", "job", "method"):
        if snapshot.get(key) is not None and not isinstance(snapshot[key], str):
            bad(key, "a string (or null)")
    for key in ("process_metrics", "system_metrics"):
        if snapshot.get(key) is not None and not isinstance(
            snapshot[key], (dict, list, TinyDataFrame)
        ):
            bad(key, "a table")


# the fields inside a snapshot's objects that stats(), the summary, the report and the CLI
# read: numbers (at least 0; exit_status any integer) and texts, each may be null
_NUMBER_FIELDS = {
    "server_info": ("vcpus", "memory_mb", "memory_mib", "gpu_count", "gpu_memory_mb",
                    "gpu_memory_mib"),
    "server_info.cgroup": ("cpu_limit_cores", "memory_limit_mb"),
    "cloud_info": ("discovery_time",),
    "cgroup_metrics": ("version", "memory_mib", "memory_peak_mib", "memory_limit_mib",
                       "cpu_limit_cores", "cpu_seconds", "cpu_periods", "cpu_throttled_periods",
                       "cpu_throttled_seconds", "oom_kills"),
}  # fmt: skip
_TEXT_FIELDS = {
    "server_info": ("cpu_model", "architecture", "os"),
    "cloud_info": ("vendor", "instance_type", "region"),
    "cgroup_metrics": ("path",),
}


def _validate_fields(snapshot: Mapping[str, Any]) -> None:
    """ValueError naming the first field inside server_info, cloud_info, cgroup_metrics or
    extra whose type later calls could not use (e.g. vCPUs as text, an exit status "0")."""

    def field(path: str) -> Any:
        value: Any = snapshot
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def bad(path: str, what: str) -> NoReturn:
        raise ValueError(
            f"not a resource-tracker snapshot: {path} must be {what}, got {field(path)!r:.80}"
        )

    for obj, names in _NUMBER_FIELDS.items():
        for name in names:
            value = field(f"{obj}.{name}")
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if value is not None and not (ok and 0 <= value < 2**63):
                bad(f"{obj}.{name}", "a number (or null)")
    for obj, names in _TEXT_FIELDS.items():
        for name in names:
            if field(f"{obj}.{name}") is not None and not isinstance(field(f"{obj}.{name}"), str):
                bad(f"{obj}.{name}", "a string (or null)")
    if field("server_info.cgroup") is not None and not isinstance(
        field("server_info.cgroup"), dict
    ):
        bad("server_info.cgroup", "an object (or null)")
    names = field("server_info.gpu_names")
    if names is not None and not (
        isinstance(names, list) and all(isinstance(n, str) for n in names)
    ):
        bad("server_info.gpu_names", "a list of strings (or null)")
    status = field("extra.exit_status")
    if status is not None and not (type(status) is int and -(2**31) <= status < 2**31):
        bad("extra.exit_status", "an integer (or null)")


def _stored_quality(value: Any) -> Dict[str, Any]:
    """A snapshot's data_quality (missing in older snapshots: nothing known to be missing)."""
    if value is None:
        return _data_quality(0, 0, 0)
    if not isinstance(value, dict) or not isinstance(value.get("incomplete_columns", {}), dict):
        raise ValueError("not a resource-tracker snapshot: data_quality must be a dict")
    quality: Dict[str, Any] = {
        "samples_dropped": _nonnegative_int(value.get("samples_dropped", 0), "samples_dropped"),
        "incomplete_columns": {
            str(k): str(v) for k, v in value.get("incomplete_columns", {}).items()
        },
    }
    if value.get("code_profile"):
        quality["code_profile"] = str(value["code_profile"])
    if value.get("energy"):
        quality["energy"] = str(value["energy"])
    if value.get("gpu"):
        quality["gpu"] = str(value["gpu"])
    if value.get("read_errors"):
        quality["read_errors"] = _nonnegative_int(value["read_errors"], "read_errors")
    if value.get("descriptors_replaced"):
        quality["descriptors_replaced"] = _nonnegative_int(
            value["descriptors_replaced"], "descriptors_replaced"
        )
    if value.get("process_visible") is False:  # the errors say why (invisible_process_error)
        quality["process_visible"] = False
        errors = value.get("errors")
        errors = [str(e) for e in errors if e] if isinstance(errors, list) else []
        quality["errors"] = errors or ["the tracked process was never visible: no measurements"]
    return quality


def _nonnegative_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 2**63:
        raise ValueError(f"not a resource-tracker snapshot: {name} must be a count, got {value!r}")
    return int(value)


_ENCODING = "float64-le-base64"
_TABLE_KEYS = (("process_metrics", "process"), ("system_metrics", "system"))


def _is_float64(col: Any) -> bool:
    """True for a float64 column: array('d') or a float64 memoryview (a stopped sampler's
    columns, a loaded snapshot's decoded text)."""
    if isinstance(col, memoryview):
        return col.format == "d"
    return isinstance(col, array) and col.typecode == "d"


def _float64(col: Any) -> Any:
    """col as a float64 buffer (itself when it is one)."""
    return col if _is_float64(col) else array("d", col)


def _encode_columns(columns: Mapping[str, Any]) -> Dict[str, Any]:
    """A table ({name: float64 column}) as base64 of little-endian float64, one text a column."""
    return {
        "encoding": _ENCODING,
        "rows": len(next(iter(columns.values()), ())),
        "columns": {name: _core.float64_text([_float64(col)]) for name, col in columns.items()},
    }


def _decode_columns(data: Any, consume: bool = False) -> Any:
    """{column: values} from a snapshot's table (plain lists, base64 float64, or a
    TinyDataFrame as in the Metaflow artifact). consume: drop each column's text from data
    once decoded (loads(): the decoded tables never sit beside all of their text)."""
    if isinstance(data, TinyDataFrame):
        return {name: data.column_array(name) for name in data.columns}
    if not data:
        return {}
    if isinstance(data, dict) and data.get("encoding") == _ENCODING:
        import base64
        import sys

        out: Dict[str, Any] = {}
        texts = data["columns"]
        for name in list(texts):
            raw = base64.b64decode(texts.pop(name) if consume else texts[name])
            if len(raw) % 8:
                raise ValueError(
                    f"not a resource-tracker snapshot: column {name} is not float64 values"
                )
            if sys.byteorder == "little":  # the decoded bytes themselves: exact size, no copy
                out[name] = memoryview(raw).cast("d")
                continue
            col = array("d")
            col.frombytes(raw)
            col.byteswap()
            out[name] = col
        return out
    if isinstance(data, dict):  # plain lists: numbers only (stats() and report() sum them)
        try:
            return {  # decoded columns are used as they are; anything else is copied
                name: values if _is_float64(values) else array("d", values)
                for name, values in data.items()
            }
        except TypeError:
            raise ValueError(
                "not a resource-tracker snapshot: a metrics column holds something other than "
                "numbers"
            ) from None
    return data


def _stored_table(data: Any, names: Sequence[str]) -> TinyDataFrame:
    """A snapshot's table as a TinyDataFrame of float64 columns in the registry's order."""
    copied = isinstance(data, TinyDataFrame)  # the caller's arrays: copy them
    columns = _decode_columns(data)
    if not isinstance(columns, dict):  # rows (a list of dicts): the frame sorts them out
        return TinyDataFrame(columns, columns=names)
    table: Dict[str, Any] = {}
    rows = _stored_rows(columns)
    for name in names:
        # a column the snapshot's version did not have (the energy columns): zeros, which
        # every view reads as "not measured"
        col = columns.get(name, array("d", bytes(8 * rows)) if rows else ())
        if copied or not _is_float64(col):
            try:
                col = array("d", col)
            except TypeError:
                raise ValueError(
                    f"not a resource-tracker snapshot: column {name} holds something other "
                    "than numbers"
                ) from None
        table[name] = col
    lengths = {len(col) for col in table.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns must be equally long, got lengths {sorted(lengths)}")
    return TinyDataFrame._from_arrays(table)


def _stored_rows(columns: Mapping[str, Any]) -> int:
    """The rows of a snapshot's table: its timestamp column's length (0 when absent)."""
    try:
        return len(columns.get("timestamp", ()))
    except TypeError:
        return 0


def _json_default(value: Any) -> Any:
    if isinstance(value, array):
        return list(value)
    raise TypeError(f"cannot store {type(value).__name__} in a snapshot")
