"""The import graph (issue 26 point 3): counting every import (module level, inside
functions, under ``if TYPE_CHECKING:``), the package has no cycle and no arrow back up a
layer; ``tools/check_imports.py`` says so, catches a planted cycle and a planted upward
arrow, and its layer table is the one docs/architecture.md shows. Issue 40: an import of the
package's own modules inside a function is one its LAZY table names (a heavy optional part,
with the time it saves), any other is caught with its file and line."""

from __future__ import annotations

import importlib.util
import os
import textwrap
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "check_imports.py")


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_imports", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _not_lazy(found):
    """The lines of ``found`` that are not about a function-level import."""
    return [line for line in found if "inside a function" not in line]


def _package(root, files):
    """A package ``resource_tracker`` under root with the given {relative path: source}."""
    for name, text in files.items():
        path = root / "resource_tracker" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_the_package_has_no_cycle_and_no_upward_import(check, capsys):
    """The tool as `make lint` runs it (its main(), in this process): exit status 0 and
    nothing said."""
    assert check.main([]) == 0
    assert capsys.readouterr().err == ""


def test_a_cycle_through_a_function_level_and_a_type_checking_import_is_caught(check, tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "settings.py": """\
                def get():
                    from .registry import COLUMNS
                    return COLUMNS
            """,
            "registry.py": """\
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from . import settings
                COLUMNS = ()
            """,
        },
    )
    found = _not_lazy(check.problems(root))
    assert found[0] == (
        "import cycle of 2 modules: resource_tracker.registry, resource_tracker.settings"
    )
    assert sorted(found[1:]) == [
        "  resource_tracker/registry.py:3: resource_tracker.registry -> resource_tracker.settings",
        "  resource_tracker/settings.py:2: resource_tracker.settings -> resource_tracker.registry",
    ]
    assert check.main(["--root", str(root)]) == 1


def test_an_upward_import_of_a_submodule_by_name_is_caught(check, tmp_path):
    """``from . import tracker`` (a submodule named in a from-import) inside a function of a
    foundation module: an arrow from the foundations up to the facade."""
    root = _package(
        tmp_path,
        {
            "__init__.py": "from .tracker import ResourceTracker\n",
            "tracker.py": "from . import settings\nclass ResourceTracker: pass\n",
            "settings.py": """\
                import os

                def default():
                    from . import tracker
                    return tracker.ResourceTracker
            """,
        },
    )
    found = _not_lazy(check.problems(root))
    assert found == [
        "resource_tracker/settings.py:4: resource_tracker.settings (foundations) imports "
        "resource_tracker.tracker (facade), a layer above it",
        "import cycle of 2 modules: resource_tracker.settings, resource_tracker.tracker",
        "  resource_tracker/settings.py:4: resource_tracker.settings -> resource_tracker.tracker",
        "  resource_tracker/tracker.py:1: resource_tracker.tracker -> resource_tracker.settings",
    ]


def test_a_downward_graph_passes_and_a_module_of_no_layer_is_named(check, tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "from .tracker import ResourceTracker\n",
            "tracker.py": "from .settings import get\nfrom ..outside import x\nimport json\n",
            "settings.py": "from . import _core\n",
            "_core.pyi": "HAVE_PROCFS: bool\n",
        },
    )
    assert check.problems(root) == []
    (root / "resource_tracker" / "newcomer.py").write_text("from . import settings\n")
    assert check.problems(root) == [
        f"{root / 'resource_tracker' / 'newcomer.py'}: resource_tracker.newcomer is in no "
        "layer of tools/check_imports.py"
    ]


def test_the_library_importing_its_metaflow_plug_in_is_caught(check, tmp_path):
    """Issue 40: the command line read Metaflow history through the extension's module; the
    library never imports ``metaflow_extensions`` (inside a function too), the plug-in
    imports the library."""
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "cli/__init__.py": "",
            "cli/recommend.py": """\
                def history():
                    from metaflow_extensions.rt.plugins import history
                    return history
            """,
        },
    )
    plugin = root / "metaflow_extensions" / "rt" / "plugins"
    plugin.mkdir(parents=True)
    for init in (root / "metaflow_extensions", plugin.parent, plugin):
        (init / "__init__.py").write_text("")
    (plugin / "history.py").write_text("from resource_tracker.cli import recommend\n")
    found = check.problems(root)
    assert (
        "resource_tracker/cli/recommend.py:2: resource_tracker.cli.recommend imports "
        "metaflow_extensions.rt.plugins.history: the library never imports its own Metaflow "
        "plug-in (the plug-in imports the library)"
    ) in found, found
    (root / "resource_tracker" / "cli" / "recommend.py").write_text("def history():\n    pass\n")
    assert not [line for line in check.problems(root) if "plug-in" in line]


