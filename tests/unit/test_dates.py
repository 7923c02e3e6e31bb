"""The date assignments a ScriptPatch carries (esmapper._dates.script_dates): the caller's
script is kept as sent, and the result is one script Painless compiles (its grammar has no
empty statement, so ``};`` is a syntax error, and a ``//`` comment runs to the line end)."""

from __future__ import annotations

import datetime as dt

import pytest

import esmapper as em
from esmapper._dates import script_dates

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


class Dated(em.Document, em.HasDates):
    class Index:
        name = "dated_scripts"


INFO = Dated.__esmapper__
DATES = (
    "ctx._source.updated_utc = params.updated_utc;\n"
    "if (ctx._source.created_utc == null) { ctx._source.created_utc = params.__esm_now; }"
)


@pytest.mark.parametrize(
    "script",
    [
        "if (ctx._source.n > 1) { ctx._source.n -= 1 } else { ctx.op = 'none' }",
        "for (def t : params.tags) { ctx._source.tags.add(t) }",
        "ctx._source.n += 1 // one more",
        "ctx._source.n += 1",
        "ctx._source.n += 1;",
    ],
)
def test_the_callers_script_runs_as_sent_before_the_dates(script: str) -> None:
    source, params = script_dates(INFO, script, {"tags": ["a"]}, NOW)
    assert source == "if (ctx != null) {\n" + script + "\n}\n" + DATES
    assert "};" not in source
    assert params == {
        "tags": ["a"],
        "updated_utc": "2026-06-01T12:00:00Z",
        "__esm_now": "2026-06-01T12:00:00Z",
    }


@pytest.mark.parametrize(
    ("script", "joined"),
    [
        ("int twice(int n) { return n * 2; }\nctx._source.n = twice(ctx._source.n)", ";\n"),
        ("void bump(def c) { c._source.n++ }\nif (ctx != null) { bump(ctx) }", "\n"),
    ],
)
def test_a_script_declaring_functions_is_followed_not_wrapped(script: str, joined: str) -> None:
    source, _params = script_dates(INFO, script, None, NOW)
    assert source == script + joined + DATES


def test_the_callers_updated_param_means_the_script_sets_it() -> None:
    source, params = script_dates(
        INFO, "ctx._source.updated_utc = params.updated_utc", {"updated_utc": "x"}, NOW
    )
    assert "params.updated_utc;\nif" not in source and params["updated_utc"] == "x"
