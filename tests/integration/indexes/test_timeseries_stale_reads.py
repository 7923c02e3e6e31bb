"""A time-series read by id that falls back to a search never shows a deleted or stale copy.

An ObjectId id missing from its period's partition (a real-time GET) is searched for on the
umbrella alias: a search shows what each partition held at its last refresh, so a document
deleted (or replaced) since would be shown as it was. Every such hit is confirmed with a
real-time ``_mget`` on the index it came from: its answer wins. The partitions here never
refresh on their own (``refresh_interval: -1``), so "not refreshed yet" is certain.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.cache import InMemoryCache
from esmapper.indexes.reads import get_document, get_documents, search_documents
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .models import Event

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)
DAY = dt.timedelta(days=1)

Reader = Callable[[str], "Event | None"]


def _partition(es_client: Elasticsearch, prefix: str, day: dt.datetime) -> str:
    """The dated alias of ``day``'s partition, made to exist (a write of the model), and
    made never to refresh on its own."""
    alias = f"{prefix}events-{day:%Y.%m.%d}"
    es_client.indices.put_settings(index=alias, settings={"index": {"refresh_interval": "-1"}})
    return alias


def _stray(es_client: Elasticsearch, alias: str, id: str, kind: str) -> None:
    """Store ``id`` in the partition behind ``alias`` (another program's write, outside the
    id's period), not refreshed."""
    es_client.index(index=alias, id=id, document={"happened": NOW.isoformat(), "kind": kind})


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    mapper = make_mapper(Event, clock=FakeClock(NOW))
    repo = mapper.repository(Event)
    for d in (0, 1, 2):  # three partitions
        repo.add(Event(happened=NOW - d * DAY, kind="seed"), consistency="immediate")
    return mapper


def _readers(mapper: em.Mapper) -> dict[str, Reader]:
    """Every by-id read of one document: the repository's get, get_many and exists, a
    session's get, and a cached get (its fill)."""
    repo = mapper.repository(Event)

    def session_get(id: str) -> Event | None:
        with mapper.session() as session:
            return session.get(Event, id)

    def many(id: str) -> Event | None:
        found = repo.get_many([id])
        return found[0] if found else None

    def exists(id: str) -> Event | None:
        return Event(id=id, kind="?") if repo.exists(id) else None

    return {"get": repo.get, "get_many": many, "exists": exists, "session": session_get}


def test_a_document_deleted_since_the_last_refresh_is_not_found(
    mapper: em.Mapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    spec = mapper.spec(Event)
    own = _partition(es_client, index_prefix, NOW - 2 * DAY)
    other = _partition(es_client, index_prefix, NOW)
    oid = str(em.ObjectId.new(at=NOW - 2 * DAY))
    _stray(es_client, other, oid, "stray")  # stored outside its id's period
    es_client.indices.refresh(index=f"{index_prefix}events")
    assert [h["_id"] for h in search_documents(es_client, spec, [oid])] == [oid]
    assert mapper.repository(Event).get(oid) is not None  # found through the search

    es_client.delete(index=other, id=oid)  # not refreshed: a search still shows it
    assert es_client.search(index=other, query={"ids": {"values": [oid]}})["hits"]["hits"]
    assert get_document(es_client, spec, oid) is None
    assert get_document(es_client, spec, oid, source_includes=()) is None
    assert get_documents(es_client, spec, [oid]) == []
    for name, read in _readers(mapper).items():
        assert read(oid) is None, name
    assert own != other


def test_a_document_removed_from_its_own_partition_is_not_found_before_a_refresh(
    mapper: em.Mapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """The reviewer's case: the app removes a document and reads it again at once."""
    repo, spec = mapper.repository(Event), mapper.spec(Event)
    _partition(es_client, index_prefix, NOW - DAY)
    doc = repo.add(Event(happened=NOW - DAY, kind="x"), consistency="immediate")
    repo.remove(doc.id)  # not refreshed: a search still shows it
    hits = es_client.search(index=spec.alias, query={"ids": {"values": [doc.id]}})
    assert hits["hits"]["hits"]
    for name, read in _readers(mapper).items():
        assert read(doc.id) is None, name


def test_a_document_replaced_since_the_last_refresh_reads_as_stored(
    mapper: em.Mapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    spec = mapper.spec(Event)
    other = _partition(es_client, index_prefix, NOW - DAY)
    oid = str(em.ObjectId.new(at=NOW - 2 * DAY))
    _stray(es_client, other, oid, "old")
    es_client.indices.refresh(index=f"{index_prefix}events")
    _stray(es_client, other, oid, "new")  # not refreshed: a search shows "old"
    stored = es_client.get(index=other, id=oid)

    raw = get_document(es_client, spec, oid)
    assert raw is not None and raw["_source"]["kind"] == "new"
    assert (raw["_seq_no"], raw["_primary_term"]) == (stored["_seq_no"], stored["_primary_term"])
    (many,) = get_documents(es_client, spec, [oid])
    assert many["_source"]["kind"] == "new" and many["_seq_no"] == stored["_seq_no"]
    for name, read in _readers(mapper).items():
        if name != "exists":
            found = read(oid)
            assert found is not None and found.kind == "new", name


def test_a_cached_read_never_stores_a_deleted_copy(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(Event, clock=FakeClock(NOW), cache=InMemoryCache())
    repo = mapper.repository(Event)
    repo.add(Event(happened=NOW, kind="seed"), consistency="immediate")
    other = _partition(es_client, index_prefix, NOW)
    oid, gone = (str(em.ObjectId.new(at=NOW - d * DAY)) for d in (2, 3))
    _stray(es_client, other, oid, "kept")
    _stray(es_client, other, gone, "gone")
    es_client.indices.refresh(index=f"{index_prefix}events")
    es_client.delete(index=other, id=gone)
    _stray(es_client, other, oid, "newer")

    assert repo.get(gone, cache=True) is None
    found = repo.get_many([oid, gone], cache=True)
    assert [(d.id, d.kind) for d in found] == [(oid, "newer")]
    es_client.delete(index=other, id=oid)
    es_client.indices.refresh(index=f"{index_prefix}events")
    cached = repo.get(oid, cache=True)  # the entry the fill stored: the live copy
    assert cached is not None and cached.kind == "newer"
    assert repo.get(gone, cache=True) is None


def test_of_two_copies_the_live_one_is_read(
    mapper: em.Mapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    spec = mapper.spec(Event)
    newer = _partition(es_client, index_prefix, NOW)
    older = _partition(es_client, index_prefix, NOW - DAY)
    oid = str(em.ObjectId.new(at=NOW - 2 * DAY))
    _stray(es_client, newer, oid, "in-newer")
    _stray(es_client, older, oid, "in-older")
    es_client.indices.refresh(index=f"{index_prefix}events")
    raw = get_document(es_client, spec, oid)  # both live: the newest partition's
    assert raw is not None and raw["_source"]["kind"] == "in-newer"

    es_client.delete(index=newer, id=oid)  # not refreshed: the search shows both
    searched = es_client.search(index=f"{index_prefix}events", query={"ids": {"values": [oid]}})
    assert len(searched["hits"]["hits"]) == 2
    assert [h["_source"]["kind"] for h in search_documents(es_client, spec, [oid])] == ["in-older"]
    raw = get_document(es_client, spec, oid)
    assert raw is not None and raw["_source"]["kind"] == "in-older"
    assert [h["_source"]["kind"] for h in get_documents(es_client, spec, [oid])] == ["in-older"]


def test_the_confirmation_costs_one_mget_per_batch_and_nothing_on_the_normal_path(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(Event, clock=FakeClock(NOW), url=proxy.url)
    repo = mapper.repository(Event)
    stored = repo.add(
        [Event(happened=NOW - d * DAY, kind=str(d)) for d in (0, 1)], consistency="immediate"
    )
    other = _partition(es_client, index_prefix, NOW)
    strays = [str(em.ObjectId.new(at=NOW - d * DAY)) for d in (2, 3, 4)]
    for id in strays:
        _stray(es_client, other, id, "stray")
    es_client.indices.refresh(index=f"{index_prefix}events")
    es_client.delete(index=other, id=strays[0])

    def sent() -> list[str]:
        paths = [f"{r.method} {r.path.rsplit('/', 1)[-1]}" for r in proxy.requests]
        proxy.reset_counts()
        return paths

    proxy.reset_counts()
    assert repo.get(stored[0].id) is not None  # in its period: one real-time GET
    assert sent() == [f"GET {stored[0].id}"]
    assert len(repo.get_many([d.id for d in stored])) == 2
    assert sent() == ["POST _mget"]
    assert repo.get(strays[1]) is not None  # the GET misses, the search, its confirmation
    assert sent() == [f"GET {strays[1]}", "POST _search", "POST _mget"]
    assert repo.get(strays[0]) is None
    assert sent() == [f"GET {strays[0]}", "POST _search", "POST _mget"]
    assert repo.get(str(em.ObjectId.new(at=NOW))) is None  # the search finds nothing
    assert [p.split(" ")[1] for p in sent()][1:] == ["_search"]
    found = repo.get_many([*strays, stored[1].id])  # one confirmation for the batch
    assert sorted(d.id for d in found) == sorted([*strays[1:], stored[1].id])
    assert sent() == ["POST _mget", "POST _search", "POST _mget"]


class Shift(em.Document, em.SoftDeletes):
    class Index:
        name = "shifts"
        kind = "daily"
        date_field = "starts"

    starts: dt.datetime | None = None


def test_a_soft_delete_since_the_last_refresh_hides_the_document(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """``exists`` reads ``is_deleted`` only: the confirmation reads the same fields."""
    mapper = make_mapper(Shift, clock=FakeClock(NOW))
    repo = mapper.repository(Shift)
    repo.add(Shift(starts=NOW), consistency="immediate")
    other = f"{index_prefix}shifts-{NOW:%Y.%m.%d}"
    es_client.indices.put_settings(index=other, settings={"index": {"refresh_interval": "-1"}})
    oid = str(em.ObjectId.new(at=NOW - 2 * DAY))
    source = {"starts": NOW.isoformat(), "is_deleted": False}
    es_client.index(index=other, id=oid, document=source)
    es_client.indices.refresh(index=f"{index_prefix}shifts")
    assert repo.exists(oid) and repo.get(oid) is not None
    es_client.index(index=other, id=oid, document={**source, "is_deleted": True})
    assert not repo.exists(oid)
    assert repo.get(oid) is None and repo.get_many([oid]) == []
    deleted = repo.get(oid, soft_deletes="deleted")
    assert deleted is not None and deleted.is_deleted
    assert repo.exists(oid, soft_deletes="all")
