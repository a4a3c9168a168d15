"""GPU right-sizing (issue 39, point 4) and the run's grams CO2e (point 3), with the stand-in
NVML library of test_gpu_nvml.py (compiled from nvml_stub.c, loaded through the tracker's real
dlopen path, read by its real sampler thread while it tracks a real subprocess).

The stub's right-sizing layout (``fit_gpus=4``): four 80 GiB GPUs where the tracked process is
the only one; GPU 0 is 60 % busy with ``fit_busy_mib`` held, GPUs 1 to 3 hold 512 MiB each and
never show any utilisation: a step that opened every GPU and computed on one.
"""

from __future__ import annotations

import os
import sys

import pytest
from gpu_cloud_mock import MetadataServer, make_sysfs
from test_gpu_nvml import INTERVAL, _tracked

from resource_tracker import ResourceTracker
from resource_tracker import formatting as fmt
from resource_tracker._energy import grid_intensity, with_emissions
from resource_tracker._gpu_fit import gpu_fit
from resource_tracker.cli.summary import summary_lines
from resource_tracker.insights import held_unused_gpus
from resource_tracker.tuning import run_record

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1024.0
IDLE_MIB = 512.0  # the stub's default fit_idle_mib


def _fitted(nvml_stub, control, workload, monkeypatch, busy_mib, n=6):
    """A stopped tracker of the workload on the stub's 4 x 80 GiB machine, GPU 0 busy with
    busy_mib held."""
    control.set(other_pid=0, fit_gpus=4, fit_busy_mib=int(busy_mib))
    return _tracked(nvml_stub, control, workload, monkeypatch, n)


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    """The Spare Cores catalog the catalog tests build from tests/data (real 2026-01 servers,
    real 2024-02 AWS on-demand prices), the only source of servers."""
    sys.path.insert(0, os.path.join(HERE, "..", "catalog"))
    try:
        from catalog_fixture import use_built
    finally:
        sys.path.pop(0)
    use_built(tmp_path, monkeypatch)


def test_an_80_gib_gpu_holding_10_gib_asks_one_gpu_of_12_gib(
    nvml_stub, control, workload, monkeypatch
):
    """Held 4 GPUs, kept 1 busy holding 10 GiB: the recommendation asks 1 GPU and 12 GiB
    (10 GiB + the recommender's 20 %, rounded up to a whole GiB), not 4 GPUs and the VRAM of
    all four split evenly (4 x 3.5 GiB, less than the busy GPU held)."""
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=10 * GIB)
    stats = tracker.stats()
    held_vram = 10 * GIB + 3 * IDLE_MIB
    assert stats["process_gpu_utilized"]["max"] == 4  # the columns keep what was held
    assert stats["process_gpu_vram"]["max"] == pytest.approx(held_vram)
    fit = stats["gpu_fit"]
    assert (fit["gpus_held"], fit["gpus_busy"], fit["gpus_unused"]) == (4, 1, 3)
    assert fit["busy"] == [0] and fit["idle"] == [1, 2, 3]
    assert fit["vram_per_gpu_mib"] == pytest.approx(10 * GIB)
    assert fit["gpu_memory_mib"] == pytest.approx(80 * GIB)
    rec = tracker.recommend_resources()
    assert rec["gpu"] == 1
    assert 11 * GIB <= rec["vram"] == 12 * GIB
    assert run_record(stats)["gpu_peak"] == 1  # a tuned step (tune=True) asks the same
    # the stored run recommends the same (the per-GPU series are in the snapshot)
    again = ResourceTracker.loads(tracker.dumps())
    assert again.stats()["gpu_fit"] == fit
    assert again.recommend_resources() == rec
    # an earlier run that held 2 GPUs without a fit (an older stats()) still counts: its peak
    older = {k: v for k, v in stats.items() if k != "gpu_fit"}
    older["process_gpu_utilized"] = dict(stats["process_gpu_utilized"], max=2.0)
    older["process_gpu_vram"] = dict(stats["process_gpu_vram"], max=2048.0)
    assert tracker.recommend_resources(historical_stats=[older])["gpu"] == 2


