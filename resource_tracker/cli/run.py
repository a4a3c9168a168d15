"""`run`: run a command and track it, its children and the machine."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ..tracker import ResourceTracker
from .common import FORMATS, PROG, SNAPSHOT_NAME, CliError, render_report, say, short, write_text
from .parser import FORMATTER, add_interval, export_targets, formats, job_name

if TYPE_CHECKING:
    from ..supervise import CommandRun
    from ..tracker import ResourceTracker
    from .parser import SubParsers

#: Records of --code's agents that could not be read named on stderr (the rest are counted).
SKIPPED_SHOWN = 10

EXAMPLES = f"""\
examples:
  {PROG} run -- python train.py --epochs 3
  {PROG} run --interval 0.5 --output runs/ --format html,json,csv -- ./batch.sh input.csv
  {PROG} run --quiet --format json -- Rscript model.R
  {PROG} run --export pushgateway -- python train.py   (RESOURCE_TRACKER_PUSHGATEWAY_URL)
  {PROG} run --job nightly-etl --export pushgateway -- ./etl.sh
  {PROG} run --code -- python train.py   (where the time and memory went, per function)

The command's stdin, stdout and stderr are untouched; the summary goes to stderr.
Exit status: the command's own (128+N when it is killed by signal N); 127 when the
command is not found, 126 when it cannot be executed (as shells and GNU time); 2 for
usage errors.
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to the command;
what was gathered is still written.
Outputs (in --output): resource-tracker.json (snapshot: '{PROG} report/stats/recommend'
read it), resource-tracker.html (report), resource-tracker-process.csv and
resource-tracker-system.csv (one row per sample).
"""


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """The `run` sub-parser."""
    run = sub.add_parser(
        "run",
        usage=f"{PROG} run [-h] [--interval S] [--output DIR] [--format LIST] [--quiet] "
        "[--export LIST] [--job NAME] [--code] -- COMMAND [ARGS ...]",
        help="run a command and track it, its children and the machine",
        description="Run COMMAND, track it with all its descendants and the whole machine, "
        "print a summary to stderr and write the chosen outputs.",
        epilog=EXAMPLES,
        formatter_class=FORMATTER,
    )
    add_interval(run)
    run.add_argument(
        "--output",
        "-o",
        default=".",
        metavar="DIR",
        help="directory for the outputs (default: the current directory; created when missing)",
    )
    run.add_argument(
        "--format", "-f", type=formats, default=("html", "json"), metavar="LIST",
        help="outputs to write: html,json,csv in any combination, or none (default: html,json)",
    )  # fmt: skip
    run.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    run.add_argument(
        "--export", type=export_targets, default=None, metavar="LIST",
        help="stream the samples to otlp,pushgateway (comma list) or none while the command "
        "runs (default: RESOURCE_TRACKER_EXPORT, unset: none; see docs/export.md)",
    )  # fmt: skip
    run.add_argument(
        "--job", type=job_name, default=None, metavar="NAME",
        help="the job's name: the exported job label, stored in resource-tracker.json and "
        "shown in the report (default: RESOURCE_TRACKER_JOB, unset: resource_tracker)",
    )  # fmt: skip
    run.add_argument(
        "--code", action="store_true",
        help="also record where the command's Python processes spend their time and memory "
        "(an agent loaded through PYTHONPATH; processes that cannot load it run as before; "
        "see docs/code_profile.md)",
    )  # fmt: skip
    run.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command and its "
        "arguments (everything after the command's name is the command's)",
    )  # fmt: skip
    return run


def main(args: argparse.Namespace) -> int:
    """`run`: the tracked command's exit status."""
    from ..supervise import CommandStartError, Supervisor, start_tracker

    command = _command(args)
    if args.format:
        _check_outdir(args.output)
    export = _check_export(getattr(args, "export", None))

    def start(pid: int, adopt: bool) -> ResourceTracker:
        job = getattr(args, "job", None)
        tracker: ResourceTracker = start_tracker(
            ResourceTracker, pid, adopt, interval=args.interval, export=export, job=job
        )
        return tracker

    env, agent_dir = _code_agent(args)
    supervisor = Supervisor(command, start, interval=args.interval, adopt_orphans=True, env=env)
    try:
        with supervisor as result:
            # signals stay blocked until the outputs are written and the summary is shown
            if agent_dir is not None:
                _collect_code(result.tracker, agent_dir)
            _finish(result, args)
    except CommandStartError as exc:
        raise CliError(f"run: {exc}", exc.status) from None
    finally:
        if agent_dir is not None:
            import shutil

            shutil.rmtree(agent_dir, ignore_errors=True)
    return result.status


def _code_agent(args: argparse.Namespace) -> Tuple[Optional[Dict[str, str]], Optional[str]]:
    """With --code: the command's environment loading the agent, and its directory."""
    if not getattr(args, "code", False):
        return None, None
    from ..code_agent import prepare

    return prepare(args.interval)


def _collect_code(tracker: Optional[ResourceTracker], agent_dir: str) -> None:
    """The agents' records into the tracker (nothing when tracking did not start); one line
    per record that could not be read (at most SKIPPED_SHOWN, then a count)."""
    from .code_records import collect

    if tracker is None:
        return
    skipped = collect(tracker, agent_dir)
    for line in skipped[:SKIPPED_SHOWN]:
        say(f"{PROG} run: --code: skipped the record {line}")
    if len(skipped) > SKIPPED_SHOWN:
        say(f"{PROG} run: --code: ... and {len(skipped) - SKIPPED_SHOWN} more records skipped")


