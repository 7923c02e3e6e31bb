"""Reads and by-query writes of time-series models over several partitions: snapshot paging
(``find(snapshot=...)``, a session's ``find``), ``batch_process``, ``patch_all`` and
``remove_all`` cover every partition, in the search's own order across them.

Each test runs on the local server directly and through the ClusterProxy (a point in time,
update-by-query or delete-by-query on an alias of several indexes covers all of them, a
point in time naming a missing index answers 404, as on Elasticsearch). On the local server
alone a point in time on the umbrella alias covered its first partition only: these scans
saw one day (one month) of the model, silently.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import signals
from esmapper.indexes import _pit_target
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .models import DailyLog, MonthlyAudit

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)
PER_PARTITION = 4
#: three days (and three months) with documents, oldest first
DAYS = [NOW.replace(hour=8) - dt.timedelta(days=d) for d in (2, 1, 0)]
MONTHS = [dt.datetime(2026, m, 5, 8, tzinfo=UTC) for m in (1, 2, 3)]


class CachedLog(em.Document, em.HasDates):
    """A daily model whose documents are cached: its by-query writes scan and write per
    document."""

    class Index:
        name = "cached_logs"
        kind = "daily"
        max_age = dt.timedelta(days=30)
        cache = dt.timedelta(minutes=5)
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    message: str = em.field(em.Keyword(), default="")


Model = type[Any]


@pytest.fixture(params=["local", "cluster"])
def url(request: pytest.FixtureRequest, es_url: str) -> Iterator[str]:
    """The local server's URL, or a ClusterProxy's in front of it."""
    if request.param == "local":
        yield es_url
        return
    with ClusterProxy(es_url, lifetime=300) as cluster:
        yield cluster.url


@pytest.fixture
def mapper(make_mapper: MakeMapper, url: str) -> em.Mapper:
    made = make_mapper(DailyLog, MonthlyAudit, CachedLog, url=url, clock=FakeClock(NOW))
    made.configure_indexes()
    return made


def _fill(mapper: em.Mapper, model: Model) -> list[Any]:
    """``PER_PARTITION`` documents in each of three partitions of ``model``, named
    ``<period>-<n>`` so that their order by name is their date order."""
    dates = MONTHS if model is MonthlyAudit else DAYS
    field = "action" if model is MonthlyAudit else "message"
    docs = [
        model(**{field: f"p{p}-{n}"}, created_utc=at + dt.timedelta(minutes=n))
        for p, at in enumerate(dates)
        for n in range(PER_PARTITION)
    ]
    mapper.repository(model).add(docs, consistency="immediate")
    return docs


def _partitions(es_client: Elasticsearch, mapper: em.Mapper, model: Model) -> dict[str, int]:
    """``partition -> number of documents`` of ``model`` (counted on each partition)."""
    spec = mapper.spec(model)
    names = sorted(es_client.indices.get_alias(name=spec.alias).body)
    return {name: es_client.count(index=name)["count"] for name in names}


def _text(doc: Any) -> str:
    return str(doc.action if isinstance(doc, MonthlyAudit) else doc.message)


# -- reads ----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [DailyLog, MonthlyAudit])
def test_snapshot_paging_covers_every_partition_in_the_sort_order(
    mapper: em.Mapper, es_client: Elasticsearch, model: Model
) -> None:
    docs = _fill(mapper, model)
    assert list(_partitions(es_client, mapper, model).values()) == [PER_PARTITION] * 3
    field = "action" if model is MonthlyAudit else "message"
    results = mapper.repository(model).find(snapshot=True, sort=f"-{field}", limit=5)
    assert results.total == len(docs)
    seen: list[str] = []
    pages = 0
    while True:
        pages += 1
        seen += [_text(d) for d in results]
        if not results.next_page():
            break
    # one order across the partitions: the newest period's documents first
    assert seen == sorted((_text(d) for d in docs), reverse=True)
    assert pages == 3


def test_a_search_after_token_continues_across_the_partition_boundary(
    mapper: em.Mapper,
) -> None:
    docs = _fill(mapper, DailyLog)
    repo = mapper.repository(DailyLog)
    first = repo.find(snapshot=True, sort="created_utc", limit=3)
    assert [d.message for d in first] == ["p0-0", "p0-1", "p0-2"]
    token = first.search_after_token
    assert token is not None
    # a new point in time, from the token: the last document of day 0, then day 1
    second = repo.find(snapshot=True, sort="created_utc", limit=3, search_after=token)
    assert [d.message for d in second] == ["p0-3", "p1-0", "p1-1"]
    assert [h.index for h in second.hits] == [
        mapper.spec(DailyLog).partition_name(DAYS[0]),
        mapper.spec(DailyLog).partition_name(DAYS[1]),
        mapper.spec(DailyLog).partition_name(DAYS[1]),
    ]
    rest: list[str] = []
    assert second.next_page()
    while True:
        rest += [d.message for d in second]
        if not second.next_page():
            break
    assert rest == [d.message for d in docs[6:]]


def test_a_session_s_snapshot_reads_cover_every_partition(mapper: em.Mapper) -> None:
    docs = _fill(mapper, DailyLog)
    with mapper.session() as session:
        results = session.find(DailyLog, snapshot="1m", sort="message", limit=100)
        assert [d.message for d in results] == [d.message for d in docs]
        assert results[0] is session.get(DailyLog, docs[0].id)  # in the identity map


@pytest.mark.parametrize("model", [DailyLog, MonthlyAudit])
def test_batch_process_gives_every_partition_s_documents(mapper: em.Mapper, model: Model) -> None:
    docs = _fill(mapper, model)
    batches: list[list[str]] = []
    processed = mapper.repository(model).batch_process(
        None, lambda batch: batches.append([_text(d) for d in batch]), batch_size=5
    )
    assert processed == len(docs)
    assert sorted(t for batch in batches for t in batch) == sorted(_text(d) for d in docs)
    assert [len(b) for b in batches] == [5, 5, 2]


def test_batch_process_in_date_order_gives_the_global_date_order(mapper: em.Mapper) -> None:
    docs = _fill(mapper, DailyLog)
    seen: list[str] = []
    mapper.repository(DailyLog).batch_process(
        None, lambda batch: seen.extend(d.message for d in batch), batch_size=5, sort="-created_utc"
    )
    assert seen == [d.message for d in reversed(docs)]


# -- by-query writes ------------------------------------------------------------------------


@pytest.mark.parametrize("model", [DailyLog, CachedLog])
def test_a_partial_patch_all_changes_every_partition(
    mapper: em.Mapper, es_client: Elasticsearch, model: Model
) -> None:
    docs = _fill(mapper, model)
    repo = mapper.repository(model)
    changed = repo.patch_all(None, em.PartialPatch({"message": "patched"}), consistency="wait")
    assert changed == len(docs)
    assert repo.count("message:patched") == len(docs)
    for doc in docs:  # each in its own partition still
        assert repo.get(doc.id).message == "patched"
    assert list(_partitions(es_client, mapper, model).values()) == [PER_PARTITION] * 3


def test_a_script_patch_all_on_a_cached_model_changes_every_partition(
    mapper: em.Mapper,
) -> None:
    docs = _fill(mapper, CachedLog)
    repo = mapper.repository(CachedLog)
    script = em.ScriptPatch("ctx._source.message = ctx._source.message + '!'")
    assert repo.patch_all(None, script, consistency="wait") == len(docs)
    assert sorted(d.message for d in repo.find(limit=100)) == sorted(f"{d.message}!" for d in docs)


def test_a_patch_all_with_a_filter_changes_the_matches_of_every_partition(
    mapper: em.Mapper,
) -> None:
    _fill(mapper, CachedLog)
    repo = mapper.repository(CachedLog)
    matches = "message:p0-1 OR message:p1-2 OR message:p2-3"
    assert repo.patch_all(matches, em.PartialPatch({"message": "x"}), consistency="wait") == 3
    assert repo.count("message:x") == 3


def test_remove_all_on_a_cached_model_removes_every_partition_s_documents(
    mapper: em.Mapper, es_client: Elasticsearch
) -> None:
    docs = _fill(mapper, CachedLog)
    repo = mapper.repository(CachedLog)
    assert repo.remove_all(None, consistency="wait") == len(docs)
    assert repo.count() == 0
    assert list(_partitions(es_client, mapper, CachedLog).values()) == [0, 0, 0]


def test_remove_all_with_removal_receivers_scans_every_partition(mapper: em.Mapper) -> None:
    docs = _fill(mapper, MonthlyAudit)
    removed: list[str] = []

    def note(sender: Any, **kwargs: Any) -> None:
        removed.extend(str(d.value.id) for d in kwargs.get("documents") or [])

    with signals.documents_removing.connected_to(note, sender=MonthlyAudit):
        count = mapper.repository(MonthlyAudit).remove_all("action:p*", consistency="wait")
    assert count == len(docs)
    assert sorted(removed) == sorted(str(d.id) for d in docs)
    assert mapper.repository(MonthlyAudit).count() == 0


def test_the_by_query_requests_cover_every_partition(
    make_mapper: MakeMapper, url: str, es_client: Elasticsearch
) -> None:
    """An uncached model's script ``patch_all`` is one ``_update_by_query`` and its
    ``remove_all`` one ``_delete_by_query``, sent on the partitions named one by one (the
    local server alone ran them on one index of the umbrella alias; Elasticsearch, and the
    ClusterProxy, on every index of it)."""
    mapper = make_mapper(DailyLog, MonthlyAudit, url=url, clock=FakeClock(NOW))
    mapper.configure_indexes()
    for model in (DailyLog, MonthlyAudit):
        docs = _fill(mapper, model)
        repo = mapper.repository(model)
        field = "action" if model is MonthlyAudit else "message"
        script = em.ScriptPatch(f"ctx._source.{field} = ctx._source.{field} + '!'")
        assert repo.patch_all(None, script, consistency="wait") == len(docs)
        assert sorted(_text(d) for d in repo.find(limit=100)) == sorted(
            f"{_text(d)}!" for d in docs
        )
        assert repo.remove_all(None, consistency="wait") == len(docs)
        assert list(_partitions(es_client, mapper, model).values()) == [0, 0, 0]


def test_the_by_query_requests_are_one_each_through_a_cluster(
    make_mapper: MakeMapper, cluster: ClusterProxy
) -> None:
    """One ``_update_by_query`` and one ``_delete_by_query`` per call, whatever the number
    of partitions."""
    mapper = make_mapper(DailyLog, url=cluster.url, clock=FakeClock(NOW))
    mapper.configure_indexes()
    docs = _fill(mapper, DailyLog)
    repo = mapper.repository(DailyLog)
    cluster.reset_counts()
    script = em.ScriptPatch("ctx._source.message = ctx._source.message + '!'")
    assert repo.patch_all(None, script, consistency="wait") == len(docs)
    assert cluster.count(r"/_update_by_query$") == 1
    assert repo.remove_all(None, consistency="wait") == len(docs)
    assert cluster.count(r"/_delete_by_query$") == 1


def test_by_query_writes_of_a_model_without_partitions_send_nothing(
    make_mapper: MakeMapper, cluster: ClusterProxy
) -> None:
    mapper = make_mapper(DailyLog, url=cluster.url, clock=FakeClock(NOW))
    mapper.configure_indexes()
    repo = mapper.repository(DailyLog)
    cluster.reset_counts()
    assert repo.patch_all(None, em.ScriptPatch("ctx._source.message = 'x'")) == 0
    assert repo.remove_all(None) == 0
    assert cluster.count(r"_by_query$") == 0


# -- pruned ranges --------------------------------------------------------------------------


def test_a_pruned_snapshot_over_a_day_without_partition_finds_the_others(
    mapper: em.Mapper,
) -> None:
    """The range starts a day before the first partition: its dated alias does not exist.
    Opened without ``ignore_unavailable``, Elasticsearch answers 404 and the read found
    nothing."""
    docs = _fill(mapper, DailyLog)
    repo = mapper.repository(DailyLog)
    pruned = (DAYS[0] - dt.timedelta(days=1), NOW)
    results = repo.find(partitions=pruned, snapshot=True, sort="message", limit=100)
    assert [d.message for d in results] == [d.message for d in docs]
    seen: list[str] = []
    repo.batch_process(None, lambda b: seen.extend(d.message for d in b), partitions=pruned)
    assert sorted(seen) == sorted(d.message for d in docs)
    # the two newest days only
    recent = repo.find(partitions=(DAYS[1], NOW), snapshot=True, limit=100)
    assert sorted(d.message for d in recent) == sorted(d.message for d in docs[4:])
    # nothing in range: an empty result, not an error
    empty = repo.find(
        partitions=(NOW - dt.timedelta(days=9), NOW - dt.timedelta(days=8)), snapshot=True
    )
    assert (empty.total, len(empty), empty.has_more) == (0, 0, False)


def test_a_model_without_partitions_reads_empty_through_a_snapshot(mapper: em.Mapper) -> None:
    repo = mapper.repository(DailyLog)
    assert len(repo.find(snapshot=True)) == 0
    assert repo.batch_process(None, lambda b: None) == 0
    assert repo.patch_all(None, em.PartialPatch({"message": "x"})) == 0


def test_many_partitions_are_named_by_yearly_wildcards_that_miss_other_indexes(
    mapper: em.Mapper, es_client: Elasticsearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the request-line budget the partitions are named ``<umbrella>-<year>.*``:
    every dated alias, never a physical partition out of the umbrella alias."""
    monkeypatch.setattr(_pit_target, "MAX_TARGET_CHARS", 10)
    docs = _fill(mapper, MonthlyAudit)
    spec = mapper.spec(MonthlyAudit)
    # an old-version partition out of the aliases (a reindex leftover) with a document
    leftover = spec.partition_name(MONTHS[0], version=0)
    es_client.index(index=leftover, id="stale", document={"action": "stale"}, refresh=True)
    repo = mapper.repository(MonthlyAudit)
    older = MonthlyAudit(action="p-old", created_utc=dt.datetime(2025, 12, 31, 9, tzinfo=UTC))
    repo.add(older, consistency="immediate")
    seen: list[str] = []
    assert repo.batch_process(None, lambda b: seen.extend(d.action for d in b)) == 13
    assert sorted(seen) == sorted([older.action, *(d.action for d in docs)])
    results = repo.find(snapshot=True, sort="action", limit=100)
    assert [d.action for d in results] == sorted(seen)