def test_the_fitting_server_has_one_24_gb_gpu_not_four_80_gib_ones(
    nvml_stub, control, workload, monkeypatch, catalog
):
    """18 GiB held on the busy GPU asks 22 GiB on one GPU: the cheapest fitting server of the
    catalog is AWS g5.xlarge, one NVIDIA A10G ("24 GB", 22,888 MiB usable), where the held
    figures (4 GPUs, 24 GiB over them) asked for a 4-GPU server. 10 GiB held: one 16 GiB GPU
    fits, and a 24 GB one is among the fitting servers."""
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=18 * GIB)
    rec = tracker.recommend_resources()
    assert (rec["gpu"], rec["vram"]) == (1, 22 * GIB)  # 18 GiB + 20 %, a whole GiB
    best = tracker.recommend_server(vendor="aws")
    assert (best["server_id"], best["gpu_count"]) == ("g5.xlarge", 1)
    assert 22 * GIB <= best["gpu_memory_min"] < 24 * GIB
    small = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=10 * GIB)
    fitting = small.recommend_server(n=20, vendor="aws")
    assert (fitting[0]["gpu_count"], fitting[0]["gpu_memory_min"]) == (1, 16 * GIB)
    assert "g5.xlarge" in [s["server_id"] for s in fitting]


def _card_page(tracker):
    """The Metaflow card of a step tracked by tracker (from its artifact), or None without
    Metaflow."""
    try:
        from metaflow_extensions.resource_tracker.plugins.cards.resource_tracker_card import (
            tracked_resources_card as card,
        )
        from metaflow_extensions.resource_tracker.plugins.track_resources_decorator import (
            build_artifact,
        )
    except ImportError:
        return None
    data = build_artifact(tracker, None, failed=False, label="Flow/1/train/2")
    return card.render_artifact(data, label="Flow/1/train/2")


def _insight(page_text):
    return [line for line in page_text.splitlines() if "never computed" in line]


def test_a_step_holding_gpus_it_never_used_is_told_in_report_card_and_cli(
    nvml_stub, control, workload, monkeypatch, tmp_path
):
    """The finding names the GPUs held and never busy, in the CLI summary, the report (read
    by a real headless Chromium, network off) and the Metaflow card of the step."""
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=10 * GIB)
    (line,) = [x for x in summary_lines(tracker, server=False) if "never computed" in x]
    assert line.split()[0] == "warning"
    assert "Held 4 GPUs, kept 1 GPU busy: GPUs 1, 2, 3 held memory" in line
    assert "asks for 1 GPU" in line
    sys.path.insert(0, os.path.join(HERE, "..", "report"))
    try:
        from report_browser import Browser, chromium_path
    finally:
        sys.path.pop(0)
    pages = {"report": str(tracker.report())}
    card = _card_page(tracker)
    if card is not None:
        pages["card"] = card
    if chromium_path() is None:
        pytest.skip("chromium is not installed (make test installs it)")
    for name, page in pages.items():
        path = tmp_path / f"{name}.html"
        path.write_text(page, encoding="utf-8")
        with Browser() as b:
            b.load("file://" + str(path), "document.getElementById('rt-insights') !== null")
            shown = b.eval("document.getElementById('rt-insights').innerText")
            errors = b.console_errors()
        assert len(_insight(shown)) == 1, (name, shown)
        assert "Held 4 GPUs, kept 1 GPU busy: GPUs 1, 2, 3" in shown, name
        assert errors == [], name


def test_an_ask_of_four_gpus_with_one_busy_is_over_provisioned(
    nvml_stub, control, workload, monkeypatch
):
    """A step that asked 4 GPUs (@resources) and kept 1 busy: the over-provisioned finding
    compares the ask with the GPUs busy, not with the 4 it held."""
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=10 * GIB)
    tracker.extra["resources_asked"] = {"cpu": 1, "gpu": 4, "source": "@resources"}
    over = [i for i in tracker.summary(lookup_server=False).insights if "asked 4 GPUs" in i.message]
    assert len(over) == 1 and over[0].kind == "over_provisioned"
    assert "asked 4 GPUs, peak 1 GPU (25%)" in over[0].message


