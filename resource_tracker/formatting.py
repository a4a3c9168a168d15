"""One way to show numbers: what the report, the Metaflow card, the CLI's summary lines and
``watch`` print for a value, its unit coming from the column registry (``Column.unit``).

The conventions, in one place:

- bytes (memory, VRAM, disk I/O, network, disk space) in binary units: ``B``, ``KiB``,
  ``MiB``, ``GiB``, ``TiB`` (a step at 1024: 512 MiB stays "512 MiB", 1536 MiB is
  "1.5 GiB"); rates are the same units per second (``"1.2 MiB/s"``);
- three significant digits at most (``"1.25 GiB"``, ``"12.3 GiB"``, ``"123 GiB"``), whole
  bytes, no trailing ``.0`` (``"2 cores"``, ``"1.5 cores"``);
- plural forms by the count (``"1 vCPU"``, ``"5 earlier runs"``);
- money in USD that never prints ``$0.0000``: an amount under a cent is ``"< $0.01"``;
  hourly prices keep three significant digits (``"$0.0052/h"``);
- a change against earlier runs only when it exceeds the noise: both a relative floor
  (:data:`CHANGE_MIN_RATIO`) and an absolute floor per unit (:data:`CHANGE_FLOORS`; 1.64 kB
  written against 0 B is no news).

Every function takes None (or a non-finite number) and answers ``"n/a"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

__all__ = [
    "NA",
    "energy",
    "co2e",
    "OTHER_ARCHITECTURE",
    "alternative_server",
    "price_allocation",
    "CHANGE_MIN_RATIO",
    "CHANGE_FLOORS",
    "Change",
    "number",
    "plural",
    "nbytes",
    "rate",
    "duration",
    "money",
    "percent",
    "quantity",
    "unit_bytes",
    "change",
    "user_command",
    "CATALOG_FIX",
    "catalog_problem",
]

#: What a value that is not known is shown as.
NA = "n/a"
#: A change is news only from this relative size up (10 %) ...
CHANGE_MIN_RATIO = 0.10
#: ... and from this absolute size up, in the registry's unit of the value.
CHANGE_FLOORS = {
    "cores": 0.1,
    "GPUs": 0.1,
    "KiB": 16 * 1024.0,  # 16 MiB of memory
    "MiB": 16.0,  # 16 MiB of VRAM
    "B": 1024.0 * 1024.0,  # 1 MiB read, written, sent or received
    "GB": 0.1,
    "processes": 1.0,
    "s": 1.0,
    "J": 1000.0,  # 1 kJ of energy
    "W": 10.0,  # 10 W of power
}

#: Bytes per unit of a registry unit that is an amount of bytes.
_BYTES_PER_UNIT = {"B": 1.0, "KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3, "GB": 1e9}
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
#: Singular name of a registry unit that is a count (the plural is the unit itself).
_COUNT_UNITS = {"cores": "core", "GPUs": "GPU", "processes": "process"}

Number = Union[int, float]


def _finite(value: object) -> Optional[float]:
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _sig(value: float, digits: int = 3) -> str:
    """value with at most `digits` significant digits (whole numbers stay whole), thousands
    separated, no trailing zeros: 1234.5 -> '1,235', 12.34 -> '12.3', 2.0 -> '2'."""
    if value == 0:
        return "0"
    magnitude = int(math.floor(math.log10(abs(value))))
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def number(value: object, digits: int = 3) -> str:
    """A plain number: at most `digits` significant digits ('n/a' when unknown)."""
    v = _finite(value)
    return NA if v is None else _sig(v, digits)


def plural(count: object, singular: str, plural_form: Optional[str] = None) -> str:
    """'1 vCPU', '2 vCPUs', '5 earlier runs', '1.5 cores': the count and the word in the
    form the count takes (the plural is singular + 's' unless given)."""
    v = _finite(count)
    if v is None:
        return f"{NA} {plural_form or singular + 's'}"
    word = singular if v == 1 else (plural_form or singular + "s")
    return f"{_sig(v, 3) if v != int(v) else f'{int(v):,}'} {word}"


def nbytes(value: object) -> str:
    """A byte amount in binary units: '0 B', '900 B', '12.3 KiB', '512 MiB', '1.5 GiB'."""
    v = _finite(value)
    if v is None:
        return NA
    i = 0
    while abs(v) >= 1024 and i < len(_BINARY) - 1:
        v /= 1024.0
        i += 1
    if i == 0:
        return f"{v:,.0f} B"
    # 1023.7 MiB must not print as "1,020 MiB" nor "1024 MiB": three digits, whole past 100
    text = _sig(v, 3) if abs(v) < 1000 else f"{v:,.0f}"
    return f"{text} {_BINARY[i]}"


def rate(bytes_per_second: object) -> str:
    """A byte rate: '1.2 MiB/s'."""
    text = nbytes(bytes_per_second)
    return text if text == NA else text + "/s"


def duration(seconds: object) -> str:
    """Seconds for people: '0.25 s', '42.1 s', '3 min 05 s', '1 h 02 min', '24 h 00 min'."""
    v = _finite(seconds)
    if v is None:
        return NA
    if 0 < v < 0.001:
        return "< 1 ms"  # not "0.0000101 s"
    if v < 60:
        return f"{_sig(v, 3)} s"
    whole = int(round(v))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours:,} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s"


def money(usd: object, per: str = "") -> str:
    """An amount in USD: '$12.34', '$0.42', '< $0.01' (never '$0.0000'), '$0' for nothing.

    With ``per`` (e.g. 'h') it is a price: three significant digits below a dollar, so a
    small server's '$0.0052/h' stays readable; else two decimals.
    """
    v = _finite(usd)
    if v is None:
        return NA
    sign, a = ("-" if v < 0 else ""), abs(v)
    suffix = f"/{per}" if per else ""
    if a == 0:
        return f"$0{suffix}"
    if per:
        text = _sig(a, 3) if a < 1 else f"{a:,.2f}"
        return f"{sign}${text}{suffix}"
    if a < 0.005:
        return f"{'> -' if sign else '< '}$0.01"
    return f"{sign}${a:,.2f}"


def energy(joules: object) -> str:
    """An amount of energy: '850 J', '12.3 kJ', '4.56 MJ', with kWh beside it from 0.01 kWh
    up ('36 MJ (10 kWh)'); n/a when not measured (None)."""
    v = _finite(joules)
    if v is None:
        return NA
    scaled = next(((v / f, p) for f, p in ((1e9, "GJ"), (1e6, "MJ"), (1e3, "kJ")) if v >= f), None)
    text = f"{_sig(scaled[0], 3)} {scaled[1]}" if scaled else f"{_sig(v, 3)} J"
    kwh = v / 3.6e6
    return f"{text} ({_sig(kwh, 3)} kWh)" if kwh >= 0.01 else text


def co2e(grams: object) -> str:
    """An amount of CO2e in grams: '0.42 g CO2e', '13.7 g CO2e', '1.24 kg CO2e', '3.1 t CO2e'
    (three significant digits; '< 0.01 g CO2e' above 0); n/a when unknown (None)."""
    v = _finite(grams)
    if v is None:
        return NA
    if 0 < v < 0.005:
        return "< 0.01 g CO2e"
    scaled = next(((v / f, p) for f, p in ((1e6, "t"), (1e3, "kg")) if v >= f), (v, "g"))
    return f"{_sig(scaled[0], 3)} {scaled[1]} CO2e"


def percent(share: object) -> str:
    """A share as a whole percentage: '89%', '< 1%' for a share above 0 that rounds to 0,
    '0%' for none."""
    v = _finite(share)
    if v is None:
        return NA
    if 0 < abs(v) < 0.005:
        return "< 1%" if v > 0 else "> -1%"
    return f"{v * 100:,.0f}%"


def unit_bytes(unit: str) -> Optional[float]:
    """Bytes per unit when the registry unit is an amount of bytes (KiB, MiB, B, GB), else
    None."""
    return _BYTES_PER_UNIT.get(unit)


def quantity(value: object, unit: str) -> str:
    """A value in a registry unit, shown by the conventions: byte amounts in binary units,
    counts with their plural form ('1 core', '2.5 cores', '0.85 GPUs', '3 processes'),
    seconds as a duration; another unit is written after the number."""
    v = _finite(value)
    if v is None:
        return NA
    per = unit_bytes(unit)
    if per is not None:
        return nbytes(v * per)
    if unit == "s":
        return duration(v)
    if unit == "J":
        return energy(v)
    if unit in _COUNT_UNITS:
        word = _COUNT_UNITS[unit]
        shown = round(v, 2)
        return f"{_sig(shown, 3)} {word if shown == 1 else unit}"
    return f"{_sig(v, 3)} {unit}".rstrip()


@dataclass(frozen=True)
class Change:
    """This run against earlier runs: ``direction`` is 'up', 'down' or 'same' (within the
    noise floors); ``text`` what to show ('+12%', '-40%', 'new', 'no change')."""

    direction: str
    text: str


def change(now: object, past: object, unit: str) -> Optional[Change]:
    """The change of `now` against `past` (values in the registry `unit`), or None when
    either is unknown. Below either floor (relative :data:`CHANGE_MIN_RATIO`, absolute
    :data:`CHANGE_FLOORS` for the unit) it is 'no change'."""
    n, p = _finite(now), _finite(past)
    if n is None or p is None:
        return None
    diff = n - p
    floor = CHANGE_FLOORS.get(unit, 0.0)
    if abs(diff) < floor or (p != 0 and abs(diff) / abs(p) < CHANGE_MIN_RATIO) or diff == 0:
        return Change("same", "no change")
    if p == 0:
        return Change("up" if diff > 0 else "down", "new" if diff > 0 else "gone")
    pct = diff / abs(p) * 100.0
    return Change("up" if diff > 0 else "down", f"{pct:+.0f}%")


#: The words of a Jupyter kernel's command line (its launcher module, as run by ``-m`` or by
#: path): what runs there is a notebook, not that command.
JUPYTER_KERNELS = frozenset(("ipykernel_launcher", "ipykernel_launcher.py", "ipykernel"))


def user_command(command: Optional[str], integration: Optional[str] = None) -> Optional[str]:
    """The command as the user knows it: a Metaflow task's internal command line
    (``python flow.py --quiet --metadata=... step train --run-id ...``) as the flow file and
    its step (``python flow.py, step train``); a Jupyter kernel's (``python -m
    ipykernel_launcher -f /tmp/kernel-....json``) as ``Jupyter notebook``; any other command
    as it ran."""
    if command and any(w.rsplit("/", 1)[-1] in JUPYTER_KERNELS for w in command.split()[:4]):
        return "Jupyter notebook"
    if not command or (integration or "").lower() != "metaflow":
        return command
    words = str(command).split()
    if "step" not in words[:-1]:
        return command
    step = words[words.index("step") + 1]
    script = next((w for w in words if w.endswith(".py")), None)
    return f"python {script.rsplit('/', 1)[-1]}, step {step}" if script else f"step {step}"


#: The fix for a missing server catalog, said once wherever it is missing.
CATALOG_FIX = "run `resource-tracker catalog update` once while online"


def catalog_problem(text: str) -> str:
    """A catalog warning (``summary.warnings_about('catalog')``) as one short line: the first
    sentence of why, then the fix once: 'No server prices: <why>. Fix: <CATALOG_FIX>.'"""
    why = str(text).replace("catalog unavailable: ", "", 1)
    cut = why.find(". ")
    why = why if cut < 0 else why[:cut]
    if len(why) > 160:
        why = why[:157] + "..."
    return f"No server prices: {why.rstrip('.')}. Fix: {CATALOG_FIX}."


#: Other names of the two CPU architectures the catalog knows.
ARCHITECTURE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "aarch64": "arm64", "arm": "arm64"}
#: The other of the two: the alternative architecture a run is shown.
OTHER_ARCHITECTURE = {"x86_64": "arm64", "arm64": "x86_64"}


def architecture(name: object) -> Optional[str]:
    """A CPU architecture by the catalog's name (``x86_64``, ``arm64``); None when unknown."""
    if not isinstance(name, str) or not name.strip():
        return None
    word = name.strip().lower()
    return ARCHITECTURE_ALIASES.get(word, word)


