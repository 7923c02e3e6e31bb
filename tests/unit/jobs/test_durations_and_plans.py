"""Durations, the snapshot cleanup plan, job results: pure functions."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import pytest

from esmapper._bulk_encode import encode as _encode
from esmapper.bulk import BulkAction
from esmapper.indexes.drift import count_fields, mapping_drift
from esmapper.jobs import JobResult, JobStatus, SnapshotInfo, format_duration, parse_duration
from esmapper.jobs.snapshots import plan_cleanup, snapshot_name
from esmapper.options import TRACE, Options

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", dt.timedelta(days=30)),
        ("1h30m", dt.timedelta(hours=1, minutes=30)),
        ("90s", dt.timedelta(seconds=90)),
        ("2w", dt.timedelta(weeks=2)),
        ("1.5h", dt.timedelta(minutes=90)),
        ("500ms", dt.timedelta(milliseconds=500)),
        ("3600", dt.timedelta(hours=1)),
        (" 0s ", dt.timedelta(0)),
        (dt.timedelta(minutes=5), dt.timedelta(minutes=5)),
        (2.5, dt.timedelta(seconds=2.5)),
    ],
)
def test_durations(text: object, expected: dt.timedelta) -> None:
    assert parse_duration(text) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["30x", "d30", "", "1h 30m", "-5m", "30D", "abc", True, None])
def test_bad_durations_say_what_was_expected(bad: object) -> None:
    with pytest.raises(ValueError, match="max-age"):
        parse_duration(bad, what="--max-age")  # type: ignore[arg-type]


def test_zero_is_refused_where_a_positive_duration_is_needed() -> None:
    with pytest.raises(ValueError, match="longer than zero"):
        parse_duration("0s", what="--interval", positive=True)


def test_format_duration_round_trips() -> None:
    for text in ("1d2h", "1m30s", "250ms", "0s", "30d"):
        assert format_duration(parse_duration(text)) == text
    assert format_duration(dt.timedelta(seconds=90)) == "1m30s"
    assert format_duration(parse_duration("2w")) == "14d"


def _snap(name: str, days_ago: float, state: str = "SUCCESS") -> SnapshotInfo:
    return SnapshotInfo("r", name, state, start=NOW - dt.timedelta(days=days_ago))


def test_cleanup_never_deletes_the_newest_successful_snapshot() -> None:
    snaps = [_snap("a", 90), _snap("b", 60), _snap("c", 45, "FAILED"), _snap("d", 40, "PARTIAL")]
    cutoff = NOW - dt.timedelta(days=30)
    delete, kept = plan_cleanup(snaps, cutoff=cutoff, keep=0)
    # every snapshot is older than 30 days; "b" is the newest successful one: kept
    assert [s.name for s in delete] == ["a", "c", "d"]
    assert [(s.name, why) for s, why in kept] == [("b", "the newest successful snapshot")]


def test_cleanup_keeps_the_newest_n_successful_young_and_running_ones() -> None:
    snaps = [
        _snap("a", 90),
        _snap("b", 80),
        _snap("c", 70),
        _snap("running", 50, "IN_PROGRESS"),
        _snap("young", 1),
    ]
    delete, kept = plan_cleanup(snaps, cutoff=NOW - dt.timedelta(days=30), keep=2)
    assert [s.name for s in delete] == ["a", "b"]
    reasons = {s.name: why for s, why in kept}
    assert reasons == {
        "c": "one of the 2 newest successful snapshots",
        "running": "still running",
        "young": "the newest successful snapshot",
    }


def test_snapshot_names() -> None:
    assert snapshot_name("snapshot-%Y-%m-%d-%H-%M-%S", NOW) == "snapshot-2026-03-10-12-00-00"
    assert snapshot_name(
        "nightly-%Y.%m.%d", NOW.astimezone(dt.timezone(dt.timedelta(hours=5)))
    ) == (
        "nightly-2026.03.10"  # UTC whatever the clock's zone
    )
    for bad in ("Snap-%Y", "a b", "_x", "x,y", "x:%H"):
        with pytest.raises(ValueError, match="invalid"):
            snapshot_name(bad, NOW)


def test_job_results() -> None:
    ok = JobResult.success("j", "done")
    assert ok.is_success and not ok.is_failed and str(ok) == "j: success: done"
    failed = JobResult.from_exception("j", ValueError("bad\nthing"))
    assert failed.status is JobStatus.FAILED and failed.message == "bad thing"
    assert isinstance(failed.error, ValueError)
    assert JobResult.cancelled("j").is_cancelled
    skipped = JobResult("j", JobStatus.SUCCESS, "held", skipped=True)
    assert str(skipped) == "j: skipped: held"


def test_bulk_actions_carry_a_pipeline_on_index_and_create_only() -> None:
    line = _encode(0, BulkAction("create", "i", "1", {"a": 1}, pipeline="p")).split(b"\n")[0]
    assert line == b'{"create":{"_index":"i","_id":"1","pipeline":"p"}}'
    cases: list[tuple[str, dict[str, Any] | None]] = [("update", {"doc": {}}), ("delete", None)]
    for op, body in cases:
        with pytest.raises(ValueError, match="pipeline is only for index and create"):
            _encode(0, BulkAction(op, "i", "1", body, pipeline="p"))  # type: ignore[arg-type]


def test_mapping_drift_and_field_count() -> None:
    model = {
        "properties": {
            "name": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "age": {"type": "integer"},
            "address": {"type": "object", "properties": {"city": {"type": "keyword"}}},
        }
    }
    server = {
        "properties": {
            "name": {"type": "text"},
            "age": {"type": "long"},
            "address": {"properties": {"city": {"type": "keyword"}}},
            "legacy": {"type": "keyword"},
        }
    }
    drift = mapping_drift(model, server)
    assert drift.missing == ("name.keyword",)
    assert drift.changed == (("age", "integer", "long"),)
    assert drift.extra == ("legacy",)
    assert not drift.clean
    assert mapping_drift(model, model).clean
    assert count_fields(model) == 5  # name, name.keyword, age, address, address.city
    assert count_fields({**server, "runtime": {"x": {"type": "long"}}}) == 6
    templated = {**model, "dynamic_templates": [{"slots": {"path_match": "idx.int-*"}}]}
    stored = {
        "properties": {**model["properties"], "idx": {"properties": {"int-1": {"type": "integer"}}}}
    }
    assert mapping_drift(templated, stored).extra == ("idx",)  # the slot is the model's


def test_query_log_level_option() -> None:
    assert Options(query_log_level="trace").query_log_level == TRACE == 5
    assert Options(query_log_level="INFO").query_log_level == logging.INFO
    assert Options(query_log_level=logging.WARNING).query_log_level == logging.WARNING
    assert Options().query_log_level is None
    assert logging.getLevelName(TRACE) == "TRACE"
    for bad in ("loud", -1, 2.5):
        with pytest.raises(ValueError, match="query_log_level"):
            Options(query_log_level=bad)  # type: ignore[arg-type]
