"""Time-series naming, routing dates, retention arithmetic and read pruning (no server)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import esmapper as em
from esmapper.indexes import IndexMaxAgeExceededError, IndexSpec, partitions_for_range
from esmapper.indexes.timeseries import (
    document_date,
    expires_at,
    parse_partition,
    period_start,
)
from esmapper.model.state import DocState

UTC = dt.timezone.utc


class Log(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"
        max_age = dt.timedelta(days=90)

    message: str = ""


class Audit(em.Document, em.HasDates):
    class Index:
        name = "audit"
        kind = "monthly"

    action: str = ""


class Event(em.Document):
    class Index:
        name = "events"
        kind = "daily"
        date_field = "happened"

    happened: dt.datetime | None = None


def spec(model: type, **kwargs: Any) -> IndexSpec:
    return IndexSpec(model.__esmapper__, "p-", **kwargs)  # type: ignore[attr-defined]


class RecordingClient:
    """Fails the test on any request."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected request: {name}")


def test_names() -> None:
    at = dt.datetime(2026, 12, 2, 23, 59, tzinfo=UTC)
    daily, monthly = spec(Log), spec(Audit)
    assert daily.partition_name(at) == "p-logs-v1-2026.12.02"
    assert daily.partition_name(at, version=3) == "p-logs-v3-2026.12.02"
    assert daily.dated_alias(at) == "p-logs-2026.12.02"
    assert (daily.read_target, daily.index_pattern) == ("p-logs", "p-logs-v1-*")
    assert daily.template_name == "p-logs-v1-template"
    assert monthly.partition_name(at) == "p-audit-v1-2026.12"
    assert monthly.dated_alias(at) == "p-audit-2026.12"
    # another timezone is converted to UTC first
    east = dt.datetime(2026, 12, 3, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=3)))
    assert daily.dated_alias(east) == "p-logs-2026.12.02"


def test_parse_partition() -> None:
    daily = spec(Log)
    partition = parse_partition(daily, "p-logs-v2-2026.01.15")
    assert partition is not None
    assert (partition.version, partition.start) == (2, dt.datetime(2026, 1, 15, tzinfo=UTC))
    for other in (
        "p-logs-v2",
        "p-logs-2026.01.15",
        "p-logs-v2-2026.01",
        "p-logsx-v1-2026.01.15",
        "p-logs-v1-2026.13.01",
    ):
        assert parse_partition(daily, other) is None
    assert parse_partition(spec(Audit), "p-audit-v1-2026.01") is not None


def test_periods_and_expiry() -> None:
    at = dt.datetime(2026, 12, 31, 18, tzinfo=UTC)
    assert period_start("daily", at) == dt.datetime(2026, 12, 31, tzinfo=UTC)
    assert period_start("monthly", at) == dt.datetime(2026, 12, 1, tzinfo=UTC)
    days = dt.timedelta(days=90)
    # daily: the partition date + max_age (logs-v1-2024.01.15 with 90 days -> 2024-04-14/15)
    assert expires_at("daily", dt.datetime(2024, 1, 15, tzinfo=UTC), days) == dt.datetime(
        2024, 4, 14, tzinfo=UTC
    )
    # monthly: the end of the month + max_age, across a year boundary
    assert expires_at("monthly", dt.datetime(2026, 12, 1, tzinfo=UTC), dt.timedelta(0)) == (
        dt.datetime(2027, 1, 1, tzinfo=UTC)
    )
    assert expires_at("daily", at, None) is None


def test_document_date_precedence() -> None:
    daily = spec(Event)
    oid = em.ObjectId.new(at=dt.datetime(2026, 2, 1, 8, tzinfo=UTC))
    happened = dt.datetime(2026, 3, 1, tzinfo=UTC)
    assert document_date(daily, Event(id="x", happened=happened)) == happened
    assert document_date(daily, Event(id=str(oid), happened=happened)) == oid.created_at
    loaded = Event(id=str(oid), happened=happened)
    object.__setattr__(loaded, "_esm_state", DocState({}, "p-events-v1-2026.01.20"))
    assert document_date(daily, loaded) == dt.datetime(2026, 1, 20, tzinfo=UTC)
    assert document_date(daily, Event(id="x")) is None


def test_max_age_is_checked_before_any_request() -> None:
    now = dt.datetime(2026, 6, 1, 12, tzinfo=UTC)
    daily = spec(Log, client=RecordingClient(), clock=lambda: now)
    with pytest.raises(IndexMaxAgeExceededError, match=r"^Index max age exceeded") as caught:
        daily.write_index_for(Log(id="a", created_utc=now - dt.timedelta(days=91)))
    assert caught.value.index == "p-logs-2026.03.02"
    assert caught.value.ids == ("a",)


def test_time_series_writes_need_a_bound_spec_and_a_known_date_field() -> None:
    with pytest.raises(em.IndexConfigurationError, match="needs a client"):
        spec(Log).write_index_for(Log(created_utc=dt.datetime.now(UTC)))

    with pytest.raises(em.IndexConfigurationError, match="not a field"):

        class Bad(em.Document):  # refused when it is defined
            class Index:
                name = "bad"
                kind = "daily"
                date_field = "nope"