def test_every_gpu_busy_or_none_read_busy_no_fit_no_finding():
    """The rule on plain series: every GPU held busy gives no finding (nothing unused); no
    GPU showing any utilisation (NVML cannot tell on some GPUs) gives no fit at all, and the
    held figures stand."""
    stats = {"process_gpu_utilized": {"max": 2.0}, "process_gpu_vram": {"max": 3000.0}}

    def dev(i, util, used):
        return {"index": i, "name": f"GPU {i}", "memory_total_mib": 16384.0,
                "utilization": [0.0, util], "memory_used_mib": [used, used]}  # fmt: skip

    both = gpu_fit(stats, [dev(0, 50.0, 2000.0), dev(1, 10.0, 1000.0)])
    assert (both["gpus_busy"], both["gpus_unused"], both["idle"]) == (2, 0, [])
    assert held_unused_gpus(both) == []
    assert both["vram_per_gpu_mib"] == 2000.0  # the fullest busy GPU
    assert gpu_fit(stats, [dev(0, 0.0, 2000.0), dev(1, 0.0, 1000.0)]) is None
    assert gpu_fit({"process_gpu_utilized": {"max": 0.0}}, [dev(0, 50.0, 1.0)]) is None
    # a GPU shared with another job: its memory is the machine's, bounded by the tree's peak
    shared = gpu_fit(stats, [dev(0, 50.0, 9000.0)])
    assert shared["vram_per_gpu_mib"] == 3000.0


# -- grams CO2e (point 3) -----------------------------------------------------------------


def test_no_intensity_no_co2e_figure(nvml_stub, control, workload, monkeypatch):
    """Without RESOURCE_TRACKER_GRID_INTENSITY: energy, and no CO2e number anywhere (the
    catalog carries no grid intensities; none is guessed)."""
    monkeypatch.delenv("RESOURCE_TRACKER_GRID_INTENSITY", raising=False)
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=GIB)
    energy = tracker.stats()["energy"]
    assert energy["joules"] > 0
    assert not any("co2e" in k or "grid" in k for k in energy)
    assert "CO2e" not in str(tracker.report())
    assert not any("CO2e" in line for line in summary_lines(tracker, server=False))


def test_grams_co2e_beside_the_energy_with_the_given_intensity(
    nvml_stub, control, workload, monkeypatch
):
    """350 gCO2e/kWh given: the machine's kWh times 350 grams, the process's estimate
    likewise, said to come from the setting and that the run's region is not known; the
    report's energy tile and the CLI line show them."""
    monkeypatch.setenv("RESOURCE_TRACKER_GRID_INTENSITY", "350")
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=GIB)
    energy = tracker.stats()["energy"]
    joules = sum(tracker.system_metrics["gpu_energy_j"])
    assert energy["co2e_g"] == pytest.approx(joules / 3.6e6 * 350.0)
    assert energy["process_co2e_g"] == pytest.approx(energy["process_kwh"] * 350.0)
    assert energy["grid_intensity"] == 350.0
    assert energy["grid_source"] == (
        "given in RESOURCE_TRACKER_GRID_INTENSITY (the run's region is not known)"
    )
    shown = fmt.co2e(energy["co2e_g"])
    page = str(tracker.report())
    tile = page[page.index('id="rt-energy"') :]
    tile = tile[: tile.index("</div></div>")]
    assert f"{fmt.energy(energy['joules'])}, {shown}" in tile
    assert "350 gCO2e/kWh, given in RESOURCE_TRACKER_GRID_INTENSITY" in tile
    (line,) = [x for x in summary_lines(tracker, server=False) if x.split()[0] == "energy"]
    assert shown in line and "350 gCO2e/kWh" in line
    card = _card_page(tracker)  # the step's card, from its artifact (as stored)
    if card is not None:
        assert f"{fmt.energy(energy['joules'])}, {shown}" in card


def test_the_runs_cloud_region_picks_and_is_said_beside_the_intensity():
    """One number: used for the run, its cloud region named beside it when known. One per
    region: the run's region's, and no figure (a reason, never a guess) for a region not
    given or not known. A kWh not measured gives no grams (None)."""
    aws = {"vendor": "aws", "region": "eu-west-1"}
    assert grid_intensity(400.0, aws) == (
        400.0,
        "given in RESOURCE_TRACKER_GRID_INTENSITY (the run's cloud region: aws eu-west-1)",
    )
    unknown = {"vendor": "unknown", "region": "unknown"}
    assert grid_intensity(400.0, unknown)[1].endswith("(the run's region is not known)")
    per_region = {"eu-west-1": 250.0, "us-east-1": 380.0}
    assert grid_intensity(per_region, aws) == (
        250.0,
        "given for eu-west-1 in RESOURCE_TRACKER_GRID_INTENSITY "
        "(the run's cloud region: aws eu-west-1)",
    )
    assert grid_intensity(per_region, {"vendor": "gcp", "region": "europe-west1"}) == (
        None,
        "no CO2e figure: RESOURCE_TRACKER_GRID_INTENSITY gives no intensity for the run's "
        "region (gcp europe-west1)",
    )
    assert grid_intensity(per_region, None)[0] is None
    out = with_emissions({"joules": 7.2e6, "kwh": 2.0, "process_kwh": None}, 400.0, "given")
    assert out["co2e_g"] == 800.0 and out["process_co2e_g"] is None