def test_the_documented_layer_table_is_the_tools(check):
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    assert check.layer_table() in text, "regenerate it: python tools/check_imports.py --table"


def test_a_function_level_import_of_a_core_module_is_caught(check, tmp_path):
    """Issue 40: ``from .settings import get`` inside a function of the tracker (settings is
    a foundation every tracker loads: laziness saves nothing) is named by file and line; the
    same import at the module's top passes."""
    root = _package(
        tmp_path,
        {
            "__init__.py": "from .tracker import ResourceTracker\n",
            "tracker.py": """\
                class ResourceTracker:
                    def interval(self):
                        from .settings import get
                        return get()
            """,
            "settings.py": "def get():\n    return 1.0\n",
        },
    )
    assert check.problems(root) == [
        "resource_tracker/tracker.py:3: resource_tracker.tracker imports "
        "resource_tracker.settings inside a function: import it at the top of the module (or "
        "name it in LAZY of tools/check_imports.py with the time it saves)"
    ]
    assert check.main(["--root", str(root)]) == 1
    (root / "resource_tracker" / "tracker.py").write_text(
        "from .settings import get\n\nclass ResourceTracker:\n    pass\n"
    )
    assert check.problems(root) == []


def test_a_lazy_import_passes_only_where_its_rule_allows_it(check, tmp_path):
    """The tracker may load the run data on first use (a rule of LAZY: they stay out of
    ``import resource_tracker``); the insights, loaded after them, may not; an import both
    at a module's top and in one of its functions saves nothing and is caught."""
    root = _package(
        tmp_path,
        {
            "__init__.py": "from .tracker import ResourceTracker\n",
            "tracker.py": """\
                class ResourceTracker:
                    def stats(self):
                        from ._run_data import stats
                        return stats(self)
            """,
            "_run_data.py": "def stats(run):\n    return {}\n",
            "insights.py": """\
                from . import catalog

                def findings(run):
                    from ._run_data import stats
                    from . import catalog
                    return stats(run), catalog
            """,
            "catalog/__init__.py": "",
        },
    )
    assert check.problems(root) == [
        "resource_tracker/insights.py:4: resource_tracker.insights imports "
        "resource_tracker._run_data inside a function: import it at the top of the module (or "
        "name it in LAZY of tools/check_imports.py with the time it saves)",
        "resource_tracker/insights.py:5: resource_tracker.insights imports "
        "resource_tracker.catalog inside a function and at its top: keep the top one",
    ]


def test_every_lazy_rule_says_what_it_saves_and_why(check):
    """Each rule of LAZY: a measured saving, a reason, a baseline it was measured after; the
    import path it protects is the one tests/core/test_core_import.py holds."""
    spec = importlib.util.spec_from_file_location(
        "core_import", os.path.join(ROOT, "tests", "core", "test_core_import.py")
    )
    core_import = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(core_import)
    assert set(check.IMPORT_PATH) == core_import.IMPORTED_WITH_THE_PACKAGE
    for rule in check.LAZY:
        assert rule.saves_ms > 0 and rule.why and rule.baseline in check.BASELINES, rule


def test_a_rule_that_allows_no_import_is_named(check, monkeypatch):
    """A rule of LAZY that outlived its import (here one for the registry, which nothing
    imports inside a function) is named so that it is dropped; today's rules all allow one."""
    assert check.stale_rules(Path(ROOT)) == []
    extra = check.LazyImport("resource_tracker.registry", check.IMPORT_PATH, "import path", 1, "x")
    monkeypatch.setattr(check, "LAZY", check.LAZY + (extra,))
    assert check.stale_rules(Path(ROOT)) == [
        "tools/check_imports.py: LAZY's rule for resource_tracker.registry allows no import: "
        "drop it"
    ]