def server_caveats(
    server: object, run_architecture: object = None, region: bool = True
) -> Tuple[List[str], Optional[str]]:
    """What a user must know of a server pick beside its size and price: ([its CPU
    architecture, ``burstable`` for burstable vCPUs, the region of its price (unless
    ``region`` is False), ``no GPU`` when it has none], a note when its architecture is not
    the run's ``run_architecture``, else None)."""
    if not isinstance(server, dict):
        return [], None
    parts = []
    arch = architecture(server.get("cpu_architecture"))
    if arch:
        parts.append(arch)
    if str(server.get("cpu_allocation") or "").lower() == "burstable":
        parts.append("burstable")
    where = server.get("price_region_id") or server.get("region_id")
    if region and isinstance(where, str) and where:
        parts.append(f"region {where}")
    if not server.get("gpu_count"):
        parts.append("no GPU")
    run_arch = architecture(run_architecture)
    mismatch = None
    if arch and run_arch and arch != run_arch:
        mismatch = f"not the {run_arch} this run used: its code and wheels must run on {arch}"
    return parts, mismatch


def price_allocation(server: object) -> str:
    """A catalog record's price type as a reader says it ('spot', 'on-demand'; '' unknown)."""
    allocation = server.get("price_allocation") if isinstance(server, dict) else None
    return str(allocation or "").lower().replace("ondemand", "on-demand")


def alternative_server(server: object) -> str:
    """The other architecture's cheaper server in one line ('' for none): 'arm64 instead:
    aws t4g.nano at $0.00126/h (spot), 11% less ($0.00015/h): if the code runs on arm64'."""
    if not isinstance(server, dict):
        return ""
    arch = architecture(server.get("cpu_architecture")) or "the other architecture"
    name = f"{server.get('vendor_id', '?')} {server.get('server_id', '?')}"
    text = f"{arch} instead: {name} at {money(server.get('price'), 'h')}"
    if price_allocation(server):  # as the best server's price says it: spot or on-demand
        text += f" ({price_allocation(server)})"
    share, saving = _finite(server.get("saving_share")), _finite(server.get("saving_usd_per_hour"))
    if share is not None and saving is not None:
        text += f", {percent(share)} less ({money(saving, 'h')})"
    return f"{text}: if the code runs on {arch}"
