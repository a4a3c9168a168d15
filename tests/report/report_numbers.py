"""A 6 h Metaflow-like run for the number-style tests (issue 27): idle, CPU and memory
phases, a GPU (the columns the NVML stand-in fills), a container limit, an @resources ask,
four earlier runs (so the history finds a change) and the kernel's cgroup figures. Built as a
real snapshot (ResourceTracker.from_snapshot) and summarised by the real summary."""

from __future__ import annotations

import copy
import functools
import json
import re

from report_data import long_run_snapshot

from resource_tracker import ResourceTracker

SIX_HOURS = 6 * 3600
#: one sample's CPU above the machine's vCPUs (SERVER_INFO: 8)
JITTER_CORES = 8.3
#: the earlier runs' memory peaks and durations
EARLIER_PEAK_GIB = (7.0, 8.0, 8.5, 9.5)
EARLIER_DURATIONS_S = (14000.0, 15000.0, 15500.0, 18000.0)
LABEL = "TrainFlow/17/train/3"
#: the internal command line Metaflow runs a task with (not what the user typed)
TASK_COMMAND = (
    "/usr/bin/python3 train_flow.py --quiet --metadata=local --environment=local "
    "--datastore=local --event-logger=nullSidecarLogger --monitor=nullSidecarMonitor "
    "--datastore-root=/tmp/.metaflow step train --run-id 17 --task-id 3 --input-paths "
    "17/start/1 --retry-count 0 --max-user-code-retries 0 --namespace user:me"
)


def _phases(snap, rows):
    """Idle for the first third, CPU-bound in the second, memory-bound in the last."""
    proc = snap["process_metrics"]
    third = rows // 3
    for i in range(rows):
        wobble = (i % 7) / 100.0
        if i < third:
            cpu, mem = 0.05 + wobble, 1_200_000.0
        elif i < 2 * third:
            cpu, mem = 3.4 + wobble, 2_400_000.0
        else:
            cpu, mem = 0.9 + wobble, 14_675_000.0 + 1000.0 * (i % 13)
        proc["cpu_usage"][i] = cpu
        proc["memory"][i] = mem
    # sampling jitter: one interval reads more cores than the machine's 8 vCPUs
    proc["cpu_usage"][third + 100] = JITTER_CORES


@functools.lru_cache(maxsize=1)
def _samples():
    snap = long_run_snapshot(rows=SIX_HOURS, command=TASK_COMMAND)
    _phases(snap, SIX_HOURS)
    return snap


def six_hour_snapshot(failed=False):
    """The snapshot of the 6 h run (a failed Metaflow step with ``failed``); the samples are
    made once per process."""
    snap = copy.deepcopy(_samples())
    snap["label"] = LABEL
    snap["extra"] = {
        "integration": "Metaflow",
        "step_failed": bool(failed),
        "resources_asked": {"cpu": 8.0, "memory": 32000.0, "source": "@resources"},
    }
    if failed:
        snap["status"] = "failed"
        snap["extra"]["step_error"] = {
            "type": "ValueError",
            "message": "bad <input> row 42\x1b[31m: expected 3 columns",
        }
    snap["cgroup_metrics"] = {
        "version": 2,
        "path": "/kubepods/pod-17",
        "dedicated": True,
        "memory_mib": 14200.0,
        "memory_peak_mib": 14540.0,
        "memory_limit_mib": 16384.0,
        "cpu_limit_cores": 4.0,
        "cpu_seconds": 21000.0,
        "cpu_periods": 216000,
        "cpu_throttled_periods": 1200,
        "cpu_throttled_seconds": 30.5,
        "oom_kills": 0,
    }
    return snap


def earlier_runs(tracker):
    """Four earlier runs: this run's stats with less memory and shorter durations, spread
    so that their median, their mean and their highest differ."""
    base = json.loads(json.dumps(tracker.stats()))
    runs = []
    for gib, seconds in zip(EARLIER_PEAK_GIB, EARLIER_DURATIONS_S):
        run = json.loads(json.dumps(base))
        run["process_memory"]["max"] = gib * 1024.0 * 1024.0  # KiB
        run["process_memory"]["mean"] *= 0.6
        run["timestamp"]["duration"] = seconds
        runs.append(run)
    return runs


def six_hour_tracker(failed=False):
    """The stopped tracker of the 6 h run with its earlier runs in ``extra`` (as Metaflow
    keeps them)."""
    tracker = ResourceTracker.from_snapshot(six_hour_snapshot(failed))
    tracker.extra["historical_stats"] = earlier_runs(tracker)
    tracker.extra["schedule"] = {"runs_per_month": 30.0}
    return tracker


# -- reading the rendered figures back (Chromium) ---------------------------------------

