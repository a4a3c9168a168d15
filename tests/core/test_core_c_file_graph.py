"""The C core's file graph (issue 40 point 4): no circle between the files of csrc/ (module.c
registers the binding files, none calls back into it); ``tools/check_c_deps.py`` says so as
`make lint` runs it and catches a planted circle, naming the functions that make it."""

from __future__ import annotations

import importlib.util
import os
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "check_c_deps.py")


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_c_deps", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _csrc(root, files):
    for name, text in files.items():
        (root / "csrc").mkdir(exist_ok=True)
        (root / "csrc" / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_the_c_files_have_no_circle(check, capsys):
    assert check.main([]) == 0, capsys.readouterr().err
    graph = check.file_graph(check.Path(ROOT))
    assert "module.c" not in {g for deps in graph.values() for g in deps}  # nobody calls it back
    assert "py_columns.c" in graph["module.c"]  # the graph is read (module.c registers it)


def test_a_call_back_into_the_caller_s_file_is_caught(check, tmp_path, capsys):
    root = _csrc(
        tmp_path,
        {
            "module.c": """\
                /* calls helper() of a comment: not a use */
                static int
                local(void)
                {
                    return 0;
                }

                int
                add_object(int x)
                {
                    return x + local();
                }

                int
                init(void)
                {
                    return add_parts(1);
                }
            """,
            "parts.c": """\
                int
                add_parts(int x)
                {
                    return add_object(x);
                }
            """,
            "leaf.c": """\
                int
                leaf(void)
                {
                    return 1; /* add_parts named in a comment */
                }
            """,
        },
    )
    assert check.main(["--root", str(root)]) == 1
    said = capsys.readouterr().err
    assert "module.c -> parts.c (add_parts)" in said, said
    assert "parts.c -> module.c (add_object)" in said, said
    assert "leaf.c" not in said and "local" not in said
    (root / "csrc" / "parts.c").write_text("int\nadd_parts(int x)\n{\n    return x;\n}\n")
    assert check.main(["--root", str(root)]) == 0
