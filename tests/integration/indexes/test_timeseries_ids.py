"""One id per time-series model, whatever its date.

Before the fix: ``add`` of an id stored in another day's partition stored a second document,
and ``remove(id)``/``patch(id)``/``get(id)`` right after adding a document dated another day
looked it up by search (near-real-time), missed it, and answered "already gone" / not
found. Now ids whose partition is not certain are looked up in real time (``_mget``) on
every partition; ObjectId ids (generated ones included) need no lookup.
"""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from elasticsearch import ApiError, Elasticsearch

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .models import Event

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)
EARLIER = NOW - dt.timedelta(days=2)


class Reading(em.Document):
    """Ids composed from ``sensor`` and ``seq``; dated by ``taken``."""

    class Index:
        name = "readings"
        kind = "daily"
        date_field = "taken"
        id_fields = ("sensor", "seq")
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    sensor: str = em.field(em.Keyword(), default="")
    seq: int = em.field(em.Integer(), default=0)
    taken: dt.datetime | None = None


def _stored(client: Elasticsearch, alias: str, id: str) -> list[str]:
    """The partitions holding ``id`` (after a refresh)."""
    client.indices.refresh(index=alias)
    hits = client.search(index=alias, query={"ids": {"values": [id]}})["hits"]["hits"]
    return sorted(h["_index"] for h in hits)