def _command(args: argparse.Namespace) -> List[str]:
    """The command to run (after '--'); CliError when there is none."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("run: no command given: e.g. resource-tracker run -- python job.py")
    return command


def _check_export(export: Optional[str]) -> Optional[str]:
    """The --export targets, checked before the command starts (CliError saying what is
    missing: the target's packages, the Pushgateway's address)."""
    from ..export import prepare_export

    try:
        prepare_export(export)
    except (ValueError, ImportError) as exc:
        raise CliError(f"run: {exc}") from None
    return export


def _check_outdir(outdir: str) -> None:
    """CliError when the output directory could not be written to (or made): checked
    before the command starts; the directory itself is made when the outputs are written
    (a command that cannot start leaves nothing behind)."""
    existing = os.path.abspath(outdir)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if existing != os.path.abspath(outdir) and not os.path.isdir(existing):
        raise CliError(f"run: cannot create the output directory {outdir}: {existing} is a file")
    if os.path.lexists(outdir) and not os.path.isdir(outdir):
        raise CliError(f"run: the output directory {outdir} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CliError(f"run: the output directory {outdir} is not writable")


def _finish(result: CommandRun, args: argparse.Namespace) -> None:
    """Writes the outputs and shows the summary (or the notes, with --quiet)."""
    tracker = result.tracker
    if tracker is not None and (not args.quiet or "html" in (args.format or ())):
        try:  # once (one catalog lookup): the JSON stores it, the page and the lines show it
            tracker.summary()
        except Exception:  # the summary lines say what failed; the outputs still get written
            pass
    written: List[str] = []
    notes: List[str] = []
    if tracker is not None:
        written, notes = write_outputs(tracker, args.output, args.format)
    if not args.quiet:
        say("\n".join(_summary(result) + _written_lines(written, notes)))
    elif notes:
        say("\n".join(f"{PROG}: {n}" for n in notes))


def _summary(result: CommandRun) -> List[str]:
    """The summary's lines: the command and its status, then the figures."""
    import shlex

    from .summary import describe_status, summary_lines

    head = f"{PROG}: `{short(shlex.join(result.command))}` " + describe_status(result.status)
    lines = [head]
    if result.tracker is None:
        lines.append(f"  not tracked: {result.not_tracked}")
    else:
        try:
            lines += summary_lines(result.tracker)
        except Exception as exc:  # the exit status and the files matter more
            lines.append(f"  no summary: {type(exc).__name__}: {exc}")
    return lines


def _written_lines(written: List[str], notes: List[str]) -> List[str]:
    lines = [f"  {'written':<11} {', '.join(written)}"] if written else []
    return lines + [f"  {'note':<11} {n}" for n in notes]


def write_outputs(
    tracker: ResourceTracker, outdir: str, formats: Tuple[str, ...]
) -> Tuple[List[str], List[str]]:
    """Writes the chosen outputs; returns (paths written, notes on what was skipped and on
    files of an earlier run that were replaced)."""
    written: List[str] = []
    notes: List[str] = []
    if not formats:
        return written, notes
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        return [], [f"no outputs written: cannot create {outdir}: {exc.strerror}"]
    earlier = [p for p in _output_paths(outdir, formats) if os.path.exists(p)]
    if "json" in formats:
        path = os.path.join(outdir, SNAPSHOT_NAME)
        try:
            write_text(path, tracker.dumps())
            written.append(path)
        except Exception as exc:
            notes.append(f"json not written: {type(exc).__name__}: {exc}")
    if "csv" in formats:
        for table in ("process", "system"):
            path = os.path.join(outdir, f"resource-tracker-{table}.csv")
            try:
                getattr(tracker, f"{table}_metrics").to_csv(path, quote_strings=False)
                written.append(path)
            except Exception as exc:
                notes.append(f"csv not written: {type(exc).__name__}: {exc}")
    if "html" in formats:
        _write_html(tracker, os.path.join(outdir, "resource-tracker.html"), written, notes)
    replaced = [p for p in earlier if p in written]
    if replaced:
        notes.append(
            f"replaced an earlier run's {', '.join(replaced)} (--output DIR keeps runs apart)"
        )
    return written, notes


def _output_paths(outdir: str, formats: Tuple[str, ...]) -> List[str]:
    """The files the chosen outputs are written to."""
    names = {
        "json": [SNAPSHOT_NAME],
        "csv": [f"resource-tracker-{table}.csv" for table in ("process", "system")],
        "html": ["resource-tracker.html"],
    }
    return [os.path.join(outdir, name) for f in FORMATS if f in formats for name in names[f]]


def _write_html(tracker: ResourceTracker, path: str, written: List[str], notes: List[str]) -> None:
    try:
        render_report(tracker).save(path)
        written.append(path)
    except CliError as exc:
        notes.append(f"html skipped: {exc}")
    except Exception as exc:  # a failing report must not lose the exit status or the data
        notes.append(f"html not written: {type(exc).__name__}: {exc}")
