"""The extension is found by Metaflow, costs nothing at import, and its history is bounded."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from mf_harness import FLOWS, chromium_check, hermetic_env, query, run_flow, task_of

from metaflow_extensions.resource_tracker.plugins.track_resources_history import (
    stats_from_artifact,
    summarize_history,
)


def _python(code, root, **env):
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=str(root),
        env=hermetic_env(root, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    return done.stdout


def test_metaflow_import_from_metaflow_without_resource_tracker(tmp_path):
    out = _python(
        """
        import sys
        from metaflow import FlowSpec, step, track_resources
        from metaflow.plugins import CARDS
        print("card", [c.type for c in CARDS].count("tracked_resources"))
        print("loaded", "resource_tracker" in sys.modules)
        print("name", track_resources.args[0].name)
        """,
        tmp_path,
    )
    assert "card 1" in out
    assert "loaded False" in out  # the tracker is imported only when a tracked step runs
    assert "name track_resources" in out


@pytest.mark.parametrize(
    "option, env, message",
    [
        ('interval="often"', {}, "interval=...) must be a number"),
        ('artifact_name="next"', {}, "artifact_name='next'): use a Python identifier"),
        ("tune=True", {"RESOURCE_TRACKER_TUNED_CPU": "half"},
         "@track_resources(tune=True): RESOURCE_TRACKER_TUNED_CPU='half'"),
    ],
)  # fmt: skip
def test_metaflow_bad_option_is_reported_at_validation(tmp_path, option, env, message):
    flow = tmp_path / "bad_flow.py"
    flow.write_text(
        textwrap.dedent(
            f"""
            from metaflow import FlowSpec, step, track_resources

            class BadFlow(FlowSpec):
                @track_resources({option})
                @step
                def start(self):
                    self.next(self.end)

                @step
                def end(self):
                    pass

            if __name__ == "__main__":
                BadFlow()
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(flow), "--no-pylint", "run"],
        cwd=str(tmp_path),
        env=hermetic_env(tmp_path, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-2000:]
    assert not env or "Traceback" not in done.stdout, done.stdout[-2000:]  # one line


def _stats(cpu, mem, dur, vram=0.0, gpus=0.0):
    return {
        "process_cpu_usage": {"mean": cpu, "max": cpu},
        "process_memory": {"mean": mem, "max": mem},
        "process_gpu_usage": {"mean": 0.0, "max": 0.0},
        "process_gpu_vram": {"mean": vram, "max": vram},
        "process_gpu_utilized": {"mean": gpus, "max": gpus},
        "timestamp": {"duration": dur, "samples": 3},
    }


def test_metaflow_history_formats():
    current = _stats(1.0, 2048.0, 3.0)
    assert stats_from_artifact({"stats": current}) is current
    legacy = stats_from_artifact(
        {
            "stats": {
                "cpu_usage": {"mean": 1.5, "max": 3},
                "memory_usage": {"max": 4096},
                "duration": 9,
            }
        }
    )
    assert legacy["process_cpu_usage"]["mean"] == 1.5
    assert legacy["process_memory"]["max"] == 4096.0
    assert legacy["timestamp"]["duration"] == 9.0
    for junk in (None, "text", {"stats": None}, {"stats": {"cpu": 1}}, {"other": 1}):
        assert stats_from_artifact(junk) is None


def test_metaflow_history_summary():
    summary = summarize_history(
        [_stats(1.0, 1000.0, 2.0), _stats(3.0, 5000.0, 4.0, vram=100.0, gpus=2.0)],
        ["a note"],
        ["2", "1"],
    )
    assert summary["available"] is True
    assert summary["runs_analyzed"] == 2
    assert summary["avg_cpu_mean"] == pytest.approx(2.0)
    assert summary["max_memory_max"] == 5000.0
    assert summary["max_vram_max"] == 100.0
    assert summary["max_gpu_count"] == 2.0
    assert summary["avg_duration"] == pytest.approx(3.0)
    assert summary["notes"] == ["a note"]
    empty = summarize_history([])
    assert empty["available"] is False and empty["runs_analyzed"] == 0


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    """A metadata service that takes 30 s to answer anything."""

    def do_GET(self):
        time.sleep(30)
        self.send_response(503)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