def test_aliases_of_a_time_series_model() -> None:
    daily, monthly = spec(Log), spec(Audit)
    assert daily.is_alias("p-logs") and daily.is_alias("p-logs-2026.02.01")
    assert monthly.is_alias("p-audit-2026.02") and not monthly.is_alias("p-audit-2026.02.01")
    for name in ("p-logs-v1-2026.02.01", "p-logs-2026.2.1", "p-logs-x", "p-logsx", "logs"):
        assert not daily.is_alias(name), name


def test_read_index_for_id() -> None:
    oid = em.ObjectId.new(at=dt.datetime(2026, 2, 1, tzinfo=UTC))
    assert spec(Log).read_index_for_id(str(oid)) == "p-logs-2026.02.01"
    assert spec(Log).read_index_for_id("not-an-objectid") == "p-logs"


def test_partitions_for_range() -> None:
    daily, monthly = spec(Log), spec(Audit)
    start = dt.datetime(2026, 1, 30, 22, tzinfo=UTC)
    assert partitions_for_range(daily, start, start + dt.timedelta(days=2)) == [
        "p-logs-2026.01.30",
        "p-logs-2026.01.31",
        "p-logs-2026.02.01",
    ]
    assert partitions_for_range(monthly, start, start + dt.timedelta(days=40)) == [
        "p-audit-2026.01",
        "p-audit-2026.02",
        "p-audit-2026.03",
    ]
    # open ranges, long ranges and ranges beyond max_age use the umbrella alias
    assert partitions_for_range(daily, None, start) is None
    assert partitions_for_range(daily, start, None) is None
    assert partitions_for_range(daily, start, start + dt.timedelta(days=91)) is None  # > max_age
    unlimited = spec(Event)
    assert partitions_for_range(unlimited, start, start + dt.timedelta(days=91)) is not None
    assert partitions_for_range(unlimited, start, start + dt.timedelta(days=91.32)) is None
    assert partitions_for_range(monthly, start, start + dt.timedelta(days=365)) is not None
    assert partitions_for_range(monthly, start, start + dt.timedelta(days=366)) is None
    with pytest.raises(ValueError, match="before it starts"):
        partitions_for_range(daily, start, start - dt.timedelta(seconds=1))


def test_versioned_and_plain_models_are_not_partitioned() -> None:
    class Plain(em.Document):
        class Index:
            name = "plain"
            kind = "plain"

    class Versioned(em.Document):
        class Index:
            name = "versioned"

    for model in (Plain, Versioned):
        s = spec(model, client=RecordingClient())
        s.ensured.mark()  # as after configure_indexes or a first write: nothing more is sent
        assert s.write_index_for(model(id="x")) == s.alias
        assert s.write_targets([(model(id="x"), False), (model(id="y"), True)]) == [s.alias] * 2
        assert s.is_alias(s.alias) is (model is Versioned)
        assert partitions_for_range(s, dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2)) is None


def test_every_write_target_maps_to_the_models_alias() -> None:
    """``IndexSpec.write_name``: the one mapping from a target a write path computed (a
    hit's physical index, a loaded document's partition) to the alias it must name."""

    class Plain(em.Document):
        class Index:
            name = "plain"
            kind = "plain"

    class Versioned(em.Document):
        class Index:
            name = "versioned"

    versioned, plain, daily, monthly = spec(Versioned), spec(Plain), spec(Log), spec(Audit)
    for name in (None, "p-versioned", "p-versioned-v1", "p-versioned-v12"):
        assert versioned.write_name(name) == "p-versioned"
    assert plain.write_name(None) == plain.write_name("p-plain") == "p-plain"
    assert daily.write_name("p-logs-v1-2026.03.10") == "p-logs-2026.03.10"
    assert daily.write_name("p-logs-v7-2026.03.10") == "p-logs-2026.03.10"  # any version
    assert daily.write_name("p-logs-2026.03.10") == "p-logs-2026.03.10"  # already the alias
    assert monthly.write_name("p-audit-v2-2026.03") == "p-audit-2026.03"
    refused = [
        (versioned, "p-versioned-archive"),  # another index
        (versioned, "p-versioned-v1-2026.03.10"),
        (plain, "p-plain-v1"),
        (daily, None),  # a time-series write names its period
        (daily, "p-logs"),  # the umbrella alias
        (daily, "p-logs-v1-2026.03"),  # a monthly name on a daily model
        (monthly, "other"),
    ]
    for s, name in refused:
        with pytest.raises(ValueError, match="a document write cannot go to"):
            s.write_name(name)


def test_a_dated_alias_names_its_period() -> None:
    from esmapper.indexes.timeseries import dated_alias_start

    assert dated_alias_start(spec(Log), "p-logs-2026.03.10") == dt.datetime(2026, 3, 10, tzinfo=UTC)
    assert dated_alias_start(spec(Audit), "p-audit-2026.03") == dt.datetime(2026, 3, 1, tzinfo=UTC)
    for name in ("p-logs", "p-logs-v1-2026.03.10", "p-logs-2026.13.10", "logs-2026.03.10"):
        assert dated_alias_start(spec(Log), name) is None
