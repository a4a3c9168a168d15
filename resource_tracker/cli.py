"""The command-line tool: ``resource-tracker`` (also ``python -m resource_tracker``).

Commands: ``run`` (track any command), ``report`` / ``stats`` / ``recommend`` (work on saved
runs), ``watch`` (a live view) and ``catalog`` (the Spare Cores server catalog). Every error
is one line on stderr with a non-zero exit status (2 for usage errors); ``run`` exits with
the tracked command's status, 127 when it is not found and 126 when it cannot be executed.

This module is not imported by ``resource_tracker/__init__.py``: its imports (argparse,
subprocess, ...) cost nothing to users of the Python API.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from . import _adopt

PROG = "resource-tracker"
FORMATS = ("html", "json", "csv")
COMMANDS = ("run", "report", "stats", "recommend", "watch", "catalog")
SNAPSHOT_NAME = "resource-tracker.json"
FORWARDED_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)
SI_KERNEL = 0x80  # siginfo si_code of a signal raised by the kernel (e.g. Ctrl-C at a terminal)


class CliError(Exception):
    """An error shown to the user as one line, with exit status 2 (or ``status``)."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


#: Exit statuses of `run` when the command cannot be started, as shells and GNU time use them.
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit status 2."""

    def error(self, message):
        raise CliError(f"{self.prog}: {message} (see '{self.prog} --help')")


# -- argument types ----------------------------------------------------------------------


def _interval(text):
    """The interval option as a float within the tracker's bounds."""
    from .tracker import MAX_INTERVAL, MIN_INTERVAL

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise argparse.ArgumentTypeError(
            f"invalid interval {text!r}: give a number of seconds between {MIN_INTERVAL:g} and "
            f"{MAX_INTERVAL:g}, e.g. 0.5"
        )
    return value


