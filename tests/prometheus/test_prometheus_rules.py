"""docs/prometheus/*.yml and docs/grafana/*.json without a server: ``promtool check rules``,
``promtool test rules`` over series (tests/prometheus/rules_test.yml: the at-risk alert fires
on the at-risk steps only, the over-provisioned one on the over-provisioned ones), the
thresholds are resource-tracker's own, and every metric they name is one the export pushes."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess

import pytest
from prom_stack import ROOT
from server_binaries import need_binary

RULES = sorted(glob.glob(os.path.join(ROOT, "docs", "prometheus", "*.yml")))
DASHBOARDS = sorted(glob.glob(os.path.join(ROOT, "docs", "grafana", "*.json")))
HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1024 * 1024


def _promtool() -> str:
    return need_binary("promtool")


def test_rule_files_pass_promtool_check():
    assert RULES
    done = subprocess.run(
        [_promtool(), "check", "rules", *RULES], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(RULES)


def test_rules_fire_on_the_right_steps_only(tmp_path):
    """promtool's rule tests: at-risk steps (above the ask, >= 85% of the limit, OOM kill,
    throttled > 10%) and over-provisioned ones alert; 84% of the limit, 9% throttled, a
    gap under 256 MiB, a step with one run above half its ask and a step whose older run
    only was at risk do not."""
    with open(os.path.join(HERE, "rules_test.yml")) as f:
        text = f.read().replace("RULES", json.dumps(RULES[0]), 1)
    test = tmp_path / "rules_test.yml"
    test.write_text(text)
    done = subprocess.run(
        [_promtool(), "test", "rules", str(test)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_shipped_rule_has_a_promtool_case():
    """Each alert of docs/prometheus has an alert_rule_test in rules_test.yml, each
    recording rule a promql_expr_test reading it (promtool runs them above)."""
    with open(os.path.join(HERE, "rules_test.yml")) as f:
        tests = f.read()
    alerts = set(re.findall(r"^\s+alertname: (\S+)$", tests, re.M))
    exprs = " ".join(re.findall(r"^\s+- expr: (.+)$", tests, re.M))
    text = _rules_text()
    shipped = re.findall(r"^\s+- (alert|record): (\S+)$", text, re.M)
    assert len(shipped) == len(re.findall(r"^\s+expr:", text, re.M)) > 0
    for kind, name in shipped:
        if kind == "alert":
            assert name in alerts, name
        else:
            assert re.search(re.escape(name) + r"(?![\w:])", exprs), name


def _rules_text() -> str:
    return "".join(open(path).read() for path in RULES)


def test_rule_thresholds_are_resource_trackers():
    """The numbers in the rules are insights.py's and settings.py's defaults."""
    from resource_tracker import insights, settings
    from resource_tracker.dashboard import _prometheus
    from resource_tracker.export.pipeline import SEND_TIMEOUT_S

    text = _rules_text()
    over_mib = settings.SETTINGS["RESOURCE_TRACKER_OVER_MIN_MIB"].default
    over_cores = settings.SETTINGS["RESOURCE_TRACKER_OVER_MIN_CORES"].default
    wanted = [
        f"resource_tracker:run_memory_limit_ratio >= {insights.MEMORY_RISK_SHARE:g}",
        "resource_tracker:run_memory_ask_ratio > 1",
        f"resource_tracker_run_cpu_throttled_ratio > {insights.THROTTLE_RISK_SHARE:.2f}",
        f"(resource_tracker:run_memory_ask_ratio) <= {insights.OVER_SHARE:g}",
        f"(resource_tracker:run_memory_ask_gap_bytes) >= {int(over_mib * MIB)}",
        f"(resource_tracker:run_cpu_ask_ratio) <= {insights.OVER_SHARE:g}",
        f"(resource_tracker:run_cpu_ask_gap_cores) >= {over_cores:g}",
        # a killed run: as the dashboard's Prometheus source judges it
        f"> {_prometheus.MISSED_PUSHES} * resource_tracker_export_period_seconds "
        f"+ {SEND_TIMEOUT_S:g}",
        f"(resource_tracker_limit_memory_bytes or resource_tracker_asked_memory_bytes)\n"
        f"            >= {_prometheus.NEAR_LIMIT:g}",
    ]
    for expression in wanted:
        assert expression in text, expression


def _pushed_names():
    """Every metric name the Pushgateway export can push."""
    from resource_tracker.export.metrics import (
        EXPORT_PERIOD,
        INSIGHTS,
        LIVE_SIZING,
        RECOMMENDATION,
        SIZING,
        SUMMARY_FIELDS,
        exported,
        live_metric,
        summary_metric,
    )
    from resource_tracker.registry import stat_columns

    names = {m.prometheus_name for m in exported(["process", "system"])}
    names |= {summary_metric(c, s)[0] for c in stat_columns() for s, _ in SUMMARY_FIELDS}
    names |= {v[0] for v in RECOMMENDATION.values()} | {v[0] for v in SIZING.values()}
    names |= {INSIGHTS[0], "resource_tracker_export_dropped_rows"}
    names |= {f"resource_tracker_run_{n}" for n in ("duration_seconds", "failed")}
    names |= {live_metric(k) for k in LIVE_SIZING} | {EXPORT_PERIOD[0]}
    return names | {"resource_tracker_run_end_timestamp_seconds"}


@pytest.mark.parametrize("path", RULES + DASHBOARDS, ids=os.path.basename)
def test_every_metric_named_is_pushed(path):
    """A renamed metric cannot leave a rule or a panel reading nothing."""
    with open(path) as f:
        named = set(re.findall(r"\bresource_tracker_[a-z0-9_]+", f.read()))
    assert named and named <= _pushed_names(), named - _pushed_names()


def test_grafana_dashboard_is_importable():
    """The shape Grafana's import reads: a datasource input every panel uses, a uid, unique
    panel ids, and a PromQL expression in every target."""
    for path in DASHBOARDS:
        with open(path) as f:
            dashboard = json.load(f)
        assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 30
        assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
        ids = [p["id"] for p in dashboard["panels"]]
        assert len(ids) == len(set(ids))
        for panel in dashboard["panels"]:
            if panel["type"] == "row":
                continue
            assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
            assert panel["targets"] and all(t["expr"] for t in panel["targets"])
