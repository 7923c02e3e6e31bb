"""Daily and monthly indexes: routing, reads through the umbrella, retention, max_age."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import (
    IndexMaxAgeExceededError,
    MaintenanceReport,
    maintain,
    partitions_for_range,
)
from esmapper.indexes.reads import get_document, locate_documents, search_documents
from tests.integration.conftest import FakeClock, MakeMapper

from .fences import without_fence
from .models import DailyLog, DailyLogV2, Event, MonthlyAudit

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)


def _aliases(client: Elasticsearch, prefix: str, name: str) -> dict[str, list[str]]:
    body = client.options(ignore_status=404).indices.get_alias(index=f"{prefix}{name}-v*").body
    return {index: without_fence(index, entry["aliases"]) for index, entry in sorted(body.items())}


def test_daily_documents_land_in_their_day_and_read_through_the_umbrella(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(DailyLog, clock=FakeClock(NOW))
    (state,) = mapper.configure_indexes()
    assert (state.action, state.expected_index) == ("created", f"{index_prefix}logs-v1-*")
    assert _aliases(es_client, index_prefix, "logs") == {}  # partitions come with writes

    repo = mapper.repository(DailyLog)
    days = [NOW - dt.timedelta(days=d) for d in (0, 1, 1, 3)]
    docs = repo.add(
        [DailyLog(message=f"m{i}", created_utc=d) for i, d in enumerate(days)],
        consistency="immediate",
    )
    # new ids encode the document date
    assert [em.ObjectId(d.id).created_at for d in docs] == [d.replace(microsecond=0) for d in days]

    p = index_prefix
    assert _aliases(es_client, p, "logs") == {
        f"{p}logs-v1-2026.03.07": [f"{p}logs", f"{p}logs-2026.03.07"],
        f"{p}logs-v1-2026.03.09": [f"{p}logs", f"{p}logs-2026.03.09"],
        f"{p}logs-v1-2026.03.10": [f"{p}logs", f"{p}logs-2026.03.10"],
    }
    assert es_client.count(index=f"{p}logs-2026.03.09")["count"] == 2
    assert repo.count() == 4
    assert sorted(d.message for d in repo.find(limit=10)) == ["m0", "m1", "m2", "m3"]

    # a loaded document is saved back into the partition it came from
    loaded = repo.find("message:m3").documents[0]
    loaded.message = "m3-changed"
    repo.save(loaded, consistency="immediate")
    assert es_client.count(index=f"{p}logs-v1-2026.03.07")["count"] == 1
    assert repo.count("message:m3-changed") == 1

    repo.remove(docs[0], consistency="immediate")
    assert repo.count() == 3

    # configure_indexes leaves existing partitions alone
    assert [s.action for s in mapper.configure_indexes(force=True)] == ["template_updated"]
    ranged = partitions_for_range(mapper.spec(DailyLog), NOW - dt.timedelta(days=1), NOW)
    assert ranged == [f"{p}logs-2026.03.09", f"{p}logs-2026.03.10"]
    hits = es_client.search(index=ranged, ignore_unavailable=True, allow_no_indices=True)
    assert hits["hits"]["total"]["value"] == 2
    # the repository prunes to those partitions when asked to (a date filter alone does not prune)
    recent = repo.find(partitions=(NOW - dt.timedelta(days=1), NOW), limit=10)
    assert sorted(d.message for d in recent) == ["m1", "m2"]
    assert repo.count(partitions=(NOW - dt.timedelta(days=20), NOW - dt.timedelta(days=19))) == 0


def test_monthly_documents_land_in_their_month(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(MonthlyAudit, clock=FakeClock(NOW))
    mapper.configure_indexes()
    repo = mapper.repository(MonthlyAudit)
    dates = [NOW, NOW - dt.timedelta(days=5), dt.datetime(2026, 1, 31, 23, 59, tzinfo=UTC)]
    repo.add(
        [MonthlyAudit(action=f"a{i}", created_utc=d) for i, d in enumerate(dates)],
        consistency="immediate",
    )
    p = index_prefix
    assert _aliases(es_client, p, "audit") == {
        f"{p}audit-v1-2026.01": [f"{p}audit", f"{p}audit-2026.01"],
        f"{p}audit-v1-2026.03": [f"{p}audit", f"{p}audit-2026.03"],
    }
    assert es_client.count(index=f"{p}audit-2026.03")["count"] == 2
    assert repo.count() == 3


def test_an_objectid_id_is_stored_in_its_date_s_partition_which_is_its_own(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(Event, clock=FakeClock(NOW))
    mapper.configure_indexes()
    repo = mapper.repository(Event)
    by_id = em.ObjectId.new(at=dt.datetime(2026, 2, 1, 8, tzinfo=UTC))
    happened = dt.datetime(2026, 2, 1, 20, tzinfo=UTC)  # the id's day, not its time
    repo.add(Event(id=str(by_id), happened=happened, kind="by-id"), consistency="immediate")
    undated = em.ObjectId.new(at=dt.datetime(2026, 2, 3, tzinfo=UTC))
    repo.add(Event(id=str(undated), kind="undated"), consistency="immediate")  # id: its date
    repo.add(Event(id="plain-id", happened=NOW, kind="by-field"), consistency="immediate")
    p = index_prefix
    assert set(_aliases(es_client, p, "events")) == {
        f"{p}events-v1-2026.02.01",
        f"{p}events-v1-2026.02.03",
        f"{p}events-v1-2026.03.10",
    }
    # a remove by a non-ObjectId id finds the document's partition
    repo.remove("plain-id", consistency="immediate")
    assert repo.count() == 2


def test_writes_older_than_max_age_are_refused_before_anything_is_sent(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(DailyLog, clock=FakeClock(NOW))
    repo = mapper.repository(DailyLog)
    with pytest.raises(IndexMaxAgeExceededError, match=r"^Index max age exceeded") as caught:
        repo.add(DailyLog(message="old", created_utc=NOW - dt.timedelta(days=31)))
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, em.EsmapperError)
    forty_days_ago = NOW - dt.timedelta(days=40)
    old_id = str(em.ObjectId.new(at=forty_days_ago))
    with pytest.raises(IndexMaxAgeExceededError):  # an id of an expired day, dated so
        repo.add(DailyLog(id=old_id, message="old", created_utc=forty_days_ago))
    created = es_client.indices.get(index=f"{index_prefix}*", expand_wildcards="all").body
    assert [name for name in created if "logs" in name] == []
    # a day expires at its start + max_age: 2026-02-08 expired at 03-10 00:00, 02-09 did not
    with pytest.raises(IndexMaxAgeExceededError):
        repo.add(DailyLog(message="old", created_utc=NOW - dt.timedelta(days=30)))
    repo.add(DailyLog(message="ok", created_utc=NOW - dt.timedelta(days=29)))


def test_maintain_deletes_expired_partitions(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    mapper = make_mapper(DailyLog, MonthlyAudit, clock=clock)
    mapper.configure_indexes()
    logs = mapper.repository(DailyLog)
    logs.add([DailyLog(created_utc=NOW - dt.timedelta(days=d)) for d in (0, 10, 20)])
    mapper.repository(MonthlyAudit).add(
        [MonthlyAudit(created_utc=dt.datetime(2025, 6, 1, tzinfo=UTC))]
    )
    p = index_prefix

    assert maintain(mapper) == MaintenanceReport()  # nothing expired yet

    clock.now = NOW + dt.timedelta(days=15)  # 2026-03-25: the 02.18 partition expired 03.20
    report = maintain(mapper)
    assert report.deleted == (f"{p}logs-v1-2026.02.18",)
    assert set(_aliases(es_client, p, "logs")) == {
        f"{p}logs-v1-2026.02.28",
        f"{p}logs-v1-2026.03.10",
    }
    with pytest.raises(IndexMaxAgeExceededError):
        logs.add(DailyLog(created_utc=NOW - dt.timedelta(days=20)))

    clock.now = dt.datetime(2026, 7, 2, tzinfo=UTC)  # June 2025 expires end of June + 365 d
    report = maintain(mapper)
    assert f"{p}audit-v1-2025.06" in report.deleted
    assert _aliases(es_client, p, "audit") == {}
    assert logs.count() == 0


def test_reads_by_id_across_partitions(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(Event, clock=FakeClock(NOW))
    repo, spec = mapper.repository(Event), mapper.spec(Event)
    two_days_ago = NOW - dt.timedelta(days=2)
    first = repo.add(
        Event(id=str(em.ObjectId.new(at=two_days_ago)), happened=two_days_ago, kind="a")
    )
    raw = get_document(es_client, spec, first.id)  # real-time: before any refresh
    assert raw is not None and raw["_source"]["kind"] == "a"
    repo.add(Event(id="plain", happened=NOW, kind="b"))
    # an ObjectId id is read in real time from its dated alias; other ids in real time from
    # every partition (no refresh needed)
    raw = get_document(es_client, spec, first.id)
    assert raw is not None and raw["_index"] == f"{index_prefix}events-v1-2026.03.08"
    assert raw["_source"]["kind"] == "a" and raw["_seq_no"] is not None
    plain = get_document(es_client, spec, "plain")
    assert plain is not None and plain["_index"] == f"{index_prefix}events-v1-2026.03.10"
    assert get_document(es_client, spec, "missing") is None
    assert get_document(es_client, spec, str(em.ObjectId.new(at=NOW))) is None
    es_client.indices.refresh(index=f"{index_prefix}events")  # a search needs one
    found = search_documents(es_client, spec, [first.id, "plain", "missing"])
    assert sorted(h["_id"] for h in found) == sorted([first.id, "plain"])
    located = locate_documents(es_client, spec, [first.id, "plain", "missing"])
    assert located == {
        first.id: f"{index_prefix}events-2026.03.08",
        "plain": f"{index_prefix}events-2026.03.10",
    }


def test_maintain_without_discarding_only_unaliases_expired_partitions(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    mapper = make_mapper(DailyLog, clock=clock)
    mapper.repository(DailyLog).add(
        [DailyLog(created_utc=NOW - dt.timedelta(days=d)) for d in (0, 20)]
    )
    clock.now = NOW + dt.timedelta(days=15)
    report = maintain(mapper, discard_expired=False)
    p = index_prefix
    assert report.expired == (f"{p}logs-v1-2026.02.18",) and report.deleted == ()
    assert _aliases(es_client, p, "logs") == {
        f"{p}logs-v1-2026.02.18": [],
        f"{p}logs-v1-2026.03.10": [f"{p}logs", f"{p}logs-2026.03.10"],
    }


def test_concurrent_first_writes_of_a_day_create_one_partition(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    # two mappers stand for two processes: separate caches racing to create partitions
    mappers = [make_mapper(DailyLog, clock=FakeClock(NOW)) for _ in range(2)]
    days = [NOW - dt.timedelta(days=d) for d in range(3)]
    errors: list[BaseException] = []

    def add(mapper: em.Mapper, worker: int) -> None:
        try:
            docs = [DailyLog(message=f"{worker}-{i}", created_utc=d) for i, d in enumerate(days)]
            mapper.repository(DailyLog).add(docs)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(mappers[w % 2], w)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    p = index_prefix
    partitions = _aliases(es_client, p, "logs")
    assert partitions == {
        f"{p}logs-v1-{d:%Y.%m.%d}": [f"{p}logs", f"{p}logs-{d:%Y.%m.%d}"] for d in days
    }
    es_client.indices.refresh(index=f"{p}logs")
    assert es_client.count(index=f"{p}logs")["count"] == 24


def test_after_a_version_bump_existing_days_keep_their_partition(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    old = make_mapper(DailyLog, clock=FakeClock(NOW))
    old.configure_indexes()
    old.repository(DailyLog).add(DailyLog(message="v1", created_utc=NOW))
    new = make_mapper(DailyLogV2, clock=FakeClock(NOW))
    assert [s.expected_index for s in new.configure_indexes()] == [f"{index_prefix}logs-v2-*"]
    repo = new.repository(DailyLogV2)
    repo.add(DailyLogV2(message="same day", created_utc=NOW), consistency="immediate")
    repo.add(DailyLogV2(message="new day", created_utc=NOW - dt.timedelta(days=1)))
    p = index_prefix
    assert _aliases(es_client, p, "logs") == {
        f"{p}logs-v1-2026.03.10": [f"{p}logs", f"{p}logs-2026.03.10"],
        f"{p}logs-v2-2026.03.09": [f"{p}logs", f"{p}logs-2026.03.09"],
    }
    assert es_client.count(index=f"{p}logs-v1-2026.03.10")["count"] == 2
    mapping = es_client.indices.get_mapping(index=f"{p}logs-v2-2026.03.09").body
    assert "level" in mapping[f"{p}logs-v2-2026.03.09"]["mappings"]["properties"]


def test_new_ids_encode_the_date_field_and_an_undated_document_is_placed_by_its_new_id(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Event)
    happened = dt.datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)
    dated, undated = mapper.repository(Event).add(
        [Event(happened=happened, kind="dated"), Event(kind="undated")], consistency="immediate"
    )
    assert em.ObjectId(dated.id).created_at == happened  # its date_field, not created_utc
    spec = mapper.spec(Event)
    at = em.ObjectId(undated.id).created_at  # the core's new ObjectId: stored by that date
    assert es_client.get(index=spec.dated_alias(at), id=undated.id)["_source"]["kind"] == "undated"


def test_repository_by_id_calls_on_time_series(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Event, clock=FakeClock(NOW))
    repo = mapper.repository(Event)
    docs = repo.add(
        [Event(happened=NOW - dt.timedelta(days=d), kind=str(d)) for d in range(3)]
        + [Event(id="plain", happened=NOW, kind="p")],
        consistency="immediate",
    )
    assert len({em.ObjectId(d.id).created_at.date() for d in docs[:3]}) == 3
    got = repo.get(docs[1].id)
    assert got is not None and got.kind == "1"
    assert repo.get("plain") is not None and repo.exists("plain") and repo.exists(docs[2].id)
    assert repo.get("missing") is None and not repo.exists("missing")
    assert {d.kind for d in repo.get_many([docs[0].id, "plain", "missing"])} == {"0", "p"}
    repo.patch([docs[0].id, "plain"], em.PartialPatch({"kind": "patched"}), consistency="immediate")
    assert repo.count("kind:patched") == 2
    repo.patch(
        docs[2].id, em.ActionPatch(lambda e: setattr(e, "kind", "acted")), consistency="immediate"
    )
    assert repo.count("kind:acted") == 1
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch("missing", em.PartialPatch({"kind": "x"}))
    with pytest.raises(em.BulkWriteError) as caught:
        repo.patch(["missing", "plain"], em.PartialPatch({"kind": "y"}), consistency="immediate")
    assert [f.id for f in caught.value.failures] == ["missing"]
    assert repo.count("kind:y") == 1


class Reading(em.Document):
    class Index:
        name = "readings"
        kind = "daily"
        date_field = "taken"
        max_age = dt.timedelta(days=7)

    taken: dt.datetime | None = None


def test_dates_an_id_cannot_encode_get_the_max_age_error_first_or_a_field_error(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Reading, clock=FakeClock(NOW)).repository(Reading)
    with pytest.raises(IndexMaxAgeExceededError):  # expired: that error comes first
        repo.add(Reading(taken=dt.datetime(1960, 1, 1, tzinfo=dt.timezone.utc)))
    later = make_mapper(Reading, clock=FakeClock(dt.datetime(2107, 1, 1, tzinfo=dt.timezone.utc)))
    with pytest.raises(em.DocumentValidationError, match="taken") as caught:
        later.repository(Reading).add(
            Reading(taken=dt.datetime(2107, 1, 1, tzinfo=dt.timezone.utc))
        )
    assert caught.value.field == "taken"
