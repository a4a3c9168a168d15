"""One settings module (resource_tracker/settings.py) for every RESOURCE_TRACKER_* variable:
each parsed one way, read at call time, the README's table made from it, and no environment
read anywhere else in the package (checked on the package's source)."""

from __future__ import annotations

import os
import re
import sys

import pytest

from resource_tracker import ResourceTracker, cloud, settings
from resource_tracker.catalog import _embedded, _keeper, eur_usd_rate, keeper_url
from resource_tracker.settings import SETTINGS, SettingError, SettingWarning, parse_flag

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("resource_tracker", "metaflow_extensions")
# report/ belongs to another engineer this session: its one read (BROWSER, not ours) is left
# for them to route through settings.foreign(); nothing else may read the environment.
EXEMPT = {os.path.join("resource_tracker", "report", "_browse.py"): ['os.environ.get("BROWSER"']}
ENV_READ = re.compile(r"os\.environ|getenv|environ\.get|from os import environ|os\.environb")


@pytest.mark.parametrize(
    "text, value",
    [(w, True) for w in ("1", "true", "yes", "on", " TRUE ", "On", "YES")]
    + [(w, False) for w in ("0", "false", "no", "off", "OFF ", "False", "No")],
)
def test_flag_words(text, value):
    assert parse_flag(text) is value


@pytest.mark.parametrize("text", ["maybe", "2", "none", "enabled", "of"])
def test_flag_refuses_anything_else_naming_what_it_accepts(text):
    with pytest.raises(SettingError, match="1/true/yes/on.*0/false/no/off"):
        parse_flag(text)


@pytest.mark.parametrize("text", ["off", "0", "false", "no", "OFF", "No"])
def test_discover_cloud_is_parsed_the_same_by_the_tracker_and_by_cloud(monkeypatch, text):
    """The issue's example: cloud.py accepted `off`, tracker.py did not. One parser now."""
    monkeypatch.setenv("RESOURCE_TRACKER_DISCOVER_CLOUD", text)
    assert cloud.discovery_enabled() is False
    assert cloud.discover_cloud() is None
    tracker = ResourceTracker(autostart=False, discover_cloud=True)
    assert tracker.discover_cloud is False


@pytest.mark.parametrize("text", ["on", "1", "yes", "", "  "])
def test_discover_cloud_on_or_unset(monkeypatch, text):
    monkeypatch.setenv("RESOURCE_TRACKER_DISCOVER_CLOUD", text)
    assert cloud.discovery_enabled() is True
    assert ResourceTracker(autostart=False, discover_cloud=False).discover_cloud is False
    assert ResourceTracker(autostart=False, discover_cloud=True).discover_cloud is True


@pytest.mark.parametrize("text", ["maybe", "2", "none"])
def test_an_invalid_flag_is_a_warning_and_the_default(monkeypatch, text):
    """A typo in an on/off switch must not cost the job its tracking: the default (on),
    with one warning naming the variable and the words it accepts."""
    monkeypatch.setenv("RESOURCE_TRACKER_DISCOVER_CLOUD", text)
    monkeypatch.setattr(settings, "_warned", set())
    pattern = rf"RESOURCE_TRACKER_DISCOVER_CLOUD='{text}'.*0/false/no/off.*default \(on\)"
    with pytest.warns(SettingWarning, match=pattern):
        assert cloud.discovery_enabled() is True
    tracker = ResourceTracker(autostart=False, discover_cloud=True)  # once per value
    assert tracker.discover_cloud is True
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", text)
    with pytest.warns(SettingWarning, match="EMBEDDED_CATALOG"):
        assert _embedded.enabled() is True


def test_a_tracked_command_with_an_invalid_flag_is_still_tracked(monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_DISCOVER_CLOUD", "maybe")
    monkeypatch.setattr(settings, "_warned", set())
    with pytest.warns(SettingWarning):
        run = ResourceTracker.run([sys.executable, "-c", "pass"], interval=0.1)
    assert run.status == 0 and run.tracker is not None and run.not_tracked is None


def test_settings_are_read_at_call_time(monkeypatch):
    monkeypatch.delenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", raising=False)
    assert _embedded.enabled() is True
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "off")
    assert _embedded.enabled() is False
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "yes")
    assert _embedded.enabled() is True