def test_an_intensity_per_region_on_a_cloud_machine_uses_its_region(
    nvml_stub, control, workload, monkeypatch, tmp_path
):
    """A run on an AWS machine in eu-central-1 (fake DMI evidence, the instance metadata
    served on loopback), intensities given per region: its region's is used and named."""
    root = make_sysfs(str(tmp_path / "sys"), "aws")
    monkeypatch.setenv("RESOURCE_TRACKER_SYSFS_ROOT", root)
    monkeypatch.setenv("RESOURCE_TRACKER_GRID_INTENSITY", "us-east-1=380,eu-central-1=300")
    control.set(tree_pid=workload.pid, other_pid=0, fit_gpus=4, fit_busy_mib=1024)
    monkeypatch.setenv("RESOURCE_TRACKER_NVML_LIBRARY", nvml_stub)
    with MetadataServer("aws") as server:
        monkeypatch.setenv("RESOURCE_TRACKER_METADATA_URL", server.url)
        tracker = ResourceTracker(pid=workload.pid, interval=INTERVAL, discover_server=False)
        try:
            assert tracker.wait_for_samples(6, 30.0)
        finally:
            tracker.stop()
        assert tracker.cloud_info["region"] == "eu-central-1"
    energy = tracker.stats()["energy"]
    assert energy["grid_intensity"] == 300.0
    assert energy["co2e_g"] == pytest.approx(energy["kwh"] * 300.0)
    assert energy["grid_source"] == (
        "given for eu-central-1 in RESOURCE_TRACKER_GRID_INTENSITY "
        "(the run's cloud region: aws eu-central-1)"
    )


def test_an_intensity_per_region_for_a_run_of_unknown_region_gives_no_figure(
    nvml_stub, control, workload, monkeypatch
):
    """Intensities per region, a run whose region is not known (no cloud here): no CO2e
    figure, and the data-quality line says why."""
    monkeypatch.setenv("RESOURCE_TRACKER_GRID_INTENSITY", "us-east-1=380, eu-north-1=30")
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=GIB)
    stats = tracker.stats()
    assert "co2e_g" not in stats["energy"] and stats["energy"]["joules"] > 0
    assert stats["data_quality"]["energy"].endswith(
        "no CO2e figure: RESOURCE_TRACKER_GRID_INTENSITY gives no intensity for the run "
        "(its region is not known)"
    )


def test_an_intensity_that_is_no_number_is_one_line_and_no_figure(
    nvml_stub, control, workload, monkeypatch
):
    """A grid intensity that does not parse: stats() works, no CO2e figure, and one
    data-quality line naming the variable, the value and what it takes."""
    monkeypatch.setenv("RESOURCE_TRACKER_GRID_INTENSITY", "lots")
    tracker = _fitted(nvml_stub, control, workload, monkeypatch, busy_mib=GIB)
    stats = tracker.stats()
    assert "co2e_g" not in stats["energy"] and stats["energy"]["joules"] > 0
    note = stats["data_quality"]["energy"]
    assert "no CO2e figure: RESOURCE_TRACKER_GRID_INTENSITY='lots' is not valid" in note
    assert "give a number from 0 to 5000" in note
    monkeypatch.setenv("RESOURCE_TRACKER_GRID_INTENSITY", "us-east-1")  # no number
    assert "co2e_g" not in tracker.stats()["energy"]
    monkeypatch.setenv("RESOURCE_TRACKER_GRID_INTENSITY", "us-east-1=lots")
    note = tracker.stats()["data_quality"]["energy"]
    assert "RESOURCE_TRACKER_GRID_INTENSITY='lots' is not valid" in note
