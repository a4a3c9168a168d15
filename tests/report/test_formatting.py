"""The one way numbers are shown (resource_tracker.formatting), and that the renderers use it:
the report, the card (the report), the CLI summary lines and `watch`."""

from __future__ import annotations

import math

import pytest

from resource_tracker import formatting as fmt
from resource_tracker.registry import COLUMNS


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0 B"),
        (900, "900 B"),
        (1023, "1,023 B"),
        (1024, "1 KiB"),
        (1680, "1.64 KiB"),
        (512 * 2**20, "512 MiB"),
        (1536 * 2**20, "1.5 GiB"),
        (12.34 * 2**30, "12.3 GiB"),
        (123.4 * 2**30, "123 GiB"),
        (1023.7 * 2**20, "1,024 MiB"),
        (64 * 2**20, "64 MiB"),
        (67_108_864, "64 MiB"),  # the CLI's and the page's "written" of one run: one text
        (None, "n/a"),
        (math.nan, "n/a"),
    ],
)
def test_bytes_are_binary_with_three_digits(value, text):
    assert fmt.nbytes(value) == text


def test_rates_and_registry_units():
    assert fmt.rate(1.5 * 2**20) == "1.5 MiB/s"
    assert fmt.rate(None) == "n/a"
    assert fmt.quantity(2_000_000, "KiB") == "1.91 GiB"  # memory columns are KiB
    assert fmt.quantity(512, "MiB") == "512 MiB"  # VRAM
    assert fmt.quantity(500, "GB") == "466 GiB"  # disk space: bytes are binary everywhere
    assert fmt.quantity(1, "cores") == "1 core"
    assert fmt.quantity(2.0, "cores") == "2 cores"
    assert fmt.quantity(1.234, "cores") == "1.23 cores"
    assert fmt.quantity(0.85, "GPUs") == "0.85 GPUs"
    assert fmt.quantity(1, "GPUs") == "1 GPU"
    assert fmt.quantity(3, "processes") == "3 processes"
    assert fmt.quantity(1, "processes") == "1 process"
    assert fmt.quantity(3725, "s") == "1 h 02 min"
    assert fmt.quantity(7, "widgets") == "7 widgets"
    assert fmt.quantity(12_345, "J") == "12.3 kJ"  # energy: J, kJ, MJ, with kWh when it counts
    assert fmt.quantity(3.6e7, "J") == "36 MJ (10 kWh)"
    assert fmt.quantity(None, "J") == "n/a"
    assert fmt.quantity(245.5, "W") == "246 W"
    # every unit of the registry has a rule (no unit falls through to "number unit")
    for col in COLUMNS:
        assert col.unit in fmt.CHANGE_FLOORS or col.unit in ("", "s"), col


@pytest.mark.parametrize(
    "count, word, text",
    [
        (1, "vCPU", "1 vCPU"),
        (2, "vCPU", "2 vCPUs"),
        (5, "earlier run", "5 earlier runs"),
        (1, "earlier run", "1 earlier run"),
        (0, "sample", "0 samples"),
        (1500, "sample", "1,500 samples"),
    ],
)
def test_plural(count, word, text):
    assert fmt.plural(count, word) == text


def test_plural_irregular():
    assert fmt.plural(2, "process", "processes") == "2 processes"


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.25, "0.25 s"),
        (42.12, "42.1 s"),
        (185, "3 min 05 s"),
        (3725, "1 h 02 min"),
        (86_400, "24 h 00 min"),
        (None, "n/a"),
    ],
)
def test_duration(seconds, text):
    assert fmt.duration(seconds) == text


@pytest.mark.parametrize(
    "usd, per, text",
    [
        (0.0, "", "$0"),
        (0.00003, "", "< $0.01"),
        (0.004, "", "< $0.01"),
        (0.0051, "", "$0.01"),
        (0.42, "", "$0.42"),
        (1234.5, "", "$1,234.50"),
        (-0.00002, "", "> -$0.01"),
        (-0.5, "", "-$0.50"),
        (0.0052, "h", "$0.0052/h"),
        (0.192, "h", "$0.192/h"),
        (3.06, "h", "$3.06/h"),
        (None, "", "n/a"),
    ],
)
def test_money_never_prints_zeros(usd, per, text):
    assert fmt.money(usd, per) == text
    assert "0.0000" not in text


