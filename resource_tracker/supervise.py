"""Running a command under tracking: start it, pass signals on, wait, give its exit status.

The process supervision behind ``resource-tracker run`` and ``ResourceTracker.run()``:

- the command is started with :class:`subprocess.Popen` (stdin, stdout and stderr untouched);
  a command that is not found is :class:`CommandStartError` with status 127, one that cannot
  be executed 126 (as shells and GNU time);
- SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are passed on to the command (a
  signal that came before the command existed is passed on once it does; a terminal's
  Ctrl-C, which reaches the whole foreground process group, is not passed on twice) — only
  when running in the main thread, where Python can handle signals;
- on Linux, optionally, this process becomes the *subreaper* of the command
  (``adopt_orphans``): processes that double-fork away from the command's tree (daemons)
  become its children, are tracked as part of the workload, waited for and reaped;
- the tracker is stopped after the command (and its adopted processes) exited and before the
  command is reaped, so its last reading sees all of the tree's CPU time.

:class:`Supervisor` is the building block (the CLI keeps the signals blocked while it writes
its outputs, see :meth:`Supervisor.release`); :func:`track_command` is the one-call form
that ``ResourceTracker.run()`` uses.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence

from . import _adopt, settings
from ._identity import _check_interval

#: Exit statuses when the command cannot be started, as shells and GNU time use them.
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126

#: The signals passed on to the command.
FORWARDED_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)
SI_KERNEL = 0x80  # siginfo si_code of a signal raised by the kernel (e.g. Ctrl-C at a terminal)

#: start_tracker(pid, adopt) -> a started tracker of pid; with adopt, it counts this
#: process's other children (the orphans it adopts as subreaper) as the workload's too.
StartTracker = Callable[[int, bool], Any]


class CommandStartError(Exception):
    """The command could not be started; ``status`` is 127 (not found) or 126 (not
    executable), the exit status a shell would give."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass
class CommandRun:
    """What running a command under tracking gave.

    ``status`` is shell-style: the command's exit code, or 128+N when signal N killed it.
    ``tracker`` is the stopped tracker of the command's process tree, or None when tracking
    could not start (``not_tracked`` says why; the command ran anyway).
    ``signals_forwarded`` names the signals passed on to the command, in order.
    """

    command: list[str]
    status: int = -1
    pid: Optional[int] = None
    tracker: Any = None
    not_tracked: Optional[str] = None
    signals_forwarded: list[str] = field(default_factory=list)


