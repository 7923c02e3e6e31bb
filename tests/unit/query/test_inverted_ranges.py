"""A range whose bounds are the wrong way round matches nothing: refused before sending
(the reference's "start < end"), with the field and the position."""

from __future__ import annotations

import datetime as dt

import pytest

from esmapper.errors import QueryValidationError
from esmapper.query import compile_filter
from esmapper.query._values import date_span

from .mapping import CATALOG

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("created_utc:[2026-02 TO 2026-01]", "start is after its end"),
        ("created_utc:[2026-01-02 TO 2026-01-01]", "start is after its end"),
        ('created_utc:["2026-01-01T10:00:00Z" TO "2026-01-01T09:59:59Z"]', "after its end"),
        ('created_utc:["2026-01-01T12:00+02:00" TO "2026-01-01T09:00Z"]', "after its end"),
        ("created_utc:[1767312000000 TO 2026-01-01]", "after its end"),  # 2026-01-02 in ms
        ("created_utc:{2026-01-05 TO 2026-01-05]", "bounds are equal and one is excluded"),
        ("age:[30 TO 20]", "start is after its end"),
        ("age:{5 TO 5}", "bounds are equal"),
        ("score:[2.5 TO 1]", "start is after its end"),
        ("company_id:acme AND NOT age:[40 TO 30]", "from 40 to 30"),
    ],
)
def test_an_inverted_range_is_refused(expression: str, words: str) -> None:
    with pytest.raises(QueryValidationError, match="matches nothing") as caught:
        compile_filter(expression, CATALOG)
    assert words in str(caught.value)
    assert caught.value.field in ("created_utc", "age", "score")
    assert caught.value.position is not None


@pytest.mark.parametrize(
    "expression",
    [
        "created_utc:[2026-01 TO 2026-01]",  # a month: both ends inside it
        "created_utc:[2026-01-15 TO 2026-01]",  # the 15th is in January
        'created_utc:["2026-01-01T10:00+02:00" TO "2026-01-01T09:00Z"]',  # 08:00Z before 09:00Z
        "created_utc:[now TO now-1d]",  # date math is not compared (the server resolves it)
        "created_utc:[2026-01-01 TO *]",
        "age:[5 TO 5]",
        "age:[20 TO 30]",
        "email:[b TO a]",  # strings: their order is the server's
        # the far-future "forever" bound: its span ends past what a datetime holds
        "created_utc:[2020-01-01 TO 9999-12-31]",
        "created_utc:[2020 TO 9999]",
        "created_utc:[now TO 9999-12]",
        "created_utc:[2020-01-01 TO 9999-12-31T23:59:59]",
        "created_utc:[0 TO 99999999999999999]",  # epoch ms beyond a datetime: not compared
        "created_utc:{9999-12-31 TO 9999-12-31T23:59:59.999Z]",
    ],
)
def test_ranges_that_can_match_are_accepted(expression: str) -> None:
    assert compile_filter(expression, CATALOG).query is not None


def test_date_span_covers_what_the_date_names() -> None:
    assert date_span("2026") == (
        dt.datetime(2026, 1, 1, tzinfo=UTC),
        dt.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    )
    assert date_span("2026-12")[1] == dt.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)  # type: ignore[index]
    first, last = date_span("2026-01-31T10:00:00.5+01:00")  # type: ignore[misc]
    assert first == last == dt.datetime(2026, 1, 31, 9, 0, 0, 500000, tzinfo=UTC)
    assert date_span("0") == (dt.datetime(1970, 1, 1, tzinfo=UTC),) * 2
    assert date_span("now-1d") is None
    assert date_span("2026-01-01||+1M") is None
    assert date_span("2026-02-30") is None
