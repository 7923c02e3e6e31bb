"""Point-in-time keep-alives, lost-context detection and the progress error (no server)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import NotFoundError

import esmapper as em
from esmapper import _pit
from esmapper.errors import __all__ as error_names
from esmapper.results import decode_token


def not_found(body: Any) -> NotFoundError:
    meta = ApiResponseMeta(
        status=404,
        http_version="1.1",
        headers=HttpHeaders(),
        duration=0.0,
        node=NodeConfig("http", "localhost", 9200),
    )
    return NotFoundError("not found", meta=meta, body=body)


#: What Elasticsearch 8 answers a search whose point in time expired or was closed.
EXPIRED = {
    "error": {
        "root_cause": [
            {
                "type": "search_context_missing_exception",
                "reason": "No search context found for id [7]",
            }
        ],
        "type": "search_phase_execution_exception",
        "reason": "all shards failed",
        "phase": "query",
        "grouped": True,
        "failed_shards": [
            {
                "shard": 0,
                "index": None,
                "reason": {
                    "type": "search_context_missing_exception",
                    "reason": "No search context found for id [7]",
                },
            }
        ],
    },
    "status": 404,
}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (True, "5m"),
        (False, None),
        (None, None),
        ("5m", "5m"),
        ("90s", "90s"),
        (" 2h ", "2h"),
        ("1d", "1d"),
        ("250ms", "250ms"),
        ("007m", "7m"),
        (dt.timedelta(minutes=10), "600s"),
        (dt.timedelta(seconds=1.5), "1500ms"),
    ],
)
def test_keep_alive_accepts_elasticsearch_durations(given: object, expected: str | None) -> None:
    assert _pit.keep_alive(given) == expected


@pytest.mark.parametrize(
    "given",
    ["5x", "", "m", "5", "0s", "-1m", "1.5m", "5M", "5 minutes", 5, 0, 1.0, [], dt.timedelta(0)],
)
def test_keep_alive_refuses_anything_else_naming_the_option(given: object) -> None:
    with pytest.raises(em.QueryValidationError, match="snapshot=") as raised:
        _pit.keep_alive(given)
    assert raised.value.field == "snapshot"
    assert isinstance(raised.value, ValueError)


def test_a_lost_point_in_time_is_told_from_other_404s() -> None:
    assert _pit.is_context_missing(not_found(EXPIRED))
    assert _pit.context_reason(not_found(EXPIRED)) == "No search context found for id [7]"
    opensearch = {"error": {"type": "illegal_argument_exception", "reason": "PIT id 7 not found"}}
    assert _pit.is_context_missing(not_found(opensearch))
    missing_index = {
        "error": {"type": "index_not_found_exception", "reason": "no such index [x]"},
        "status": 404,
    }
    assert not _pit.is_context_missing(not_found(missing_index))
    assert not _pit.is_context_missing(not_found("gone"))


def test_shard_failures_of_a_lost_point_in_time_are_found() -> None:
    partial = {
        "_shards": {
            "total": 2,
            "successful": 1,
            "failed": 1,
            "failures": [
                {
                    "shard": 1,
                    "reason": {"type": "search_context_missing_exception", "reason": "gone [9]"},
                }
            ],
        },
        "hits": {"hits": []},
    }
    assert _pit.lost_shards(partial) == "gone [9]"
    assert _pit.lost_shards({"_shards": {"total": 1, "failed": 0}}) is None
    other = {"_shards": {"failures": [{"reason": {"type": "query_shard_exception"}}]}}
    assert _pit.lost_shards(other) is None


def test_the_error_says_how_far_the_scan_got() -> None:
    error = _pit.expired_error(
        "Employee", keep_alive="2m", processed=300, pages=3, last_sort=["d299"], index="e"
    )
    assert isinstance(error, em.SnapshotExpiredError)
    assert isinstance(error, em.EsmapperError)
    assert (error.processed, error.pages, error.last_sort) == (300, 3, ["d299"])
    assert error.keep_alive == "2m" and error.index == "e"
    assert error.error_type == "search_context_missing_exception"
    assert error.search_after is not None and decode_token(error.search_after) == ["d299"]
    text = str(error)
    for part in ("Employee", "3 page(s)", "300 document(s)", "2m", "'d299'", error.search_after):
        assert part in text
    first = _pit.expired_error("Employee", keep_alive="5m", processed=0, pages=0, last_sort=None)
    assert first.search_after is None and "before any page" in str(first)


def test_the_error_is_exported_and_in_the_documented_tree() -> None:
    assert em.SnapshotExpiredError is em.errors.SnapshotExpiredError
    assert "SnapshotExpiredError" in em.__all__ and "SnapshotExpiredError" in error_names
    assert error_names == sorted(error_names)
    assert "SnapshotExpiredError" in (em.errors.__doc__ or "")