def _formats(text):
    """The --format option as a tuple of known formats ('none' for no files)."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return ()
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"invalid format {text!r}: choose from {','.join(FORMATS)} (comma-separated) or none"
        )
    return tuple(dict.fromkeys(names))


def _positive_int(text, what="count", hint="give a positive integer"):
    """An option value as a positive int (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: {hint}")
    return value


def _pid(text):
    """The --pid option as a positive int."""
    return _positive_int(text, "pid", "give a process id, e.g. 1234")


# -- the parser --------------------------------------------------------------------------

RUN_EXAMPLES = f"""\
examples:
  {PROG} run -- python train.py --epochs 3
  {PROG} run --interval 0.5 --output runs/ --format html,json,csv -- ./batch.sh input.csv
  {PROG} run --quiet --format json -- Rscript model.R

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

REPORT_EXAMPLES = f"""\
examples:
  {PROG} report resource-tracker.json
  {PROG} report runs/resource-tracker.json -o runs/report.html --browse
"""

STATS_EXAMPLES = f"""\
examples:
  {PROG} stats resource-tracker.json
  {PROG} stats resource-tracker.json --json | python -m json.tool
"""

RECOMMEND_EXAMPLES = f"""\
examples:
  {PROG} recommend resource-tracker.json
  {PROG} recommend today.json yesterday.json last-week.json --vendor aws --allocation spot
  {PROG} recommend run.json --architecture arm64 --region eu-central-1 --json

The first snapshot is the current run; the others are earlier runs of the same job
(CPU: mean of the means; memory, GPU and VRAM: the highest peak).
Exit status: 0 with a server; 1 without one (no catalog, or nothing fits: the reason is
printed); 2 for a bad option value (e.g. an unknown --vendor).
"""

WATCH_EXAMPLES = f"""\
examples:
  {PROG} watch                      # the whole machine, one refreshing line
  {PROG} watch --pid 4242           # a running job (and its children) and the machine
  {PROG} watch --system --interval 5 >> machine.log   # plain lines when not a terminal

Stops at Ctrl-C, when the process exits, or after --count samples.
"""

CATALOG_EXAMPLES = f"""\
examples:
  {PROG} catalog info
  {PROG} catalog update
  RESOURCE_TRACKER_CATALOG=/data/sc-data-all.db {PROG} catalog info

Exit status: 0; 1 when `info` finds an error (it still prints what it knows); 2 when
`update` fails.
"""

MAIN_EXAMPLES = f"""\
examples:
  {PROG} run -- python train.py
  {PROG} report resource-tracker.json --browse
  {PROG} recommend resource-tracker.json --vendor aws
  {PROG} watch --pid 4242

'{PROG} COMMAND --help' shows the options and examples of each command.
"""


def _build_parser():
    """The argparse parser of the whole tool."""
    from ._version import __version__

    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=PROG,
        description="Track the CPU, memory, GPU, disk and network use of a command, and find "
        "the resources and the cheapest cloud server it needs.",
        epilog=MAIN_EXAMPLES,
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        usage=f"{PROG} run [-h] [--interval S] [--output DIR] [--format LIST] [--quiet] "
        "-- COMMAND [ARGS ...]",
        help="run a command and track it, its children and the machine",
        description="Run COMMAND, track it with all its descendants and the whole machine, "
        "print a summary to stderr and write the chosen outputs.",
        epilog=RUN_EXAMPLES,
        formatter_class=fmt,
    )
    run.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="S",
        help="seconds between samples (default 1)",
    )
    run.add_argument(
        "--output",
        "-o",
        default=".",
        metavar="DIR",
        help="directory for the outputs (default: the current directory; created when missing)",
    )
    run.add_argument(
        "--format", "-f", type=_formats, default=("html", "json"), metavar="LIST",
        help="outputs to write: html,json,csv in any combination, or none (default: html,json)",
    )  # fmt: skip
    run.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    run.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command and its "
        "arguments (everything after the command's name is the command's)",
    )  # fmt: skip

    report = sub.add_parser(
        "report",
        help="render the HTML report of a saved run",
        description="Render the HTML report of a snapshot written by 'run' (or dumps()).",
        epilog=REPORT_EXAMPLES,
        formatter_class=fmt,
    )
    report.add_argument("snapshot", metavar="SNAPSHOT")
    report.add_argument(
        "-o", "--output", metavar="FILE", help="where to write (default: SNAPSHOT with .html)"
    )
    report.add_argument("--browse", action="store_true", help="open it in the web browser")

    stats = sub.add_parser(
        "stats",
        help="show the statistics of a saved run",
        description="Show the statistics of a snapshot: the summary, or stats() as JSON.",
        epilog=STATS_EXAMPLES,
        formatter_class=fmt,
    )
    stats.add_argument("snapshot", metavar="SNAPSHOT")
    stats.add_argument("--json", action="store_true", help="print stats() as JSON")

    rec = sub.add_parser(
        "recommend",
        help="recommend resources and a server from one or more saved runs",
        description="Recommend resources (and the cheapest fitting server, when a catalog is "
        "available) from one or more snapshots of the same job.",
        epilog=RECOMMEND_EXAMPLES,
        formatter_class=fmt,
    )
    rec.add_argument("snapshots", nargs="+", metavar="SNAPSHOT")
    rec.add_argument(
        "--vendor", action="append",
        help="e.g. aws, gcp, azure, hcloud, upcloud, ovh, alicloud (repeat for several)",
    )  # fmt: skip
    rec.add_argument(
        "--region", action="append", help="a region id of the vendor, e.g. us-east-1 (repeat)"
    )
    rec.add_argument("--country", action="append", help="a country code, e.g. DE (repeat)")
    rec.add_argument("--allocation", choices=("ondemand", "spot", "any"), help="price type")
    rec.add_argument("--architecture", help="x86_64 or arm64")
    rec.add_argument("--compliance-framework", help="e.g. hipaa, iso27001, soc2t2")
    rec.add_argument(
        "--green-energy", action="store_true", help="only regions powered by green energy"
    )
    rec.add_argument("--min-score", type=float, metavar="SCORE", help="lowest benchmark score")
    rec.add_argument("--max-price", type=float, metavar="USD", help="highest hourly price")
    rec.add_argument(
        "--order-by", choices=("price", "score_per_price"), default="price",
        help="cheapest first (default) or best performance per price",
    )  # fmt: skip
    rec.add_argument("--catalog", metavar="PATH", help="a Spare Cores SQLite catalog file")
    rec.add_argument("-n", type=_positive_int, metavar="N", help="list the best N servers")
    rec.add_argument("--json", action="store_true", help="print the result as JSON")

    watch = sub.add_parser(
        "watch",
        help="a live view of a process or the machine",
        description="Show the use of a process tree (--pid) or the machine (--system, the "
        "default) live: one refreshing line on a terminal, plain lines otherwise.",
        epilog=WATCH_EXAMPLES,
        formatter_class=fmt,
    )
    target = watch.add_mutually_exclusive_group()
    target.add_argument("--pid", type=_pid, help="process to watch (with its descendants)")
    target.add_argument("--system", action="store_true", help="the machine only (default)")
    watch.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="S",
        help="seconds between samples (default 1)",
    )
    watch.add_argument("--count", type=_positive_int, metavar="N", help="stop after N samples")

    catalog = sub.add_parser(
        "catalog",
        help="the Spare Cores server catalog: update it or show where it is",
        description="Manage the local copy of the Spare Cores server catalog.",
        epilog=CATALOG_EXAMPLES,
        formatter_class=fmt,
    )
    catalog.add_argument("action", choices=("update", "info"), help="update: download it; "
                         "info: where it is, its age and size")  # fmt: skip
    catalog.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


# -- entry point -------------------------------------------------------------------------


def main(argv=None):
    """Runs the tool with argv (default: sys.argv[1:]); returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        parser = _build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        if args.cmd is None:
            parser.print_help(sys.stderr)
            return 2
        handler = {
            "run": _cmd_run,
            "report": _cmd_report,
            "stats": _cmd_stats,
            "recommend": _cmd_recommend,
            "watch": _cmd_watch,
            "catalog": _cmd_catalog,
        }[args.cmd]
        return handler(args)
    except CliError as exc:
        _say(_error_line(str(exc)))
        return exc.status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0


def _error_line(message):
    """The one error line: 'resource-tracker run: ...' or 'resource-tracker: ...'."""
    first = message.split(":", 1)[0]
    if message.startswith(PROG):
        return message
    if first in COMMANDS:
        return f"{PROG} {message}"
    return f"{PROG}: {message}"


def _say(text):
    """Writes one line to stderr (control characters of foreign text taken out)."""
    from ._text import printable

    try:
        print(printable(text, limit=4000), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _quiet_stdout():
    """Points stdout at /dev/null (after a broken pipe, so that exit does not complain)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


# -- run ---------------------------------------------------------------------------------


def _cmd_run(args):
    """`run`: the tracked command's exit status."""
    import shlex
    import subprocess

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("run: no command given: e.g. resource-tracker run -- python job.py")
    outdir = args.output
    if args.format:
        try:
            os.makedirs(outdir, exist_ok=True)
        except OSError as exc:
            raise CliError(
                f"run: cannot create the output directory {outdir}: {exc.strerror}"
            ) from None
        if not os.access(outdir, os.W_OK | os.X_OK):
            raise CliError(f"run: the output directory {outdir} is not writable")

    # Before the child exists, signals are remembered and passed on once it does.
    state = {"pid": None, "pending": [], "sent": []}
    previous = {}
    for sig in FORWARDED_SIGNALS:
        previous[sig] = signal.signal(sig, lambda signum, frame: _on_signal(state, signum))
    waited = set(FORWARDED_SIGNALS) | {signal.SIGCHLD}
    blocking = hasattr(signal, "sigtimedwait")  # Linux; elsewhere the handlers forward
    old_mask = None
    # orphans of the command's tree (daemons that double-fork) become ours: tracked, reaped
    subreaper = _adopt.become_subreaper()
    try:
        try:
            proc = subprocess.Popen(command)
        except FileNotFoundError:
            raise CliError(f"run: command not found: {command[0]}", EXIT_NOT_FOUND) from None
        except PermissionError:
            raise CliError(
                f"run: cannot execute {command[0]}: permission denied", EXIT_NOT_EXECUTABLE
            ) from None
        except OSError as exc:  # e.g. not a program (ENOEXEC): the shell's 126 as well
            raise CliError(
                f"run: cannot execute {command[0]}: {exc.strerror or exc}", EXIT_NOT_EXECUTABLE
            ) from None
        if blocking:
            # From here on the signals wait in the kernel until sigtimedwait takes them;
            # threads started below (the sampler) inherit the mask: only this thread sees them.
            old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
        state["pid"] = proc.pid
        for sig in state["pending"]:
            _forward(proc.pid, sig)
            state["sent"].append(signal.Signals(sig).name)
        tracker, problem = _start_tracker(proc.pid, args.interval, adopt=subreaper)
        if tracker is not None and not tracker.command:
            tracker.command = shlex.join(command)
        if blocking:
            reaper = _adopt.ZombieReaper(proc.pid, args.interval) if subreaper else None
            state["sent"] += _wait_forwarding(proc.pid, waited, reaper)
        else:
            _wait_polling(proc)
        if subreaper:  # the processes the command left behind are part of the job
            state["sent"] += _adopt.wait_adopted(proc.pid, waited if blocking else None, _forward)
        if tracker is not None:
            tracker.stop()  # before reaping: the last reading sees all of the tree's CPU time
        status = _exit_status(proc.wait())
        if subreaper:
            _adopt.reap_adopted(proc.pid)
        forwarded = state["sent"]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if tracker is not None:
        tracker.extra["exit_status"] = status
        tracker.extra["argv"] = command
        if forwarded:
            tracker.extra["signals_forwarded"] = forwarded
    written, notes = ([], []) if tracker is None else _write_outputs(tracker, outdir, args.format)
    if not args.quiet:
        head = f"{PROG}: `{_short(shlex.join(command))}` " + _describe_status(status)
        lines = [head]
        if tracker is None:
            lines.append(f"  not tracked: {problem}")
        else:
            try:
                lines += _summary_lines(tracker)
            except Exception as exc:  # the exit status and the files matter more
                lines.append(f"  no summary: {type(exc).__name__}: {exc}")
        lines += [f"  {'written':<11} {', '.join(written)}"] if written else []
        lines += [f"  {'note':<11} {n}" for n in notes]
        _say("\n".join(lines))
    elif notes:
        _say("\n".join(f"{PROG}: {n}" for n in notes))
    if old_mask is not None:
        # Signals that came after the command's exit (e.g. the Ctrl-C it died of) are dropped.
        while signal.sigtimedwait(waited, 0) is not None:
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return status


def _short(text, width=60):
    """text on one line, cut to width characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _start_tracker(pid, interval, adopt=False):
    """(ResourceTracker of pid, None), or (None, why) when tracking cannot start. With adopt,
    this process's other children (orphans it inherits as subreaper) are tracked too."""
    try:
        from .tracker import ResourceTracker

        tracker = ResourceTracker(pid=pid, interval=interval, autostart=False)
        if adopt:
            tracker._adopt_children_of(os.getpid())
        tracker.start()
        return tracker, None
    except Exception as exc:  # the command runs on untracked rather than not at all
        return None, f"{type(exc).__name__}: {exc}"


def _on_signal(state, signum):
    """Signal handler of `run`: forwards to the command, or remembers until it exists."""
    if state["pid"] is None:
        state["pending"].append(signum)
    else:
        _forward(state["pid"], signum)
        state["sent"].append(signal.Signals(signum).name)


def _wait_polling(proc):
    """Waits until proc exits (without reaping where waitid exists); signal handlers forward."""
    import time

    while True:
        if hasattr(os, "waitid"):
            try:
                if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG):
                    return
            except ChildProcessError:
                return
        elif proc.poll() is not None:
            return
        time.sleep(0.1)


def _forward(pid, sig):
    """Sends sig to pid (ignoring a process that is already gone)."""
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _wait_forwarding(pid, waited, reaper=None):
    """Waits (without reaping) until pid exits, passing signals on; returns the names sent.
    A reaper (of adopted orphans) hears of every SIGCHLD and gets a turn each loop."""
    sent = []
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return sent
        except ChildProcessError:
            return sent
        info = signal.sigtimedwait(waited, 0.25)
        if reaper is not None:
            reaper.turn(info is not None and info.si_signo == signal.SIGCHLD)
        if info is None or info.si_signo == signal.SIGCHLD:
            continue
        # A terminal's Ctrl-C reaches the whole foreground process group, the command
        # included: passing it on again would deliver it twice.
        if info.si_code != SI_KERNEL:
            _forward(pid, info.si_signo)
            sent.append(signal.Signals(info.si_signo).name)


def _exit_status(returncode):
    """A shell-style exit status: the code, or 128+N for a command killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _describe_status(status):
    if status > 128:
        try:
            name = signal.Signals(status - 128).name
        except ValueError:
            name = f"signal {status - 128}"
        return f"was killed by {name} (exit status {status})"
    return f"exited with status {status}"


def _write_outputs(tracker, outdir, formats):
    """Writes the chosen outputs; returns (paths written, notes on what was skipped)."""
    written, notes = [], []
    if "json" in formats:
        path = os.path.join(outdir, SNAPSHOT_NAME)
        try:
            _write_text(path, tracker.dumps())
            written.append(path)
        except Exception as exc:
            notes.append(f"json not written: {type(exc).__name__}: {exc}")
    if "csv" in formats:
        for table in ("process", "system"):
            path = os.path.join(outdir, f"resource-tracker-{table}.csv")
            try:
                getattr(tracker, f"{table}_metrics").to_csv(path)
                written.append(path)
            except Exception as exc:
                notes.append(f"csv not written: {type(exc).__name__}: {exc}")
    if "html" in formats:
        path = os.path.join(outdir, "resource-tracker.html")
        try:
            report = _render_report(tracker)
            report.save(path)
            written.append(path)
        except CliError as exc:
            notes.append(f"html skipped: {exc}")
        except Exception as exc:  # a failing report must not lose the exit status or the data
            notes.append(f"html not written: {type(exc).__name__}: {exc}")
    return written, notes


def _write_text(path, text):
    """Writes text to path through a temporary file (never a half-written file)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _render_report(tracker, historical_stats=None):
    """The HTML Report of tracker; CliError when the report package is unavailable."""
    try:
        from .report import render_report
    except ImportError as exc:
        raise CliError(f"the HTML report is not available in this installation ({exc})") from None
    return render_report(tracker, historical_stats=historical_stats)


# -- the summary ---------------------------------------------------------------------------


def _size(nbytes):
    """A byte count for people: '0 B', '12.3 KiB', '1.5 GiB'."""
    value = float(nbytes or 0)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def _get(stats, key, field, default=0.0):
    value = (stats.get(key) or {}).get(field)
    return default if value is None else value


def _summary_lines(tracker, historical_stats=None, server=True):
    """The summary of a (stopped) tracker, as lines for stderr."""
    from ._text import printable as _printable
    from .tracker import data_quality_notes

    try:
        stats = tracker.stats()
    except Exception as exc:
        return [f"  no statistics: {type(exc).__name__}: {exc}"]
    ts = stats.get("timestamp") or {}
    info = tracker.server_info or {}
    lines = []
    row = lambda label, text: lines.append(f"  {label:<11} {text}")  # noqa: E731
    vcpus = info.get("vcpus")
    row(
        "duration",
        f"{ts.get('duration', 0.0):.1f} s, {int(ts.get('samples', 0))} samples every "
        f"{tracker.interval:g} s",
    )
    row(
        "CPU",
        f"mean {_get(stats, 'process_cpu_usage', 'mean'):.2f}, "
        f"peak {_get(stats, 'process_cpu_usage', 'max'):.2f} cores"
        + (f" (machine: {vcpus} vCPUs" if vcpus else " (machine")
        + f", mean {_get(stats, 'system_cpu_usage', 'mean'):.2f} cores in use)",
    )
    mem_total = info.get("memory_mb")
    row(
        "memory",
        f"peak {_size(_get(stats, 'process_memory', 'max') * 1024)}"
        + f" (machine: peak {_size(_get(stats, 'system_memory_used', 'max') * 1024)} used"
        + (f" of {_size(mem_total * 2**20)})" if mem_total else ")"),
    )
    gpus = _get(stats, "process_gpu_utilized", "max")
    if gpus or _get(stats, "system_gpu_utilized", "max") or info.get("gpu_count"):
        row(
            "GPU",
            f"peak {gpus:.0f} GPUs in use, usage peak {_get(stats, 'process_gpu_usage', 'max'):.2f}"
            f", VRAM peak {_size(_get(stats, 'process_gpu_vram', 'max') * 2**20)}",
        )
    else:
        row("GPU", "none used")
    row("children", f"peak {_get(stats, 'process_children', 'max'):.0f}")
    row(
        "disk I/O",
        f"read {_size(_get(stats, 'process_read_bytes', 'sum'))}, "
        f"written {_size(_get(stats, 'process_write_bytes', 'sum'))} "
        f"(machine: read {_size(_get(stats, 'system_disk_read_bytes', 'sum'))}, "
        f"written {_size(_get(stats, 'system_disk_write_bytes', 'sum'))})",
    )
    row(
        "network",
        f"received {_size(_get(stats, 'system_net_recv_bytes', 'sum'))}, "
        f"sent {_size(_get(stats, 'system_net_sent_bytes', 'sum'))} (machine)",
    )
    for note in data_quality_notes(stats):
        row("incomplete", _printable(note))
    try:
        res = tracker.recommend_resources(historical_stats=historical_stats)
    except ValueError as exc:
        row("recommended", f"nothing ({exc})")
        return lines
    row("recommended", _describe_resources(res))
    if server:
        lines += _server_lines(tracker, res, historical_stats, ts.get("duration") or 0.0, {})
    return lines


def _describe_resources(res):
    text = f"{res['cpu']} CPU, {res['memory']} MiB memory"
    if res.get("gpu"):
        text += f", {res['gpu']} GPU, {res['vram']} MiB VRAM"
    return text


def _find_servers(resources, n=None, strict=False, **filters):
    """(server or list, None), or (None, why not) when there is no catalog or no match.

    strict: a bad filter value (ValueError) is a CliError (exit status 2), not a reason.
    """
    try:
        catalog = _import_catalog()
    except CliError as exc:
        return None, str(exc)
    if catalog is None:
        return None, "no server catalog in this installation"
    filters = {k: v for k, v in filters.items() if v is not None}
    try:
        return catalog.recommend_server(resources, n=n, **filters), None
    except Exception as exc:
        from ._text import printable

        if type(exc).__name__ == "NoMatchingServerError":
            return None, printable(f"no server in the catalog fits ({exc})")
        if type(exc).__name__ == "CatalogUnavailableError":
            return None, printable(str(exc).splitlines()[0] if str(exc) else "no catalog available")
        if strict and isinstance(exc, ValueError):
            raise CliError(f"recommend: {exc}") from None
        return None, printable(f"{type(exc).__name__}: {exc}")


def _import_catalog():
    """The resource_tracker.catalog module, or None when it is not installed."""
    import importlib

    try:
        return importlib.import_module("resource_tracker.catalog")
    except ModuleNotFoundError as exc:
        if exc.name in ("resource_tracker.catalog", "resource_tracker"):
            return None
        raise CliError(f"the server catalog cannot be loaded: {exc}") from None
    except ImportError as exc:
        raise CliError(f"the server catalog cannot be loaded: {exc}") from None


def _describe_server(server):
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


def _server_lines(tracker, resources, historical_stats, duration, filters):
    """Lines on the cheapest fitting server and the cost of the run (or why there is none)."""
    found, why = _find_servers(resources, **filters)
    if found is None:
        return [f"  {'server':<11} {why}"]
    first = found[0] if isinstance(found, list) and found else found
    lines = [f"  {'server':<11} {_describe_server(first)}"]
    if isinstance(first, dict) and first.get("price_source"):
        lines.append(f"  {'prices':<11} {first['price_source']}")
    cost = _run_costs(duration, tracker.cloud_info, first)
    if cost:
        lines.append(f"  {'cost':<11} {cost}")
    return lines


def _run_costs(duration, cloud_info, server):
    """The cost line of a run ('' when unknown)."""
    try:
        costs = _import_catalog().run_costs(duration, cloud_info, server)
    except Exception:
        return ""
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


# -- report, stats, recommend ---------------------------------------------------------------


def _load(path):
    """The tracker saved in path; CliError (one line) when it cannot be read."""
    from .tracker import ResourceTracker

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"cannot read {path}: not a resource-tracker snapshot (not text)") from None
    try:
        return ResourceTracker.loads(text)
    except (ValueError, TypeError, KeyError) as exc:
        raise CliError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None


