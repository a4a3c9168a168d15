"""`recommend --metaflow FLOW`: the fleet view of a Metaflow flow's tracked steps.

For every step with a @track_resources artifact or tuning record in the flow's recent runs
(failed and killed ones included: their records count; the
Metaflow client, in its default namespace): what the step asks today (its @resources /
@kubernetes / @batch attributes, stored in the newest artifact), the ``@resources(...)``
line the tuning rule recommends (:mod:`resource_tracker.tuning`) and the monthly saving,
priced on the catalog's cheapest server for the recommendation.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, TypedDict

from .. import formatting as fmt
from .common import CliError, json_text, out

if TYPE_CHECKING:
    from ..insights import Pricing


class StepRuns(TypedDict):
    """What the recent runs tell of one step (values read from artifacts are unchecked
    here: the tuning rule checks them and notes the odd ones)."""

    stats: List[Mapping[str, Any]]  # stats() of its successful runs, newest first
    records: List[Mapping[str, Any]]  # its tuning records (resource_tracker.tuning)
    asked: Any  # the newest artifact's resources_asked: what the step asks today
    tune: Any  # the newest artifact's tuning_input (runs, asked, bounds)


class Collected(TypedDict):
    """What collect() read from the flow's recent runs."""

    runs: List[str]  # run ids, newest first
    created: List[float]  # their start times, epoch seconds
    steps: Dict[str, StepRuns]


class _StepView(TypedDict):
    runs: int  # how many runs' records the rule used
    asked: Any  # as in StepRuns
    note: str
    recommended: Optional[Dict[str, float]]  # the tuned cpu/memory/gpu, None: nothing tuned


class StepView(_StepView, total=False):
    """The recommendation of one step, with its monthly saving when it could be priced."""

    saving_usd_per_month: float
    priced_on: str  # the catalog server the saving was priced on


def add_arguments(rec: argparse.ArgumentParser) -> None:
    """The options of the Metaflow fleet view on the `recommend` sub-parser."""
    rec.add_argument(
        "--metaflow", metavar="FLOW",
        help="recommend @resources for every tracked step of this Metaflow flow's recent "
        "runs (instead of SNAPSHOTs)",
    )  # fmt: skip
    rec.add_argument(
        "--runs", type=int, default=5, metavar="N",
        help="with --metaflow: how many recent runs to use (default 5)",
    )  # fmt: skip
    rec.add_argument(
        "--artifact", default="resource_tracker_data", metavar="NAME",
        help="with --metaflow: the @track_resources artifact name",
    )  # fmt: skip


def collect(flow_name: str, max_runs: int, artifact: str) -> Collected:
    """``{"runs": [run ids], "created": [epoch s], "steps": {step: {"stats": [...],
    "records": [...], "asked": {...} or None, "tune": {...} or None}}}`` from the client:
    the newest ``max_runs`` runs, failed and killed ones included (their tuning records)."""
    try:
        from metaflow import Flow
        from metaflow.exception import MetaflowNotFound
    except ImportError as exc:
        raise CliError(f"recommend: --metaflow needs Metaflow installed ({exc})") from None
    try:
        runs = Flow(flow_name).runs()
    except MetaflowNotFound:
        raise CliError(
            f"recommend: no Metaflow flow named {flow_name!r} in this namespace "
            "(check the name and the metadata service, e.g. METAFLOW_DEFAULT_METADATA)",
            status=1,
        ) from None
    found: Collected = {"runs": [], "created": [], "steps": {}}
    for run in runs:
        if len(found["runs"]) >= max_runs:
            break
        found["runs"].append(str(run.id))
        created = getattr(run, "created_at", None)
        if created is not None and hasattr(created, "timestamp"):
            found["created"].append(created.timestamp())
        for step in run:
            _collect_step(found["steps"], step, artifact)
    return found


def _collect_step(steps: Dict[str, StepRuns], step: Any, artifact: str) -> None:
    """One run's step into ``steps``: its tuning records, and from its artifact (when this
    task made it) the statistics of a successful run and the ask and tuning settings."""
    from ..metaflow_history import (
        run_records,
        stats_from_artifact,
    )

    task = step.task
    if task is None:
        return
    data = task[artifact].data if artifact in task else None
    if data is not None and not (isinstance(data, dict) and _made_by(data, step.id, task.id)):
        data = None
    records = run_records(task, data)
    if not records:
        return
    entry = steps.setdefault(step.id, StepRuns(stats=[], records=[], asked=None, tune=None))
    entry["records"] += records
    if data is None:
        return
    stats = stats_from_artifact(data)
    if stats is not None and not data.get("step_failed"):
        entry["stats"].append(stats)
    if entry["asked"] is None:  # the newest artifact: the step today
        extra = ((data.get("tracker") or {}).get("extra")) or {}
        entry["asked"] = extra.get("resources_asked")
        entry["tune"] = extra.get("tuning_input")