def test_method_is_a_choice(monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_METHOD", " PSUTIL ")
    assert settings.get("RESOURCE_TRACKER_METHOD") == "psutil"
    assert ResourceTracker(autostart=False).method == "psutil"
    monkeypatch.setenv("RESOURCE_TRACKER_METHOD", "bogus")
    with pytest.raises(ValueError, match="RESOURCE_TRACKER_METHOD='bogus'.*procfs, psutil"):
        ResourceTracker(autostart=False)


def test_numbers_are_finite_and_within_bounds(monkeypatch):
    name = "RESOURCE_TRACKER_KEEPER_TIMEOUT"
    monkeypatch.delenv(name, raising=False)
    assert _keeper._timeout() == 10.0
    monkeypatch.setenv(name, "2.5")
    assert _keeper._timeout() == 2.5
    for bad in ("0.05", "601", "abc", "inf", "nan"):
        monkeypatch.setenv(name, bad)
        with pytest.raises(SettingError, match=r"KEEPER_TIMEOUT=.*from 0.1 to 600"):
            _keeper._timeout()


def test_eur_usd_rate_from_the_environment(monkeypatch):
    name = "RESOURCE_TRACKER_EUR_USD"
    monkeypatch.setenv(name, "1.5")
    assert eur_usd_rate() == 1.5
    assert eur_usd_rate(2.0) == 2.0  # the argument wins
    for bad in ("0", "-1", "1001", "one"):
        monkeypatch.setenv(name, bad)
        with pytest.raises(ValueError, match=r"RESOURCE_TRACKER_EUR_USD=.*above 0 and at most"):
            eur_usd_rate()


def test_urls_and_the_off_switch(monkeypatch):
    monkeypatch.setenv("RESOURCE_TRACKER_METADATA_URL", " http://127.0.0.1:9/ ")
    assert settings.get("RESOURCE_TRACKER_METADATA_URL") == "http://127.0.0.1:9"
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "http://127.0.0.1:9/api/")
    assert keeper_url() == "http://127.0.0.1:9/api"
    for off in ("off", "0", "no", "False"):
        monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", off)
        assert keeper_url() is None
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "")
    assert keeper_url().startswith("https://")  # unset or empty: the default Keeper


def test_export_list_for_the_exporters(monkeypatch):
    name = "RESOURCE_TRACKER_EXPORT"
    monkeypatch.delenv(name, raising=False)
    assert settings.get(name) == ()
    monkeypatch.setenv(name, " otlp, PUSHGATEWAY ,otlp,")
    assert settings.get(name) == ("otlp", "pushgateway")
    monkeypatch.setenv(name, "otlp,kafka")
    with pytest.raises(SettingError, match="otlp, pushgateway"):
        settings.get(name)
    monkeypatch.setenv("RESOURCE_TRACKER_PUSHGATEWAY_URL", "http://127.0.0.1:9091/")
    assert settings.get("RESOURCE_TRACKER_PUSHGATEWAY_URL") == "http://127.0.0.1:9091"


def test_paths_expand_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", "~/rt-cache")
    assert settings.get("RESOURCE_TRACKER_CACHE_DIR") == str(tmp_path / "rt-cache")
    from resource_tracker.catalog import cache_dir

    assert cache_dir() == str(tmp_path / "rt-cache")


def test_undeclared_and_foreign_names():
    with pytest.raises(KeyError):
        settings.get("RESOURCE_TRACKER_NO_SUCH_THING")
    with pytest.raises(KeyError, match="declare it in SETTINGS"):
        settings.foreign("RESOURCE_TRACKER_METHOD")


def test_every_default_parses_and_every_kind_has_a_parser():
    for setting in SETTINGS.values():
        assert setting.name.startswith(settings.PREFIX)
        assert setting.parse(None) == setting.default
        assert setting.kind in settings._PARSERS


def test_the_readme_table_is_the_settings_module():
    """The README's table is settings.markdown_table(): regenerate it from there."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    start = readme.index("<!-- settings table: generated from resource_tracker/settings.py -->")
    end = readme.index("<!-- end of settings table -->")
    table = readme[start:end].split("\n", 1)[1]
    assert table == settings.markdown_table()


def _sources():
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT), open(path, encoding="utf-8").read()


def test_no_environment_read_outside_the_settings_module():
    found = []
    for rel, text in _sources():
        if rel == os.path.join("resource_tracker", "settings.py"):
            continue
        for line in text.splitlines():
            if ENV_READ.search(line) and not any(e in line for e in EXEMPT.get(rel, [])):
                found.append(f"{rel}: {line.strip()}")
    assert found == [], "read the environment through resource_tracker.settings:\n" + "\n".join(
        found
    )


def test_every_variable_named_in_the_package_is_declared():
    """A RESOURCE_TRACKER_* name in the package's code is a setting (or a build-time one)."""
    known = set(SETTINGS) | set(settings.BUILD_TIME)
    named = set()
    for rel, text in _sources():
        if rel != os.path.join("resource_tracker", "settings.py"):
            named |= set(re.findall(r"RESOURCE_TRACKER_[A-Z_]*[A-Z]", text))
    assert "RESOURCE_TRACKER_DISCOVER_CLOUD" in named  # the scan sees the package's code
    assert named - known == set()