def _cmd_report(args):
    """`report`: writes the HTML report of a snapshot; 0 on success."""
    tracker = _load(args.snapshot)
    out = args.output or os.path.splitext(args.snapshot)[0] + ".html"
    try:
        report = _render_report(tracker)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"report: cannot render {args.snapshot}: {exc}") from None
    try:
        report.save(out)
    except OSError as exc:
        raise CliError(f"report: cannot write {out}: {exc.strerror or exc}") from None
    except Exception as exc:
        raise CliError(f"report: cannot render {args.snapshot}: {exc}") from None
    print(out)
    if args.browse:
        import pathlib

        from .report._browse import open_in_browser

        if not open_in_browser(pathlib.Path(out).resolve().as_uri()):
            _say(f"{PROG}: no web browser found; the report is at {out}")
    return 0


def _cmd_stats(args):
    """`stats`: prints the statistics of a snapshot; 0."""
    tracker = _load(args.snapshot)
    if args.json:
        import json

        print(json.dumps(tracker.stats(), indent=2, sort_keys=True))
        return 0
    status = tracker.extra.get("exit_status")
    head = f"{args.snapshot}: `{_short(tracker.command or str(tracker.pid))}`"
    if status is not None:
        head += " " + _describe_status(status)
    print("\n".join([head] + _summary_lines(tracker, server=False)))
    return 0