def exit_status(returncode: int) -> int:
    """A shell-style exit status: the code, or 128+N for a command killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def forward(pid: int, sig: int) -> None:
    """Sends sig to pid (ignoring a process that is already gone)."""
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def spawn(command: Sequence[str], **popen_options: Any) -> subprocess.Popen[bytes]:
    """Starts command; CommandStartError (127/126) when it cannot be started."""
    try:
        return subprocess.Popen(list(command), **popen_options)
    except FileNotFoundError:
        raise CommandStartError(f"command not found: {command[0]}", EXIT_NOT_FOUND) from None
    except PermissionError:
        raise CommandStartError(
            f"cannot execute {command[0]}: permission denied", EXIT_NOT_EXECUTABLE
        ) from None
    except OSError as exc:  # e.g. not a program (ENOEXEC): the shell's 126 as well
        raise CommandStartError(
            f"cannot execute {command[0]}: {exc.strerror or exc}", EXIT_NOT_EXECUTABLE
        ) from None


class Supervisor:
    """Runs one command under tracking (see the module's docstring).

    ``run()`` starts the command, tracks it with ``start_tracker(pid, adopt)``, passes
    signals on, waits for it (and for the processes it left behind, with adopt_orphans),
    stops the tracker and returns a :class:`CommandRun`. Signals stay blocked in this
    thread after ``run()`` until ``release()`` (so a late Ctrl-C does not interrupt what the
    caller does with the result); ``release()`` drops the signals that came after the
    command's exit and restores the signal mask. As a context manager:
    ``with Supervisor(...) as run: ...`` calls ``run()`` and, at the end, ``release()``.
    """

    def __init__(
        self,
        command: Sequence[str],
        start_tracker: StartTracker,
        interval: float = 1.0,
        adopt_orphans: bool = False,
        forward_signals: Optional[bool] = None,
        env: Optional[Mapping[str, str]] = None,
    ):
        if isinstance(command, (str, bytes)) or not command:
            raise ValueError(
                f"command must be a non-empty list of strings, e.g. ['python', 'job.py'], "
                f"not {command!r}"
            )
        self.command = [os.fspath(part) for part in command]
        self.start_tracker = start_tracker
        self.interval = interval
        self.adopt_orphans = adopt_orphans
        self.env = None if env is None else dict(env)  # the command's environment (None: ours)
        main_thread = threading.current_thread() is threading.main_thread()
        if forward_signals is None:  # Python handles signals in the main thread only
            forward_signals = main_thread
        elif forward_signals and not main_thread:
            raise ValueError(
                "forward_signals=True needs the main thread (Python handles signals there "
                "only): leave it out to run the command without passing signals on"
            )
        self.forward_signals = forward_signals
        self.waited = set(FORWARDED_SIGNALS) | {signal.SIGCHLD}
        self.blocking = forward_signals and hasattr(signal, "sigtimedwait")  # Linux
        self._old_mask: Optional[Iterable[int]] = None
        self._pid: Optional[int] = None
        self._pending: list[int] = []
        self._result = CommandRun(self.command)

    # -- the run --------------------------------------------------------------------------

    def run(self) -> CommandRun:
        """Runs the command to its end (see the class docstring); CommandStartError when it
        cannot be started."""
        previous = self._install_handlers()
        try:
            subreaper = self.adopt_orphans and _adopt.become_subreaper()
            proc = spawn(self.command, env=self.env)
            self._block_signals()
            self._pid = self._result.pid = proc.pid
            for sig in self._pending:
                self._send(sig)
            self._start_tracking(proc.pid, subreaper)
            self._wait(proc, subreaper)
            if self._result.tracker is not None:
                # before reaping: the last reading sees all (the exporters learn the outcome)
                self._result.tracker.stop(failed=_failed_unreaped(proc))
            self._result.status = exit_status(proc.wait())
            if subreaper:
                _adopt.reap_adopted(proc.pid)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self._record()
        return self._result

    def release(self) -> None:
        """Drops the signals that came after the command's exit (e.g. the Ctrl-C it died of)
        and restores this thread's signal mask. Safe to call more than once."""
        if self._old_mask is None:
            return
        while signal.sigtimedwait(self.waited, 0) is not None:
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
        self._old_mask = None

    def __enter__(self) -> CommandRun:
        try:
            return self.run()
        except BaseException:
            self.release()
            raise

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    # -- steps ----------------------------------------------------------------------------

    def _install_handlers(self) -> dict[int, Any]:
        """Before the child exists, signals are remembered and passed on once it does."""
        if not self.forward_signals:
            return {}
        return {sig: signal.signal(sig, self._on_signal) for sig in FORWARDED_SIGNALS}

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._pid is None:
            self._pending.append(signum)
        else:
            self._send(signum)

    def _send(self, sig: int) -> None:
        if self._pid is not None:
            forward(self._pid, sig)
        self._result.signals_forwarded.append(signal.Signals(sig).name)

    def _block_signals(self) -> None:
        # From here on the signals wait in the kernel until sigtimedwait takes them; threads
        # started later (the sampler) inherit the mask: only this thread sees them.
        if self.blocking:
            self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, self.waited)

    def _start_tracking(self, pid: int, adopt: bool) -> None:
        """Starts the tracker; on failure the command runs on untracked."""
        try:
            self._result.tracker = self.start_tracker(pid, adopt)
        except Exception as exc:
            self._result.not_tracked = f"{type(exc).__name__}: {exc}"

    def _wait(self, proc: subprocess.Popen[bytes], subreaper: bool) -> None:
        """Waits until the command (and, as subreaper, what it left behind) exited."""
        pid = proc.pid
        if self.blocking:
            reaper = _adopt.ZombieReaper(pid, self.interval) if subreaper else None
            self._result.signals_forwarded += wait_forwarding(pid, self.waited, reaper)
        else:
            wait_polling(proc)
        if subreaper:  # the processes the command left behind are part of the job
            waited = self.waited if self.blocking else None
            self._result.signals_forwarded += _adopt.wait_adopted(pid, waited, forward)

    def _record(self) -> None:
        """Notes the command, its argv, exit status and forwarded signals in the tracker."""
        tracker = self._result.tracker
        if tracker is None:
            return
        if not tracker.command:
            tracker.command = shlex.join(self.command)
        tracker.extra["exit_status"] = self._result.status
        tracker.extra["argv"] = list(self.command)
        if self._result.signals_forwarded:
            tracker.extra["signals_forwarded"] = list(self._result.signals_forwarded)


