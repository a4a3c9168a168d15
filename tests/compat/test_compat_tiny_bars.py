"""``resource_tracker.tiny_bars.render_template``: the original package's documented examples,
and what its language promises (escaping, nesting, filters, errors naming the line)."""

from __future__ import annotations

import time

import pytest

from resource_tracker.report import round_memory
from resource_tracker.tiny_bars import render_template


@pytest.mark.parametrize(
    "template, context, expected",
    [
        ("Hello, {{name}}!", {"name": "World"}, "Hello, World!"),
        (
            "{{#each names as name}}Hello, {{name}}! {{/each}}",
            {"names": ["Foo", "Bar"]},
            "Hello, Foo! Hello, Bar! ",
        ),
        (
            "Odd numbers: {{#each numbers as number}}{{ #if number.odd}}{{number.value}} "
            "{{/if}}{{/each}}",
            {"numbers": [{"value": i, "odd": i % 2 == 1} for i in range(10)]},
            "Odd numbers: 1 3 5 7 9 ",
        ),
        ("{{#if present}}Yes{{/if}}", {"present": True}, "Yes"),
        ("{{#if present}}Yes{{/if}}", {"present": False}, ""),
        ("{{#if present}}Yes{{#else}}No{{/if}}", {"present": False}, "No"),
        ("{{value | pretty_number}}", {"value": 1234.5678}, "1,235"),
        ("{{value | pretty_number:2}}", {"value": 1234.5678}, "1,234.57"),
        ("{{value | divide:1000}}", {"value": 1234567}, "1234.567"),
    ],
)
def test_the_original_documented_examples(template, context, expected):
    assert render_template(template, context) == expected


class _Run:
    def __init__(self):
        self.name = "train <fast> & cheap"
        self.steps = [{"name": "a", "cores": [1, 2]}, {"name": "b", "cores": []}]


def test_escaping_dots_nesting_and_scopes():
    context = {"run": _Run(), "html": "<b>x</b>", "name": "outer"}
    text = render_template(
        "{{run.name}}|{{{html}}}|{{html}}|"
        "{{#each run.steps as step}}{{step.name}}:"
        "{{#each step.cores as core}}{{core}}{{#if core}}+{{/if}}{{/each}}"
        "{{#if step.cores}}{{#else}}none{{/if}};{{/each}}{{name}}|{{run.steps.1.name}}",
        context,
    )
    assert text == (
        "train &lt;fast&gt; &amp; cheap|<b>x</b>|&lt;b&gt;x&lt;/b&gt;|a:1+2+;b:none;outer|b"
    )


def test_filters_chain_and_match_the_package_rules():
    stamp = 1_700_000_000
    out = render_template(
        "{{m | round_memory}} {{m | divide:1024 | round:1}} {{xs | index:1}} "
        "{{big | pretty_number}} {{n | pretty_number:3}} {{t | unix_timestamp_to_local_tz_string}}",
        {"m": 3863, "xs": ["a", "b"], "big": 1234567, "n": -0.5, "t": stamp},
    )
    local = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(stamp))
    assert out == f"{round_memory(3863)} 3.8 b 1,234,567 -0.5 {local}"


@pytest.mark.parametrize(
    "template, error, words",
    [
        ("a\n{{#if x}}yes", ValueError, "line 2: {{#if x}} is never closed"),
        ("{{#each xs as x}}{{/if}}", ValueError, "{{/if}} closes no block"),
        ("{{/each}}", ValueError, "nothing is open"),
        ("{{#each xs}}{{/each}}", ValueError, "write {{#each list as item}}"),
        ("{{x | nope}}", ValueError, "unknown filter 'nope'; known: pretty_number"),
        ("{{x.missing}}", KeyError, "'missing' not found in 'x.missing'"),
        ("{{x | divide:0}}", ValueError, "by zero"),
    ],
)
def test_errors_name_what_is_wrong_and_where(template, error, words):
    with pytest.raises(error) as info:
        render_template(template, {"x": {"a": 1}, "xs": [1]})
    assert words in str(info.value)