def test_changes_need_to_exceed_both_floors():
    # 1.64 kB written -> 0 B: below the absolute floor (1 MiB), no "-100%"
    assert fmt.change(0.0, 1680.0, "B") == fmt.Change("same", "no change")
    # a big relative change of a tiny amount of CPU: noise
    assert fmt.change(0.05, 0.01, "cores").direction == "same"
    # 5 % more memory: under the relative floor
    assert fmt.change(1.05e6, 1.0e6, "KiB").direction == "same"
    # 40 % less memory, 400 MiB: news
    assert fmt.change(600_000.0, 1_000_000.0, "KiB") == fmt.Change("down", "-40%")
    assert fmt.change(2.0, 1.0, "cores") == fmt.Change("up", "+100%")
    assert fmt.change(50 * 2**20, 0.0, "B") == fmt.Change("up", "new")
    assert fmt.change(None, 1.0, "cores") is None


def test_number():
    assert fmt.number(1234.6) == "1,235"
    assert fmt.number(0.123456) == "0.123"
    assert fmt.number(2.0) == "2"
    assert fmt.number("x") == "n/a"


def test_catalog_problem_is_one_line_with_the_fix_once():
    from resource_tracker.catalog import HOW_TO_GET

    text = f"catalog unavailable: no server catalog found. {HOW_TO_GET}"
    line = fmt.catalog_problem(text)
    assert line == (
        "No server prices: no server catalog found. "
        "Fix: run `resource-tracker catalog update` once while online."
    )
    assert "\n" not in line and line.count("catalog update") == 1


def test_cli_lines_use_the_same_numbers():
    """The CLI's summary lines and the report show a run's figures through one module."""
    from report_data import long_run_snapshot

    from resource_tracker import ResourceTracker
    from resource_tracker.cli.summary import describe_costs, describe_resources, lines_of

    tracker = ResourceTracker.from_snapshot(long_run_snapshot(rows=120))
    summary = tracker.summary(lookup_server=False)
    text = "\n".join(lines_of(summary, server=False))
    write = summary.row("process_write_bytes", "sum").value
    assert f"written {fmt.nbytes(write)}" in text  # the same text as the page's statistics
    assert "2 min 00 s, 120 samples every 1 s" in text
    assert "(machine: 8 vCPUs" in text
    assert describe_resources({"cpu": 1, "memory": 3072, "gpu": 1, "vram": 5120}) == (
        "1 CPU, 3 GiB memory, 1 GPU, 5 GiB VRAM"
    )
    costs = {"run_cost_usd": 0.00002, "recommended_run_cost_usd": 0.0, "saving_usd": 0.00002}
    assert describe_costs(costs) == (
        "this run < $0.01 on this server, $0 on the recommended server, saving < $0.01"
    )
    assert "0.0000" not in describe_costs(costs)


@pytest.mark.parametrize(
    "share, text",
    [(0.8877, "89%"), (0.004, "< 1%"), (0.0, "0%"), (1.0, "100%"), (12.5, "1,250%"),
     (None, "n/a"), (math.nan, "n/a")],
)  # fmt: skip
def test_percent(share, text):
    assert fmt.percent(share) == text


def test_tiny_durations_are_not_raw_floats():
    assert fmt.duration(0.0000101) == "< 1 ms"  # was "0.0000101 s"
    assert fmt.duration(0.0012) == "0.0012 s" and fmt.duration(0) == "0 s"


def test_user_command_of_a_metaflow_task():
    task = (
        "/usr/bin/python3 /home/me/flows/train_flow.py --quiet --metadata=local "
        "--datastore=local step train --run-id 17 --task-id 3 --input-paths 17/start/1"
    )
    assert fmt.user_command(task, "Metaflow") == "python train_flow.py, step train"
    assert fmt.user_command(task, None) == task  # only a Metaflow task is rewritten
    assert fmt.user_command("python x.py step", "Metaflow") == "python x.py step"
    assert fmt.user_command(None, "Metaflow") is None