def _cmd_recommend(args):
    """`recommend`: prints resources and a server for the runs; 0 with a server, 1 without
    one (no catalog, nothing fits: the reason is printed), 2 for a bad option value."""
    trackers = [_load(path) for path in args.snapshots]
    current = trackers[0]
    history = [t.stats() for t in trackers[1:]]
    try:
        resources = current.recommend_resources(historical_stats=history)
    except ValueError as exc:
        raise CliError(f"recommend: {exc}") from None
    filters = dict(
        vendor=_one_or_list(args.vendor),
        regions=args.region,
        country=_one_or_list(args.country),
        allocation=args.allocation,
        architecture=args.architecture,
        compliance_framework=args.compliance_framework,
        green_energy=True if args.green_energy else None,
        min_score=args.min_score,
        max_price=args.max_price,
        catalog=args.catalog,
    )
    if args.order_by != "price":
        filters["order_by"] = args.order_by
    found, why = _find_servers(resources, n=args.n, strict=True, **filters)
    status = 0 if found is not None else 1
    if args.json:
        import json

        print(
            json.dumps(
                {"runs": len(trackers), "resources": resources, "server": found, "note": why},
                indent=2,
                default=str,
            )
        )
        return status
    print(f"runs        {len(trackers)}")
    print(f"resources   {_describe_resources(resources)}")
    if found is None:
        print(f"server      {why}")
    elif isinstance(found, list):
        for i, server in enumerate(found, 1):
            print(f"server {i:<4} {_describe_server(server)}")
    else:
        print(f"server      {_describe_server(found)}")
    first = found[0] if isinstance(found, list) and found else found
    if isinstance(first, dict) and first.get("price_source"):
        print(f"prices      {first['price_source']}")
    return status