def _made_by(data: Any, step: str, task: str) -> bool:
    """Whether the artifact was made by this task (Metaflow passes artifacts on to the
    steps after it: a later step without @track_resources holds its parent's)."""
    label = str(((data.get("tracker") or {}).get("label")) or "")
    return not label or label.endswith(f"/{step}/{task}")


def resources_line(values: Optional[Dict[str, Any]]) -> str:
    """``@resources(cpu=1, memory=1024)``: whole numbers rounded up (the one printer:
    ``resource_tracker.tuning.resources_line``)."""
    from ..tuning import resources_line as line

    return line(values)


def step_view(entry: StepRuns, per_month: float, catalog: Optional[str]) -> StepView:
    """The recommendation of one step (the tuning rule over its records, with the ask in
    its code and the guardrails of a tuned step) and its monthly saving."""
    from ..tuning import step_tuning

    stats, asked = entry["stats"], entry["asked"]
    tuning = step_tuning(entry["records"], entry.get("tune"))  # the ask: the newest run's
    view = StepView(
        runs=tuning.runs, asked=asked, note=tuning.note, recommended=tuning.resources or None
    )
    if not tuning.resources or not isinstance(asked, dict) or not asked:
        return view
    pricing = _pricing_for(tuning.resources, catalog)
    if pricing is None:
        view["note"] = (view["note"] + "; " if view["note"] else "") + "no catalog price"
        return view
    durations = [float((s.get("timestamp") or {}).get("duration") or 0.0) for s in stats]
    if not durations:
        return view
    duration = sum(durations) / len(durations)
    gap = pricing.hourly(*_shape(asked)) - pricing.hourly(*_shape(tuning.resources))
    if math.isfinite(gap):
        view["saving_usd_per_month"] = gap * duration / 3600 * per_month
        view["priced_on"] = pricing.server
    return view


def _shape(values: Mapping[str, Any]) -> Tuple[float, float, float]:
    """(cores, MiB, GPUs) of a request (odd values count as 0: they were noted)."""
    from ..tuning import _size

    cpu, memory, gpu = (_size(values.get(k), k) or 0.0 for k in ("cpu", "memory", "gpu"))
    return cpu, memory, gpu


def _pricing_for(resources: Mapping[str, float], catalog: Optional[str]) -> Optional[Pricing]:
    from ..catalog import CatalogUnavailableError, NoMatchingServerError, recommend_server
    from ..insights import Pricing

    try:
        server = recommend_server(dict(resources), catalog=catalog)
    except (CatalogUnavailableError, NoMatchingServerError):
        return None
    return Pricing.from_server(server[0] if isinstance(server, list) else server)


def main(args: argparse.Namespace) -> int:
    """Prints the fleet view; 0 when a tracked step was found, 1 otherwise."""
    from ..insights import DEFAULT_RUNS_PER_MONTH, runs_per_month

    found = collect(args.metaflow, max(1, args.runs), args.artifact)
    per_month = runs_per_month(found["created"])
    basis = "from the runs' times" if per_month else "assumed: one a day"
    per_month = per_month or DEFAULT_RUNS_PER_MONTH
    steps = {
        name: step_view(entry, per_month, args.catalog) for name, entry in found["steps"].items()
    }
    if args.json:
        result = {"flow": args.metaflow, "runs": found["runs"], "runs_per_month": per_month,
                  "runs_per_month_basis": basis, "steps": steps}  # fmt: skip
        out(json_text(result))
    else:
        _print(args.metaflow, found["runs"], steps, per_month, basis)
    return 0 if steps else 1


def _per_month(per_month: float) -> str:
    return f"{fmt.plural(round(per_month, 1), 'run')} a month"


def _print(
    flow: str, runs: List[str], steps: Mapping[str, StepView], per_month: float, basis: str
) -> None:
    out(f"{flow}: {fmt.plural(len(runs), 'recent run')}, {_per_month(per_month)} ({basis})")
    if not steps:
        out("  no step with a @track_resources artifact in these runs")
    for name, view in steps.items():
        out(f"step {name} ({fmt.plural(view['runs'], 'run')})")
        out(f"  today       {resources_line(view['asked'])}")
        if view["recommended"]:
            out(f"  recommended {resources_line(view['recommended'])}")
        if "saving_usd_per_month" in view:
            out(
                f"  saving      {fmt.money(view['saving_usd_per_month'])} a month "
                f"(priced on {view['priced_on']})"
            )
        if view["note"]:
            out(f"  note        {view['note']}")