#: Collects, in the rendered page, every place a quantity is shown: {quantity: [[where,
#: text], ...]} (the texts as they read; parsed in Python by :func:`figures`).
PROBE_JS = r"""(function () {
  function txt(e) { return e ? e.textContent.replace(/\s+/g, " ").trim() : null; }
  function q(s) { return document.querySelector(s); }
  var out = {};
  function add(name, where, text) {
    if (text) { (out[name] = out[name] || []).push([where, text]); }
  }
  add("duration", "tile", txt(q("#rt-tile-duration .rt-tile-value")));
  add("peak_memory", "tile", txt(q("#rt-tile-memory .rt-tile-value")));
  add("peak_cpu", "tile", txt(q("#rt-tile-cpu .rt-tile-value")));
  add("mean_cpu", "tile", txt(q("#rt-tile-cpu .rt-tile-sub")));
  var rows = {"Duration": "duration", "Process memory usage, peak": "peak_memory",
              "Process CPU usage, peak": "peak_cpu", "Process CPU usage, mean": "mean_cpu"};
  document.querySelectorAll("table.rt-stats tbody tr").forEach(function (tr) {
    var name = rows[txt(tr.querySelector("th"))];
    if (name) { add(name, "statistics table", txt(tr.querySelector("td"))); }
  });
  document.querySelectorAll("#rt-run tr").forEach(function (tr) {
    if (txt(tr.querySelector("th")) === "Duration") {
      add("duration", "run table", txt(tr.querySelector("td")));
    }
  });
  document.querySelectorAll("li.rt-insight").forEach(function (li) {
    add("finding", li.getAttribute("data-kind"), txt(li));
  });
  add("failure", "failure note", txt(q(".rt-failed")));
  document.querySelectorAll(".rt-chart").forEach(function (chart) {
    chart.querySelectorAll(".rt-val").forEach(function (v) {
      add("legend", chart.id, txt(v));
    });
    chart.querySelectorAll("svg text.rt-ytick").forEach(function (t) {
      add("axis", chart.id, txt(t) + " " + txt(chart.querySelector(".rt-unit")));
    });
  });
  [["memory", "peak_memory"], ["cpu", "peak_cpu"]].forEach(function (c) {
    document.querySelectorAll("#rt-chart-" + c[0] + " .rt-key").forEach(function (key) {
      if (/^Process/.test(txt(key))) {
        add(c[1], "chart legend", txt(key.querySelector(".rt-val")));
      }
    });
  });
  return out;
})()"""

_FINDING = re.compile(r"^(?:\w+ )?(Peak memory|Duration|Mean CPU) \S+ against .*? \((.+?); ")
_FINDING_NAMES = {"Peak memory": "peak_memory", "Duration": "duration", "Mean CPU": "mean_cpu"}


def figures(probed):
    """{quantity: {where: text}} from PROBE_JS's answer: tiles, tables, legends, and the
    figures inside the findings' and the failure note's sentences."""
    out = {}
    for name, places in probed.items():
        for where, text in places:
            if name == "finding":
                found = _FINDING.match(text)
                if found:
                    key = _FINDING_NAMES[found.group(1)]
                    out.setdefault(key, {})[f"finding ({where})"] = found.group(2)
                continue
            if name in ("legend", "axis"):
                out.setdefault(name, []).append((where, text))
                continue
            if name == "failure":
                found = re.search(r"failed after (.+?)(?: with | \()", text)
                if found:
                    out.setdefault("duration", {})[where] = found.group(1)
                continue
            if name == "mean_cpu" and where == "tile":
                text = re.match(r"mean (.+?)(?: ·|$)", text).group(1)
            if where.startswith("chart legend"):
                _legend(out, name, text)
                continue
            out.setdefault(name, {})[where] = text
    return out


def _legend(out, name, text):
    """A legend's figures: one value (the peak in view), or "min .. · mean .. · max .." (the
    run's mean and max while the whole run is in view)."""
    parts = dict(re.findall(r"(min|mean|max) ([^·]+?)(?: ·|$)", text))
    out.setdefault(name, {})["chart legend (peak)"] = parts.get("max", text)
    if name == "peak_cpu" and "mean" in parts:
        out.setdefault("mean_cpu", {})["chart legend (mean)"] = parts["mean"]


#: a decimal number (not money: amounts keep two decimals, "$18.05"; not a version "0.1.0")
_RAW_FLOAT = re.compile(r"(?<![\w.,$])(\d+)\.(\d+)(?![\w]|\.\d)")
_CENT_DIGITS = re.compile(r"\$0\.\d{3,}(?!\d*/h)")
_BAD_WORDS = re.compile(
    r"(?<![\d.])1 (cores|GPUs|processes|runs|samples|CPUs|vCPUs)\b|\w\((s|es)\)|e[-+]0\d"
)


def text_problems(text):
    """What the visible text of a page breaks of the number style: raw floats with more
    than 3 significant digits, amounts below a cent with more than two decimals ('$0.0001';
    hourly prices keep 3 digits), '1 cores', '1 GPUs', 'run(s)', exponents."""
    problems = []
    for found in _RAW_FLOAT.finditer(text):
        digits = (found.group(1) + found.group(2)).lstrip("0")
        if len(digits) > 3:
            problems.append(("more than 3 significant digits", _around(text, found)))
    for regex, what in ((_CENT_DIGITS, "amount below a cent"), (_BAD_WORDS, "words")):
        problems += [(what, _around(text, found)) for found in regex.finditer(text)]
    return problems


def _around(text, found):
    return text[max(found.start() - 40, 0) : found.end() + 40]