def _one_or_list(values):
    """None, the single value, or the list of a repeatable option."""
    if not values:
        return None
    return values[0] if len(values) == 1 else values


# -- watch --------------------------------------------------------------------------------


def _cmd_watch(args):
    """`watch`: a live view until Ctrl-C, the process's exit or --count samples; 0."""
    import shutil
    import time

    from .tracker import ResourceTracker

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        tracker = ResourceTracker(
            pid=args.pid,
            interval=args.interval,
            track_processes=args.pid is not None,
            discover_server=True,
            discover_cloud=False,
        )
    except ValueError as exc:
        raise CliError(f"watch: {exc}") from None
    tty = sys.stdout.isatty()
    vcpus = (tracker.server_info or {}).get("vcpus")
    shown = 0
    ended = ""
    try:
        while True:
            tracker.wait_for_samples(shown + 1, timeout=args.interval * 3 + 5)
            n = tracker.n_samples
            if n > shown:
                shown = n
                line = _watch_line(tracker, args.pid, vcpus)
                if tty:  # one line, rewritten in place (cut to the width: no wrapping)
                    width = shutil.get_terminal_size().columns - 1
                    sys.stdout.write("\r\x1b[K" + line[: max(width, 20)])
                else:
                    sys.stdout.write(line + "\n")
                sys.stdout.flush()
            if args.count and shown >= args.count:
                break
            if args.pid is not None and not _alive(args.pid):
                ended = f"process {args.pid} exited"
                break
            if not tracker.running:
                ended = "tracking stopped"
                break
            time.sleep(0.01)
    except KeyboardInterrupt:
        pass
    finally:
        tracker.stop()
        if tty:
            try:
                sys.stdout.write("\n")
                sys.stdout.flush()
            except OSError:
                pass
    if ended:
        _say(f"{PROG}: {ended}")
    return 0