def test_metaflow_history_is_bounded_with_a_slow_metadata_service(tmp_path):
    """A real HTTP metadata service on loopback that hangs: the lookup gives up in time."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        out = _python(
            """
            import time
            from metaflow_extensions.resource_tracker.plugins.track_resources_history import (
                HistoryLookup,
            )
            t0 = time.monotonic()
            lookup = HistoryLookup("SomeFlow", "start", "resource_tracker_data", "1", timeout=1.5)
            stats, notes, runs = lookup.start().result()
            print("elapsed", round(time.monotonic() - t0, 2))
            print("stats", len(stats))
            print("notes", notes)
            """,
            tmp_path,
            METAFLOW_DEFAULT_METADATA="service",
            METAFLOW_SERVICE_URL=f"http://127.0.0.1:{server.server_address[1]}/",
        )
    finally:
        server.shutdown()
    elapsed = float(out.split("elapsed ")[1].split()[0])
    assert 1.4 <= elapsed < 30.0, out  # its own 1.5 s, not the service's 30 s answer
    assert "stats 0" in out
    assert "did not finish within 1.5 s" in out


def test_metaflow_history_of_an_unknown_flow_is_a_note(tmp_path):
    out = _python(
        """
        from metaflow_extensions.resource_tracker.plugins.track_resources_history import (
            HistoryLookup,
        )
        lookup = HistoryLookup("NoSuchFlow", "start", "x", "1", timeout=20)
        stats, notes, runs = lookup.start().result()
        print("stats", len(stats), "notes", notes)
        """,
        tmp_path,
    )
    assert "stats 0" in out
    assert "history lookup failed" in out and "NoSuchFlow" in out


def test_metaflow_with_option_on_the_command_line(tmp_path):
    """`run --with track_resources:...` tracks every step; options arrive as text."""
    done = run_flow(
        tmp_path,
        os.path.join(FLOWS, "mf_plain_flow.py"),
        "--with",
        "track_resources:interval=0.2,create_card=False,history=False",
    )
    assert done.returncode == 0, done.stdout[-4000:]
    (run,) = query(tmp_path, "PlainFlow")
    start = task_of(run, "start")
    data = start["artifacts"]["resource_tracker_data"]
    assert data["tracker"]["interval"] == 0.2
    assert len(data["process_metrics"]) >= 2
    assert data["historical_stats"]["runs_analyzed"] == 0
    assert start["cards"] == [] and task_of(run, "end")["cards"] == []


def test_metaflow_history_reads_old_artifacts_and_skips_junk(tmp_path):
    """Earlier runs with an old-format artifact count; one with junk is skipped with a note."""
    flow = os.path.join(FLOWS, "mf_plain_flow.py")
    for kind in ("legacy", "junk"):
        done = run_flow(tmp_path, flow, "--artifact", kind)
        assert done.returncode == 0, done.stdout[-4000:]
    done = run_flow(tmp_path, flow, "--with", "track_resources:interval=0.2,create_card=False")
    assert done.returncode == 0, done.stdout[-4000:]
    (run,) = query(tmp_path, "PlainFlow")
    history = task_of(run, "start")["artifacts"]["resource_tracker_data"]["historical_stats"]
    assert history["runs_analyzed"] == 1
    assert history["max_memory_max"] == 591621.0  # from the old-format artifact
    assert history["avg_duration"] == 9.89
    assert any("unknown format" in note for note in history["notes"]), history["notes"]


def test_metaflow_chromium_check_sees_script_errors(tmp_path):
    """The card checks would catch a broken page: a script error is reported."""
    html = "<html><body><p>x</p><script>notDefinedAnywhere();</script></body></html>"
    dom, errors, _ = chromium_check(html, tmp_path)
    assert "<p>x</p>" in dom
    assert any("notDefinedAnywhere" in line for line in errors)
