"""`dashboard`: one self-contained page over many runs of many steps (docs/dashboard.md),
and ``--check`` / ``--json`` for schedulers and CI."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from .. import formatting as fmt
from .._text import one_line
from .common import PROG, CliError, json_text, out, say, write_text
from .parser import FORMATTER, positive_int
from .recommend_metaflow import _pricing_for

if TYPE_CHECKING:
    from ..dashboard._fleet import Fleet, PriceFor
    from ..dashboard._model import Loaded
    from ..insights import Pricing
    from .parser import SubParsers

EXAMPLES = f"""\
examples:
  {PROG} dashboard --metaflow TrainFlow ScoreFlow --last 50 -o fleet.html
  {PROG} dashboard --runs runs/            (saved resource-tracker.json snapshots)
  {PROG} dashboard --prometheus http://127.0.0.1:9090 --since 30d
  {PROG} dashboard --metaflow TrainFlow --check   (for cron or CI: exit 1 on an alert)

Exit status: 0 (with --check: 0 when no step is at risk or trending to its limit, 1 when
one is, one line each; 3 when no run could be read, so nothing was judged); 1 when no run
was found; 2 for a bad option value.
"""

#: Skipped runs named on stderr (the rest are counted).
SKIPPED_SHOWN = 10
#: --check's exit status when no run could be read: nothing was judged (not "no alert": a
#: broken source must not read as healthy, nor as an alert).
NOT_JUDGED = 3
#: The page written when no --output is given.
DEFAULT_OUTPUT = "resource-tracker-dashboard.html"
#: --since units, in seconds.
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_seconds(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``3600`` (seconds) as seconds (argparse type)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"invalid --since {text!r}: give a duration like 30d, 12h, 90m or 3600"
        )
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `dashboard` sub-parser."""
    dash = sub.add_parser(
        "dashboard",
        help="one page over many runs: fleet table, trends, anomalies, savings",
        description="Read many runs of many steps (Metaflow, saved snapshots, Prometheus) and "
        "write one self-contained HTML page: the fleet table (asked, needed, money unused, "
        "at risk), then per step its runs over time with anomalies and trends.",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    src = dash.add_argument_group("sources (at least one)")
    src.add_argument("--metaflow", nargs="+", metavar="FLOW", help="Metaflow flows (the "
                     "client's default namespace)")  # fmt: skip
    src.add_argument("--last", type=positive_int, default=30, metavar="N",
                     help="with --metaflow: the newest N runs of a flow (default 30)")  # fmt: skip
    src.add_argument("--artifact", default="resource_tracker_data", metavar="NAME",
                     help="with --metaflow: the @track_resources artifact name")  # fmt: skip
    src.add_argument("--runs", action="append", metavar="DIR",
                     help="a folder of saved resource-tracker.json snapshots (repeat)")  # fmt: skip
    src.add_argument("--prometheus", metavar="URL", help="a Prometheus server (HTTP API) "
                     "holding the run summaries our export pushes")  # fmt: skip
    src.add_argument("--since", type=since_seconds, default=30 * 86400.0, metavar="AGE",
                     help="with --prometheus: how far back (default 30d)")  # fmt: skip
    src.add_argument("--group-by", action="append", metavar="LABEL",
                     help="with --prometheus: another label to group runs by (repeat)")  # fmt: skip
    dash.add_argument("--output", "-o", metavar="PATH", help=f"the page to write (default "
                      f"{DEFAULT_OUTPUT}; with --check or --json: only when given)")  # fmt: skip
    dash.add_argument("--browse", action="store_true", help="open the page in a web browser")
    dash.add_argument("--catalog", metavar="PATH", help="a Spare Cores SQLite catalog file")
    dash.add_argument("--check", action="store_true", help="print one line per step at risk or "
                      "trending to its limit; exit 1 when there is one, 3 when no run could "
                      "be read")  # fmt: skip
    dash.add_argument("--json", action="store_true", help="print the fleet as JSON (with "
                      "--check: the JSON instead of the lines, the same exit status)")  # fmt: skip
    return dash


def load(args: argparse.Namespace) -> Loaded:
    """The records of every source given (CliError for a bad source)."""
    from ..dashboard._model import Loaded

    loaded = Loaded()
    try:
        if args.metaflow:
            from ..dashboard._metaflow import load_metaflow

            loaded.extend(load_metaflow(args.metaflow, args.last, args.artifact))
        for folder in args.runs or ():
            from ..dashboard._snapshots import load_snapshots

            loaded.extend(load_snapshots(folder))
        if args.prometheus:
            loaded.extend(_load_prometheus(args))
    except ValueError as exc:
        raise CliError(f"dashboard: {exc}", status=2) from None
    return loaded


def _load_prometheus(args: argparse.Namespace) -> Loaded:
    """h-prom's loader (``resource_tracker.dashboard._prometheus.load_prometheus``)."""
    try:
        from ..dashboard import _prometheus
    except ImportError:
        raise ValueError("--prometheus: this build has no Prometheus reader yet") from None
    from ..dashboard._model import Loaded

    found = _prometheus.load_prometheus(args.prometheus, args.since, args.group_by or [])
    return found if isinstance(found, Loaded) else Loaded(list(found))


def price_for(catalog: Optional[str]) -> PriceFor:
    """A pricing function: the cheapest catalog server for a need (cached per shape)."""
    cache: Dict[Tuple[Tuple[str, float], ...], Optional[Pricing]] = {}

    def price(need: Mapping[str, float]) -> Optional[Pricing]:
        key = tuple(sorted(need.items()))
        if key not in cache:
            cache[key] = _pricing_for(dict(need), catalog)
        return cache[key]

    return price


def main(args: argparse.Namespace) -> int:
    """Writes the page (unless --check or --json without --output), prints --json or the
    --check lines; the exit status of --check, else 0 with runs, 1 without."""
    from ..dashboard._fleet import build_fleet

    if not (args.metaflow or args.runs or args.prometheus):
        raise CliError("dashboard: give a source: --metaflow FLOW, --runs DIR or --prometheus URL")
    loaded = load(args)
    fleet = build_fleet(loaded.records, price_for(args.catalog), loaded.skipped)
    for line in loaded.skipped[:SKIPPED_SHOWN]:
        say(f"{PROG}: dashboard: skipped {one_line(line, 500)}")
    if len(loaded.skipped) > SKIPPED_SHOWN:
        say(f"{PROG}: dashboard: ... and {len(loaded.skipped) - SKIPPED_SHOWN} more skipped "
            "(all of them: --json, or the end of the page)")  # fmt: skip
    if not fleet.steps:
        say(f"{PROG}: dashboard: no tracked run found in the sources given")
    if args.output or not (args.json or args.check):
        _write_page(args, fleet)
    if args.json:
        out(json_text(fleet_json(fleet)))
    elif args.check:
        for line in check_lines(fleet):
            out(line)
    if args.check:
        return NOT_JUDGED if not fleet.steps else 1 if fleet.alerting else 0
    return 0 if fleet.steps else 1


def _write_page(args: argparse.Namespace, fleet: Fleet) -> None:
    from ..dashboard._page import render_dashboard

    page = render_dashboard(fleet, _sources(args))
    path = args.output or DEFAULT_OUTPUT
    write_text(path, page)
    say(f"{PROG}: dashboard: {fleet.headline()}; written {path}")
    if args.browse:
        page.browse()


def _sources(args: argparse.Namespace) -> List[str]:
    found = (
        [f"Metaflow {' '.join(args.metaflow)} (last {fmt.plural(args.last, 'run')})"]
        if args.metaflow
        else []
    )
    found += [f"runs in {d}" for d in args.runs or ()]
    return found + ([f"Prometheus {args.prometheus}"] if args.prometheus else [])


def check_lines(fleet: Fleet) -> List[str]:
    """One printable line per step with an alert (``STEP: alert; alert``; a newline in a
    step's name is a space)."""
    return [one_line(f"{s.step}: {'; '.join(s.alerts)}", 500) for s in fleet.alerting]


def fleet_json(fleet: Fleet) -> Dict[str, Any]:
    """The fleet as data (docs/dashboard.md, "JSON")."""
    from ..dashboard._fleet import trend_sentence

    steps = []
    for view in fleet.steps:
        steps.append({
            "step": view.step, "runs": len(view.runs),
            "failed_or_killed": sum(r.status != "ok" for r in view.runs),
            "ask": dict(view.ask), "need": dict(view.need), "note": view.note,
            "runs_per_month": view.runs_per_month, "waste_usd_per_month": view.waste_usd_month,
            "priced_on": view.priced_on or None, "at_risk_runs": len(view.at_risk),
            "newest_at_risk": view.newest_at_risk,
            "anomalies": [{"run": a.run_id, "metric": a.metric, "message": a.message}
                          for a in view.anomalies],
            "trends": {name: {"growth_per_run": t.growth, "level": t.level, "line": t.line,
                              "runs_to_line": t.runs_to_line,
                              "sentence": trend_sentence(view, name)}
                       for name, t in view.trends.items()},
            "alerts": list(view.alerts),
        })  # fmt: skip
    return {
        "headline": fleet.headline(), "waste_usd_per_month": fleet.waste_usd_month,
        "steps_at_risk": len(fleet.at_risk_steps), "alerting": len(fleet.alerting),
        "steps": steps, "skipped": list(fleet.skipped),
    }  # fmt: skip