def _alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):  # procfs is there: no such process
            return False
    except OSError:
        pass
    try:  # no procfs (macOS): a signal 0 says whether it exists
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _last(df, name):
    col = df.column_array(name) if len(df) else None
    return col[-1] if col else 0.0


def _watch_line(tracker, pid, vcpus):
    """One line on the latest sample."""
    import time

    system = tracker.system_metrics
    stamp = _last(system, "timestamp") or time.time()
    step = tracker.interval
    parts = [time.strftime("%H:%M:%S", time.localtime(stamp))]
    if pid is not None:
        proc = tracker.process_metrics
        text = (
            f"pid {pid}: cpu {_last(proc, 'cpu_usage'):5.2f} "
            f"mem {_size(_last(proc, 'memory') * 1024):>10} "
            f"children {_last(proc, 'children'):.0f} "
            f"io {_size(_last(proc, 'read_bytes') / step)}/s r "
            f"{_size(_last(proc, 'write_bytes') / step)}/s w"
        )
        if _last(proc, "gpu_utilized"):
            text += (
                f" gpu {_last(proc, 'gpu_usage'):.2f} vram {_size(_last(proc, 'gpu_vram') * 2**20)}"
            )
        parts.append(text)
    parts.append(
        f"system: cpu {_last(system, 'cpu_usage'):5.2f}"
        + (f"/{vcpus}" if vcpus else "")
        + f" mem {_size(_last(system, 'memory_used') * 1024):>10}"
        f" disk {_size(_last(system, 'disk_read_bytes') / step)}/s r "
        f"{_size(_last(system, 'disk_write_bytes') / step)}/s w"
        f" net {_size(_last(system, 'net_recv_bytes') / step)}/s in "
        f"{_size(_last(system, 'net_sent_bytes') / step)}/s out"
    )
    return " | ".join(parts)


# -- catalog ------------------------------------------------------------------------------


def _cmd_catalog(args):
    """`catalog update|info`: 0 on success; 1 when `info` reports an error (it still prints
    everything it knows); 2 when the action fails."""
    catalog = _import_catalog()
    if catalog is None:
        raise CliError(
            "catalog: the server catalog is not part of this installation "
            "(no resource_tracker.catalog module)"
        )
    name = "update_catalog" if args.action == "update" else "catalog_info"
    func = getattr(catalog, name, None)
    if func is None:
        raise CliError(f"catalog: this installation has no resource_tracker.catalog.{name}")
    try:
        result = func()
    except Exception as exc:
        raise CliError(
            f"catalog {args.action}: {str(exc).splitlines()[0] if str(exc) else exc}"
        ) from None
    if args.json:
        import json

        print(json.dumps(result, indent=2, default=str))
    elif isinstance(result, dict):
        width = max((len(str(k)) for k in result), default=0)
        for key, value in result.items():
            print(f"{key:<{width}}  {value}")
    elif result is not None:
        print(result)
    if isinstance(result, dict) and result.get("error"):
        _say(f"{PROG} catalog {args.action}: {str(result['error']).splitlines()[0]}")
        return 1
    return 0
