"""Every environment variable resource-tracker reads, declared once and parsed one way.

Each ``RESOURCE_TRACKER_*`` variable is a :class:`Setting`: its kind (how its text is
parsed), its default and its meaning (the README's table is made from these, see
:func:`markdown_table`). The package reads them only through :func:`get`, at call time (not
at import: a test or a program may set a variable and use the package at once), and reads
variables that are not ours (``XDG_CACHE_HOME``, ``OTEL_*`` ...) through :func:`foreign`.

Kinds, each with one parser:

- ``flag``: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off`` (any case);
- ``path``: a file or directory (``~`` expanded);
- ``url``: an address (a trailing ``/`` dropped); with ``can_be_off``, a flag's off word
  (``0``/``false``/``no``/``off``) switches the service off (``get`` gives None);
- ``choice``: one word of ``choices`` (any case);
- ``number``: a finite number within ``bounds``;
- ``numbers``: a ``number``, or comma-separated ``name=number`` pairs (a dict of lower-case
  names; each number within ``bounds``);
- ``list``: comma-separated words of ``choices`` (any case; a tuple, in order, no repeats);
- ``name``: a name people give (a job's): printable text of at most :data:`NAME_CHARS`
  characters, spaces at its ends dropped (:func:`parse_name`, also for the arguments).

An unset or empty variable gives the default. Text that does not parse is reported naming
the variable, the value and what it accepts: for a ``flag`` as a :class:`SettingWarning`
(once per variable and value), and the default is used — an on/off switch of a side feature
(cloud discovery, the embedded catalog) must not cost a job its tracking; for every other
kind as a :class:`SettingError` (a ValueError) — a backend, a number, an address or an
exporter that was asked for has no right guess.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Optional, Union

PREFIX = "RESOURCE_TRACKER_"
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class SettingError(ValueError):
    """An environment variable of resource-tracker holds a value it cannot use."""


class SettingWarning(UserWarning):
    """An on/off variable holds neither an on nor an off word: its default is used."""


_warned: set[tuple[str, str]] = set()


class Setting:
    """One environment variable: how it is parsed (``kind``), its default, what it means.

    ``choices``: the words of a choice or list; ``bounds``: (lowest, highest) of a number,
    the lowest excluded with ``low_open``; ``can_be_off``: a url that an off word switches
    off. (A plain class: a dataclass would cost the package's import a millisecond.)
    """

    __slots__ = ("name", "kind", "meaning", "default", "choices", "bounds", "low_open",
                 "can_be_off")  # fmt: skip

    def __init__(
        self,
        name: str,
        kind: str,
        meaning: str,
        default: Any = None,
        choices: tuple[str, ...] = (),
        bounds: Optional[tuple[float, float]] = None,
        low_open: bool = False,
        can_be_off: bool = False,
    ):
        self.name = name
        self.kind = kind
        self.meaning = meaning
        self.default = default
        self.choices = choices
        self.bounds = bounds
        self.low_open = low_open
        self.can_be_off = can_be_off

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.kind!r}, default={self.default!r})"

    def parse(self, text: Optional[str]) -> Any:
        """The value of text (None or '' : the default); SettingError when it is invalid."""
        if text is None or not text.strip():
            return self.default
        return _PARSERS[self.kind](self, text)

    def error(self, text: str, expected: str) -> SettingError:
        return SettingError(f"{self.name}={text!r} is not valid: {expected}")


def _flag(setting: Setting, text: str) -> bool:
    try:
        return parse_flag(text, setting)
    except SettingError as exc:
        if (setting.name, text) not in _warned:
            _warned.add((setting.name, text))
            state = "on" if setting.default else "off"
            warnings.warn(f"{exc}; using the default ({state})", SettingWarning, stacklevel=5)
        return bool(setting.default)


def parse_flag(text: str, setting: Optional[Setting] = None) -> bool:
    """The one parser of on/off values: 1/true/yes/on or 0/false/no/off (any case)."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    expected = f"give one of {'/'.join(TRUE_WORDS)} (on) or {'/'.join(FALSE_WORDS)} (off)"
    if setting is None:
        raise SettingError(f"{text!r} is not an on/off value: {expected}")
    raise setting.error(text, expected)


def _path(setting: Setting, text: str) -> str:
    return os.path.expanduser(text)


def _url(setting: Setting, text: str) -> Optional[str]:
    if setting.can_be_off and text.strip().lower() in FALSE_WORDS:
        return None
    return text.strip().rstrip("/")


def _choice(setting: Setting, text: str) -> str:
    word = text.strip().lower()
    if word not in setting.choices:
        raise setting.error(text, f"give one of {', '.join(setting.choices)}")
    return word


def _number(setting: Setting, text: str) -> float:
    import math  # here: a C extension module, only numbers need it (not the import)

    low, high = setting.bounds or (-math.inf, math.inf)
    expected = (
        f"give a number {'above' if setting.low_open else 'from'} {low:g} "
        f"{'and at most' if setting.low_open else 'to'} {high:g}"
    )
    try:
        value = float(text)
    except ValueError:
        raise setting.error(text, expected) from None
    too_low = value <= low if setting.low_open else value < low
    if not math.isfinite(value) or too_low or value > high:
        raise setting.error(text, expected)
    return value


def _numbers(setting: Setting, text: str) -> Union[float, Dict[str, float]]:
    if "=" not in text:
        return _number(setting, text)
    out: Dict[str, float] = {}
    for pair in (p for p in text.split(",") if p.strip()):
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise setting.error(text, "give a number, or name=number pairs split by commas")
        out[name.strip().lower()] = _number(setting, value)
    return out


def _list(setting: Setting, text: str) -> tuple[str, ...]:
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    unknown = [w for w in words if w not in setting.choices]
    if unknown:
        raise setting.error(text, f"give a comma-separated list of {', '.join(setting.choices)}")
    return tuple(dict.fromkeys(words))


#: The longest name (a job's) a ``name`` setting or argument takes.
NAME_CHARS = 200


def parse_name(value: Any, source: str) -> str:
    """The one rule of names (a job's): a string of printable characters, 1 to
    :data:`NAME_CHARS` of them once the spaces at its ends are dropped; SettingError (a
    ValueError) naming ``source`` (the argument or variable) otherwise."""
    expected = f"give a name of 1 to {NAME_CHARS} printable characters, e.g. nightly-etl"
    if not isinstance(value, str):
        raise SettingError(f"{source}={value!r} is not valid: {expected}")
    name = value.strip()
    if not name or len(name) > NAME_CHARS or not name.isprintable():
        raise SettingError(f"{source}={value!r} is not valid: {expected}")
    return name


def _name(setting: Setting, text: str) -> str:
    return parse_name(text, setting.name)


_PARSERS = {
    "flag": _flag,
    "path": _path,
    "url": _url,
    "choice": _choice,
    "number": _number,
    "numbers": _numbers,
    "list": _list,
    "name": _name,
}


def _declare(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


#: Every RESOURCE_TRACKER_* variable the package reads, in the README's order.
SETTINGS = _declare(
    Setting("RESOURCE_TRACKER_DISCOVER_CLOUD", "flag", "cloud discovery: `0`/`off` switches it "
            "off altogether (same as `discover_cloud=False`)", default=True),
    Setting("RESOURCE_TRACKER_METHOD", "choice", "force a sampling backend (default: `procfs` "
            "where the C core can read procfs, else `psutil`)", choices=("procfs", "psutil")),
    Setting("RESOURCE_TRACKER_TREE_SOURCE", "choice", "where the tracked tree's CPU, memory "
            "and I/O come from: `auto` (its cgroup when the tree has one of its own, else the "
            "processes), `cgroup` (also v1 `blkio`, which recent kernels leave at 0 unless "
            "throttled) or `procfs` (always walk the processes); see docs/metrics.md",
            default="auto", choices=("auto", "cgroup", "procfs")),
    Setting("RESOURCE_TRACKER_CHILD_DISCOVERY", "choice", "how the C sampler finds the "
            "tracked tree's new processes: `auto` (from the members' own children lists, "
            "`/proc/<pid>/task/<tid>/children`, where the kernel has them, else by listing "
            "`/proc`) or `listing` (always list `/proc`: a cost that grows with the machine's "
            "processes); see docs/metrics.md", default="auto", choices=("auto", "listing")),
    Setting("RESOURCE_TRACKER_PROCFS_ROOT", "path", "root under which procfs is read (default "
            "`/proc`; for tests)"),
    Setting("RESOURCE_TRACKER_SYSFS_ROOT", "path", "root under which sysfs evidence is read "
            "(default `/sys`)"),
    Setting("RESOURCE_TRACKER_NVML_LIBRARY", "path", "path of the NVML library to dlopen "
            "(default `libnvidia-ml.so.1`)"),
    Setting("RESOURCE_TRACKER_AMD_SMI_LIBRARY", "path", "path of AMD's SMI library to dlopen, "
            "amdsmi or ROCm SMI (default `libamd_smi.so`, else `librocm_smi64.so`, also under "
            "`/opt/rocm/lib`)"),
    Setting("RESOURCE_TRACKER_METADATA_URL", "url", "base URL used in place of every vendor's "
            "cloud metadata host"),
    Setting("RESOURCE_TRACKER_CATALOG", "path", "path of a local Spare Cores SQLite catalog, "
            "or `keeper` for the online Keeper API"),
    Setting("RESOURCE_TRACKER_EMBEDDED_CATALOG", "flag", "`off`: no fallback to the catalog "
            "snapshot embedded in the package", default=True),
    Setting("RESOURCE_TRACKER_CACHE_DIR", "path", "cache directory (downloaded catalog, indexes, "
            "the unpacked embedded catalog; default `$XDG_CACHE_HOME/resource-tracker`)"),
    Setting("RESOURCE_TRACKER_CATALOG_URL", "url", "URL of the catalog dump that `catalog "
            "update` downloads"),
    Setting("RESOURCE_TRACKER_KEEPER_URL", "url", "base URL of the Spare Cores Keeper API; "
            "`off` switches the online API off", can_be_off=True),
    Setting("RESOURCE_TRACKER_KEEPER_TIMEOUT", "number", "seconds per Keeper API request "
            "(0.1 to 600, default 10)", default=10.0, bounds=(0.1, 600.0)),
    Setting("RESOURCE_TRACKER_MAX_SNAPSHOT_MIB", "number", "largest snapshot `loads()` and the "
            "`report`/`stats`/`recommend` commands read, in MiB (1 to 1048576, default 256: a "
            "week of samples at 1 s is ~200 MiB; loading peaks at about 3 times the size)",
            default=256.0, bounds=(1.0, 1048576.0)),
    Setting("RESOURCE_TRACKER_EUR_USD", "number", "USD per EUR used to compare EUR prices "
            "(above 0, at most 1000; default 1.17)", bounds=(0.0, 1000.0), low_open=True),
    Setting("RESOURCE_TRACKER_EXPORT", "list", "opt-in export: comma list of `otlp`, "
            "`pushgateway` (never on by default)", default=(), choices=("otlp", "pushgateway")),
    Setting("RESOURCE_TRACKER_PUSHGATEWAY_URL", "url", "Prometheus Pushgateway base URL"),
    Setting("RESOURCE_TRACKER_JOB", "name", "the job's name when `job=` / `--job` is not "
            "given: the exported `job` label, stored in the snapshot (default: `flow/step` "
            "in a Metaflow step, else `resource_tracker`)"),
    Setting("RESOURCE_TRACKER_EXPORT_COMMAND_LINE", "flag", "`1`/`on`: export sends the "
            "tracked command line whole (`process.command_line`); off by default, only the "
            "executable's name goes (arguments may hold secrets)", default=False),
    Setting("RESOURCE_TRACKER_OVER_MIN_MIB", "number", "an over-provisioned finding needs a "
            "memory gap (ask minus peak) of at least this many MiB (default 256)", default=256.0,
            bounds=(0.0, 1e9)),
    Setting("RESOURCE_TRACKER_OVER_MIN_CORES", "number", "... or a CPU gap of at least this many "
            "cores (default 1)", default=1.0, bounds=(0.0, 1e6)),
    Setting("RESOURCE_TRACKER_OVER_MIN_USD_MONTH", "number", "... and, when priced, a gap "
            "costing at least this many USD a month (default 1)", default=1.0,
            bounds=(0.0, 1e9)),
    Setting("RESOURCE_TRACKER_WARN_USD_MONTH", "number", "an over-provisioned gap is a warning "
            "from this many USD a month (default 10; below: info)", default=10.0,
            bounds=(0.0, 1e9)),
    Setting("RESOURCE_TRACKER_SPLIT_MIN_USD_MONTH", "number", "a split of a step into its "
            "phases is advised only when it saves at least this many USD a month (default 10) "
            "and 20% of the step's cost", default=10.0, bounds=(0.0, 1e9)),
    Setting("RESOURCE_TRACKER_GRID_INTENSITY", "numbers", "the electricity grid's carbon "
            "intensity in gCO2e/kWh (0 to 5000) where the job runs, or one per cloud region "
            "(`us-east-1=380,eu-north-1=30`: the run's region as discovery finds it): the run's "
            "grams CO2e are shown beside its energy, said to come from this setting; unset, or "
            "no intensity for the run's region: no CO2e figure at all (none is guessed)",
            bounds=(0.0, 5000.0)),
    Setting("RESOURCE_TRACKER_CODE_PROFILE", "flag", "`0`/`off`: no stack samples, no code "
            "profile (same as `code_profile=False`; docs/code_profile.md)", default=True),
    Setting("RESOURCE_TRACKER_CODE_AGENT_DIR", "path", "set by `resource-tracker run --code` "
            "for the command's Python processes: where the agent writes each one's code profile"),
    Setting("RESOURCE_TRACKER_TUNED_CPU", "choice", "how `@track_resources(tune=True)` rounds "
            "the tuned CPU: `whole` vCPUs (AWS Batch takes only those; default) or "
            "`fractional`, quarters of a core (Kubernetes takes millicores); read where the "
            "step runs and kept in its tuning settings: every surface shows the same",
            default="whole", choices=("whole", "fractional")),
    Setting("RESOURCE_TRACKER_RECORD_CHECK_S", "number", "seconds between two checks of a "
            "Metaflow step's figures for its tuning record (0.01 to 3600, default 2; for tests)",
            default=2.0, bounds=(0.01, 3600.0)),
)  # fmt: skip

#: Variables read by setup.py when the C core is built (not by the package; docs/install.md).
BUILD_TIME = (
    "RESOURCE_TRACKER_PORTABLE",
    "RESOURCE_TRACKER_DEBUG",
    "RESOURCE_TRACKER_SANITIZE",
    "RESOURCE_TRACKER_COVERAGE",
    "RESOURCE_TRACKER_NO_BUILD_CHECK",
)

#: Variables of others the package reads (through foreign()), with what for.
FOREIGN = {
    "XDG_CACHE_HOME": "where the cache directory and sparecores-data's database are",
    "SC_DATA_DB_PATH": "the database of an installed sparecores-data package",
    "BROWSER": "the web browser that `report --browse` and `Report.browse()` open",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "where OTLP export goes (and the other standard `OTEL_*`)",
    "PYTHONPATH": "`run --code` puts the agent's directory first on the command's",
    "TMPDIR": "where the code profile agents' private directory is made (else /tmp)",
}


def get(name: str) -> Any:
    """The parsed value of the RESOURCE_TRACKER_* variable name, read now.

    The default when it is unset or empty; SettingError when its text is invalid;
    KeyError for a name that is not declared in SETTINGS.
    """
    return SETTINGS[name].parse(os.environ.get(name))


def raw(name: str) -> Optional[str]:
    """The text of a declared variable as set (None when unset), unparsed."""
    SETTINGS[name]  # noqa: B018 - KeyError for an undeclared name
    return os.environ.get(name)


def foreign(name: str) -> Optional[str]:
    """The text of a variable that is not resource-tracker's (None when unset or empty)."""
    if name.startswith(PREFIX):
        raise KeyError(f"{name} is resource-tracker's own: declare it in SETTINGS, read get()")
    return os.environ.get(name) or None


def child_environment(changes: Dict[str, str]) -> Dict[str, str]:
    """The environment of a command this process starts: its own, with changes."""
    env = dict(os.environ)
    env.update(changes)
    return env


def markdown_table() -> str:
    """The README's table of the variables (one row per Setting)."""
    rows = ["| variable | meaning |", "|---|---|"]
    rows += [f"| `{s.name}` | {s.meaning} |" for s in SETTINGS.values()]
    return "\n".join(rows) + "\n"