def _failed_unreaped(proc: subprocess.Popen[bytes]) -> Optional[bool]:
    """Whether the exited child failed (non-zero exit or a signal), read without reaping it
    when it is not reaped yet; None when that cannot be known."""
    if proc.returncode is not None:
        return proc.returncode != 0
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (AttributeError, OSError):
        return None
    if info is None:
        return None
    return not (info.si_code == os.CLD_EXITED and info.si_status == 0)


def wait_polling(proc: subprocess.Popen[bytes]) -> None:
    """Waits until proc exits (without reaping where waitid exists); signal handlers (if
    any) forward."""
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


def wait_forwarding(pid: int, waited: set[int], reaper: Any = None) -> list[str]:
    """Waits (without reaping) until pid exits, passing signals on; returns the names sent.
    A reaper (of adopted orphans) hears of every SIGCHLD and gets a turn each loop."""
    sent: list[str] = []
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
            forward(pid, info.si_signo)
            sent.append(signal.Signals(info.si_signo).name)


def start_tracker(tracker_class: Any, pid: int, adopt: bool = False, **tracker_options: Any) -> Any:
    """A started tracker of pid, made by ``tracker_class`` (ResourceTracker or a subclass;
    ``tracker_options`` as for it, not ``pid`` or ``autostart``). With adopt, this
    process's other children (the orphans it inherits as subreaper) are tracked too."""
    tracker = tracker_class(pid=pid, autostart=False, **tracker_options)
    if adopt:
        tracker._adopt_children_of(os.getpid())
    tracker.start()
    return tracker


def track_command(
    command: Sequence[str],
    tracker_class: Any,
    *,
    adopt_orphans: bool = False,
    forward_signals: Optional[bool] = None,
    **tracker_options: Any,
) -> CommandRun:
    """Runs command (a list: program and arguments) to its end under a ResourceTracker.

    ``tracker_class``: ResourceTracker or a subclass (passed in: this module is below it).
    Returns a :class:`CommandRun`: ``status`` (the command's exit status, 128+N when killed
    by signal N) and ``tracker`` (stopped; ``stats()``, ``report()``, ``dumps()`` ... work
    as for any tracker). ``tracker_options`` go to ResourceTracker (``interval``,
    ``method``, ``discover_cloud`` ...). CommandStartError (``status`` 127 or 126) when the
    command cannot be started. See ``ResourceTracker.run()``.
    """
    interval = _check_options(tracker_class, tracker_options)
    supervisor = Supervisor(
        command,
        lambda pid, adopt: start_tracker(tracker_class, pid, adopt, **tracker_options),
        interval=interval,
        adopt_orphans=adopt_orphans,
        forward_signals=forward_signals,
    )
    with supervisor as result:
        return result


def _known_options(tracker_class: Any) -> List[str]:
    """The keyword arguments ``tracker_class(...)`` takes: its ``__init__``'s, and those of
    the classes it passes ``**kwargs`` on to (a subclass of ResourceTracker), in order."""
    import inspect

    known: List[str] = []
    for klass in tracker_class.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(vars(klass)["__init__"]).parameters.values()
        named = (p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
        known += [name for name in named if name not in known]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return known


def _check_options(tracker_class: Any, tracker_options: dict[str, Any]) -> float:
    """The interval; TypeError/ValueError for options ResourceTracker would refuse, before
    the command starts (afterwards, a failure to track leaves the command untracked)."""
    for name in ("pid", "autostart"):
        if name in tracker_options:
            raise TypeError(f"running a command sets {name} itself: leave it out")
    known = _known_options(tracker_class)
    unknown = sorted(set(tracker_options) - set(known))
    if unknown:
        raise TypeError(
            f"unknown ResourceTracker option(s) {', '.join(unknown)}: "
            f"use {', '.join(n for n in known if n not in ('self', 'pid', 'autostart'))}"
        )
    if tracker_options.get("job") is not None:
        settings.parse_name(tracker_options["job"], "job")
    return _check_interval(tracker_options.get("interval", 1.0))
