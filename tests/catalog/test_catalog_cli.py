"""`resource-tracker recommend SNAPSHOT --catalog DB ...` end to end: a real tracker's saved run,
the real CLI in a subprocess, the test catalog; the CLI's answer equals the Python API's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from resource_tracker import ResourceTracker, catalog
from resource_tracker import formatting as fmt

try:  # the Metaflow card renders the same report (when the extension's dependency is here)
    from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
        tracked_resources_card as card,
    )
    from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
        build_artifact,
    )
except ImportError:
    card = None


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    try:
        assert tracker.wait_for_samples(3, timeout=10)
    finally:
        tracker.stop()
    path = tmp_path_factory.mktemp("snap") / "resource-tracker.json"
    path.write_text(tracker.dumps())
    return str(path), tracker.recommend_resources()


def _cli(*args):
    cmd = [sys.executable, "-m", "resource_tracker", "recommend", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_cli_recommend_with_filters_equals_the_api(snapshot, catalog_db):
    path, resources = snapshot
    out = _cli(path, "--catalog", catalog_db, "--vendor", "aws", "--region", "us-east-1",
               "--allocation", "ondemand", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    want = catalog.recommend_server(
        resources, vendor="aws", regions=["us-east-1"], allocation="ondemand", catalog=catalog_db
    )
    assert data["resources"] == resources and data["note"] is None
    assert data["server"]["server_id"] == want["server_id"]
    assert data["server"]["price"] == pytest.approx(want["price"])
    assert data["server"]["vendor"]["vendor_id"] == "aws"


def test_cli_recommend_top_n_and_score_order(snapshot, catalog_db):
    path, resources = snapshot
    out = _cli(path, "--catalog", catalog_db, "-n", "3", "--order-by", "score_per_price",
               "--vendor", "aws", "--vendor", "gcp")  # fmt: skip
    assert out.returncode == 0, out.stderr
    want = catalog.recommend_server(
        resources, n=3, order_by="score_per_price", vendor=["aws", "gcp"], catalog=catalog_db
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("server ")]
    assert len(lines) == 3
    for line, server in zip(lines, want):
        assert f"{server['vendor_id']} {server['server_id']} " in line


def test_cli_recommend_bad_value_and_no_catalog_give_a_reason(snapshot, catalog_db):
    """A bad option value is a usage error (exit 2, one line); no server is exit 1, with the
    resources and the reason printed; a server found is exit 0."""
    path, _ = snapshot
    out = _cli(path, "--catalog", catalog_db, "--vendor", "amazon", "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        "resource-tracker recommend: unknown vendor 'amazon'; "
        "valid: alicloud, aws, azure, gcp, hcloud, ovh, upcloud"
    )
    out = _cli(path, "--json")  # the embedded catalog is off in these tests (conftest)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)  # no catalog at all, the Keeper at 127.0.0.1:9: unreachable
    assert data["server"] is None and "no local server catalog" in data["note"]
    assert data["resources"]["cpu"] >= 1
    out = _cli(path, "--catalog", catalog_db, "--vendor", "aws", "--max-price", "0.000001")
    assert out.returncode == 1 and "no server in the catalog fits" in out.stdout
    assert _cli(path, "--catalog", catalog_db, "--vendor", "aws").returncode == 0


def test_cli_catalog_info_with_an_error_exits_1(monkeypatch, tmp_path, catalog_db):
    """`catalog info` prints what it knows, and exits 1 when that includes an error."""
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", str(tmp_path / "missing.db"))
    cmd = [sys.executable, "-m", "resource_tracker", "catalog", "info"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "no catalog file at" in out.stdout and "cache_dir" in out.stdout
    assert out.stderr.startswith("resource-tracker catalog info: no catalog file at")
    monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", catalog_db)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "error" not in out.stdout, out.stdout


def test_cli_recommend_offline_answers_from_the_embedded_catalog(snapshot, monkeypatch):
    """No local catalog and the Keeper unreachable (127.0.0.1:9): the snapshot embedded in the
    package answers, and the answer names that source and the date of its prices."""
    path, resources = snapshot
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "on")
    out = _cli(path)
    assert out.returncode == 0, out.stderr
    want = catalog.recommend_server(resources)
    assert want["catalog_source"] == "embedded" and want["vendor_id"] == "aws"
    assert f"server      {want['vendor_id']} {want['server_id']} " in out.stdout
    assert "prices of 2024-02" in want["price_source"]
    assert f"prices      {want['price_source']}" in out.stdout


def test_cli_run_summary_names_the_cheapest_server_and_the_cost(catalog_db, tmp_path, monkeypatch):
    """`resource-tracker run` with a catalog: the summary's server line is the API's cheapest
    server of the run's architecture for the run's recommendation, with the run's cost on
    it; the other architecture's cheaper server follows with its saving (the fixture's
    cheapest server of all is an arm64 t4g: an x86_64 run is shown an x86_64 one first).
    The report of the run (the Metaflow card's page) shows the same two."""
    import platform

    env = dict(os.environ, RESOURCE_TRACKER_CATALOG=catalog_db)
    burn = "import time\nend = time.time() + 1.2\nwhile time.time() < end: pass"
    out = subprocess.run(
        [sys.executable, "-m", "resource_tracker", "run", "--interval", "0.2", "--output",
         str(tmp_path), "--format", "json", "--", sys.executable, "-c", burn],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    saved = ResourceTracker.loads((tmp_path / "resource-tracker.json").read_text())
    run_arch = fmt.architecture(platform.machine())
    resources = saved.recommend_resources()
    want = catalog.recommend_server(resources, catalog=catalog_db, architecture=run_arch)
    lines = {line.split()[0]: line for line in out.stderr.splitlines() if line.startswith("  ")}
    assert f"{want['vendor_id']} {want['server_id']} " in lines["server"]
    assert "not the" not in lines["server"]  # of the run's architecture
    other = fmt.OTHER_ARCHITECTURE[run_arch]
    alt = catalog.recommend_server(resources, catalog=catalog_db, architecture=other)
    if alt["price"] < want["price"]:  # x86_64 here: the arm64 t4g is cheaper (spot, as best)
        assert alt["price_allocation"] == want["price_allocation"] == "spot"
        saving = fmt.money(want["price"] - alt["price"], "h")
        text = (f"{other} instead: {alt['vendor_id']} {alt['server_id']} at "
                f"{fmt.money(alt['price'], 'h')} ({alt['price_allocation']}), "
                f"{fmt.percent(1 - alt['price'] / want['price'])} less ({saving})")  # fmt: skip
        assert text in lines["or"]
        monkeypatch.setenv("RESOURCE_TRACKER_CATALOG", catalog_db)
        page = str(saved.report())
        tile = page[page.index('id="rt-best-server"') :]
        tile = tile[: tile.index('id="rt-cost"')]
        assert f"<code>{want['server_id']}</code>" in tile
        assert f'<div class="rt-tile-sub" id="rt-alternative">{text}' in tile
        if card is not None:  # the Metaflow card of the same run: the same two servers
            data = build_artifact(saved, None, failed=False, label="Flow/1/step/2")
            page = card.render_artifact(data, label="Flow/1/step/2")
            tile = page[page.index('id="rt-best-server"') : page.index('id="rt-cost"')]
            assert f"<code>{want['server_id']}</code>" in tile
            assert f'<div class="rt-tile-sub" id="rt-alternative">{text}' in tile
    else:
        assert "or" not in lines
    # numbers as resource_tracker.formatting shows them: prices with 3 digits, money
    # never below a cent ("< $0.01")
    assert f"{fmt.money(want['price'], 'h')})" in lines["server"]
    duration = saved.stats()["timestamp"]["duration"]
    cost = want["price"] * duration / 3600
    assert f"{fmt.money(cost)} on the recommended server" in lines["cost"]


def test_cli_server_picks_show_their_caveats_and_same_keeps_the_architecture(snapshot, monkeypatch):
    """Offline (the embedded snapshot), an x86_64 run's cheapest pick is an arm64 burstable
    server priced in ap-south-1: the CLI says so next to the pick; `--architecture same`
    keeps the run's architecture (the API's architecture="same")."""
    import platform

    path, resources = snapshot
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "on")
    run_arch = fmt.architecture(platform.machine())
    best = catalog.recommend_server(resources)
    same = catalog.recommend_server(resources, architecture="same")
    assert fmt.architecture(same["cpu_architecture"]) == run_arch
    assert same == catalog.recommend_server(resources, architecture=run_arch)
    out = _cli(path)
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("server ")]
    caveats, mismatch = fmt.server_caveats(best, run_arch)
    assert f"{fmt.money(best['price'], 'h')}) {', '.join(caveats)}" in line
    assert f"region {best['price_region_id']}" in caveats and "no GPU" in caveats
    if run_arch == "x86_64":  # the case: t4g.nano, arm64 and burstable
        assert caveats[:2] == ["arm64", "burstable"]
        assert line.endswith(
            "; not the x86_64 this run used: its code and wheels must run on arm64"
        )
    kept = _cli(path, "--architecture", "same")
    assert kept.returncode == 0, kept.stderr
    (line,) = [x for x in kept.stdout.splitlines() if x.startswith("server ")]
    assert f"{same['vendor_id']} {same['server_id']} (" in line and "not the" not in line
    assert f") {run_arch}, " in line


def test_the_report_shows_the_picks_caveats(snapshot, monkeypatch):
    """The report (and so the Metaflow card, the same page) shows the caveats of the pick
    in the headline and under each shape in the list of fitting servers."""
    import platform

    path, _ = snapshot
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "on")
    with open(path) as f:
        saved = ResourceTracker.loads(f.read())
    page = str(saved.report())
    best = saved.summary().server.best
    caveats, mismatch = fmt.server_caveats(best, platform.machine(), region=False)
    headline = page[page.index('id="rt-best-server"') :]
    headline = headline[: headline.index("</div></div>") + 12]
    assert f'<div class="rt-caveats">{" · ".join(caveats)}' in headline
    if mismatch:
        assert '<span class="rt-caveat-warn">Not the ' in headline
    servers = page[page.index('id="rt-servers"') :]
    assert "<th>Shape and caveats</th>" in servers
    assert f'<div class="rt-caveats">{" · ".join(caveats)}' in servers