def test_add_of_an_id_stored_in_another_partition_is_a_duplicate(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    repo.add(Event(id="k1", happened=EARLIER, kind="first"))

    with pytest.raises(em.DuplicateDocumentError) as caught:  # no refresh in between
        repo.add(Event(id="k1", happened=NOW, kind="second"))
    assert caught.value.ids == ("k1",)
    assert _stored(es_client, f"{index_prefix}events", "k1") == [
        f"{index_prefix}events-v1-2026.03.08"
    ]
    got = repo.get("k1")
    assert got is not None and got.kind == "first"


def test_one_call_adding_an_id_twice_with_two_dates_stores_it_once(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    with pytest.raises(em.DuplicateDocumentError) as caught:
        repo.add([Event(id="k2", happened=EARLIER), Event(id="k2", happened=NOW)])
    assert len(caught.value.succeeded) == 1 and caught.value.ids == ("k2",)
    assert _stored(es_client, f"{index_prefix}events", "k2") == [
        f"{index_prefix}events-v1-2026.03.08"
    ]


def test_composed_ids_are_unique_across_partitions_in_a_session_flush(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(Reading, clock=FakeClock(NOW))
    with mapper.session() as session:
        session.add(Reading(sensor="s1", seq=1, taken=EARLIER))
    late = Reading(sensor="s1", seq=1, taken=NOW)  # the same reading, re-delivered a day later
    session = mapper.session()
    session.add(late)
    with pytest.raises(em.DuplicateDocumentError):
        session.flush()
    assert late in session.new  # failed: still pending
    session.close()
    assert _stored(es_client, f"{index_prefix}readings", "s1:1") == [
        f"{index_prefix}readings-v1-2026.03.08"
    ]


def test_save_of_a_document_not_loaded_replaces_the_copy_where_it_lives(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    repo.add(Event(id="k3", happened=EARLIER, kind="old"))
    repo.save(Event(id="k3", happened=NOW, kind="replaced"))
    assert _stored(es_client, f"{index_prefix}events", "k3") == [
        f"{index_prefix}events-v1-2026.03.08"
    ]
    got = repo.get("k3")
    assert got is not None and got.kind == "replaced"


def test_by_id_calls_right_after_an_add_dated_another_day_see_it(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    repo.add([Event(id=f"k{i}", happened=EARLIER, kind="old") for i in range(4, 8)])
    # no refresh anywhere below: every call is real-time
    got = repo.get("k4")
    assert got is not None and got.kind == "old"
    assert repo.exists("k4")
    assert {d.id for d in repo.get_many(["k4", "k5", "missing"])} == {"k4", "k5"}
    repo.patch("k5", em.PartialPatch({"kind": "patched"}))
    repo.patch("k6", em.ActionPatch(lambda e: setattr(e, "kind", "acted")))
    patched, acted = repo.get("k5"), repo.get("k6")
    assert patched is not None and patched.kind == "patched"
    assert acted is not None and acted.kind == "acted"

    repo.remove("k7")  # today's partition does not hold it: the remove must find it
    repo.remove("k4")
    assert repo.get("k7") is None and repo.get("k4") is None
    assert _stored(es_client, f"{index_prefix}events", "k7") == []


def test_a_remove_with_removal_receivers_loads_in_real_time_too(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    repo.add(Event(id="k8", happened=EARLIER, kind="old"))
    seen: list[str] = []

    def on_removed(sender: type, documents: list[em.ModifiedDocument], **_: object) -> None:
        seen.extend(d.value.kind for d in documents)

    with em.signals.documents_removed.connected_to(on_removed, sender=Event):
        repo.remove("k8")
    assert seen == ["old"]
    assert _stored(es_client, f"{index_prefix}events", "k8") == []


def test_remove_of_an_id_stored_nowhere_is_a_no_op_and_creates_nothing(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    repo.add(Event(id="k9", happened=EARLIER))
    repo.remove(["never-stored", str(em.ObjectId.new(at=NOW - dt.timedelta(days=5)))])
    assert sorted(es_client.indices.get_alias(index=f"{index_prefix}events-*").body) == [
        f"{index_prefix}events-v1-2026.03.08"
    ]
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch("never-stored", em.PartialPatch({"kind": "x"}))


def test_generated_and_objectid_ids_need_no_lookup(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW), url=proxy.url).repository(Event)
    first = repo.add(Event(happened=EARLIER))
    repo.add([Event(happened=EARLIER) for _ in range(3)])
    with pytest.raises(em.DuplicateDocumentError):  # the id's own partition says so
        repo.add(Event(id=first.id, happened=EARLIER + dt.timedelta(hours=1)))
    repo.remove(first.id)
    assert proxy.count(r"/_mget$") == 0
    assert proxy.count(rf"^/_alias/{index_prefix}events$") == 0
    assert proxy.count(r"/_search$") == 0

    repo.add(Event(id="supplied", happened=EARLIER))  # the lookup: one alias listing, one mget
    assert proxy.count(rf"^/_alias/{index_prefix}events$") == 1
    assert proxy.count(r"/_mget$") == 1


def test_a_failed_lookup_is_not_taken_for_absence(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(Event, clock=FakeClock(NOW), url=proxy.url).repository(Event)
    repo.add(Event(id="k10", happened=EARLIER))
    proxy.reply_status(500, path=r"/_mget$")
    with pytest.raises(ApiError):
        repo.remove("k10")
    proxy.reply_status(500, path=r"/_mget$")
    with pytest.raises(ApiError):
        repo.add(Event(id="k10", happened=NOW))
    assert _stored(es_client, f"{index_prefix}events", "k10") == [
        f"{index_prefix}events-v1-2026.03.08"
    ]


def test_a_duplicate_made_elsewhere_is_removed_copy_by_copy(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = index_prefix
    repo = make_mapper(Event, clock=FakeClock(NOW)).repository(Event)
    repo.add(Event(id="twin", happened=EARLIER))
    repo.add(Event(id="other", happened=NOW))  # today's partition exists too
    # a copy in today's partition written around esmapper (an older version, another tool)
    es_client.index(index=f"{p}events-v1-2026.03.10", id="twin", document={"kind": "copy"})

    got = repo.get("twin")
    assert got is not None and got.kind == "copy"  # the newest partition's copy
    with caplog.at_level(logging.WARNING, logger="esmapper.indexes"):
        repo.remove("twin")
    assert "stored in 2 partitions" in caplog.text
    assert _stored(es_client, f"{p}events", "twin") == [f"{p}events-v1-2026.03.08"]
    repo.remove("twin")
    assert _stored(es_client, f"{p}events", "twin") == []


def test_session_reads_and_removes_right_after_an_add_dated_another_day(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(Event, clock=FakeClock(NOW))
    mapper.repository(Event).add(
        [Event(id="s1", happened=EARLIER, kind="a"), Event(id="s2", happened=EARLIER)]
    )
    with mapper.session() as session:
        loaded = session.get(Event, "s1")  # real-time, no refresh
        assert loaded is not None and loaded.kind == "a"
        session.remove(loaded)
        # not loaded, and its date names today: the flush must find the stored copy
        session.remove(Event(id="s2", happened=NOW))
    assert _stored(es_client, f"{index_prefix}events", "s1") == []
    assert _stored(es_client, f"{index_prefix}events", "s2") == []


def test_exists_by_id_reads_no_source(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    """``exists(id)`` of a time-series model asks whether the id is stored, not for its
    ``_source`` (the GET of its dated alias, the lookup on every partition for another id)."""
    repo = make_mapper(Event, clock=FakeClock(NOW), url=proxy.url).repository(Event)
    dated = repo.add(Event(happened=EARLIER, kind="x" * 1000))
    repo.add(Event(id="plain-id", happened=EARLIER, kind="x" * 1000))
    proxy.reset_counts()

    assert repo.exists(dated.id) and repo.exists("plain-id")
    assert not repo.exists("missing-id")

    reads = [r for r in proxy.requests if r.path.endswith(("/_mget", f"/_doc/{dated.id}"))]
    assert reads, proxy.requests
    for read in reads:  # without a _source, or only what a rule reads
        assert "_source=false" in read.query or "_source_includes" in read.query, read
