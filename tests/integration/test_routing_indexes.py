"""Routing by an id field (:mod:`esmapper._routing`) through the index machinery: a version
bump with writes during the copy, a re-key, a session with the document cache, behind
the ``cluster`` proxy (a server that refuses every by-id request without a routing:
``routing_missing_exception``). Every by-id request of these paths gets the id's request
parameters from the ``read_params`` point (:func:`esmapper.indexes._lookup.read_params`)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex
from esmapper.indexes.maintenance import maintain
from esmapper.rekey import rekey
from esmapper.testing._rules import Exchange, Reply
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import FakeClock, MakeMapper

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)

#: three shards, so a routing picks one; deletes forgotten at once, so a document removed
#: and added again during the copy starts over at ``_version`` 1 (its copy is then stale)
SETTINGS: dict[str, Any] = {
    "number_of_shards": 3,
    "number_of_replicas": 0,
    "index": {"gc_deletes": "0s"},
}


class OrderV1(em.Document, em.Versioned):
    class Index:
        name = "routed-bump"
        version = 1
        settings = SETTINGS
        id_fields = ("customer", "number")
        routing_field = "customer"

    customer: str = em.field(em.Keyword(), default="")
    number: str = em.field(em.Keyword(), default="")
    total: int = em.field(em.Integer(), default=0)


class OrderV2(em.Document, em.Versioned):
    class Index:
        name = "routed-bump"
        version = 2
        settings = SETTINGS
        id_fields = ("customer", "number")
        routing_field = "customer"

    customer: str = em.field(em.Keyword(), default="")
    number: str = em.field(em.Keyword(), default="")
    total: int = em.field(em.Integer(), default=0)


CUSTOMERS = ("acme", "globex", "initech", "umbrella")


def _orders() -> list[OrderV1]:
    return [OrderV1(customer=c, number=str(n), total=n) for c in CUSTOMERS for n in range(3)]


def _sources(es: Elasticsearch, index: str) -> dict[str, int]:
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000)["hits"]["hits"]
    return {h["_id"]: h["_source"]["total"] for h in hits}


def test_a_version_bump_with_writes_during_the_copy(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    # During the copy: a delete (the new index then has an extra copy: deleted by id), a
    # document removed and added again under its id (its copy is stale: compared by
    # ``_mget`` in both indexes, deleted by id, copied again), an add and a save (caught up).
    seeded = make_mapper(OrderV1, url=cluster.url, configure=True).repository(OrderV1)
    seeded.add(_orders())
    mapper = make_mapper(OrderV2, url=cluster.url)
    repo = mapper.repository(OrderV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove("acme:2")
            repo.remove("globex:1")
            es_client.indices.refresh(index=mapper.spec(OrderV2).alias)
            repo.add(OrderV2(customer="globex", number="1", total=555))
            repo.add(OrderV2(customer="initech", number="9", total=9))
            saved = repo.require("umbrella:0")
            saved.total = 100
            repo.save(saved)

    result = reindex(mapper, OrderV2, progress=during)
    assert (result.status, result.removed, result.old_count, result.new_count) == (
        "reindexed",
        1,
        12,
        12,
    )
    expected = {f"{o.customer}:{o.number}": o.total for o in _orders()}
    del expected["acme:2"]
    expected |= {"globex:1": 555, "initech:9": 9, "umbrella:0": 100}
    assert _sources(es_client, f"{index_prefix}routed-bump-v2") == expected
    assert {d.id: d.total for d in repo.get_many(list(expected))} == expected
    copy = es_client.get(index=f"{index_prefix}routed-bump-v2", id="globex:1", routing="globex")
    assert copy["_routing"] == "globex" and copy["_source"]["total"] == 555
    assert mapper.configure_indexes()  # configured again on the new index: nothing to change


class _HitsCarryRouting:
    """Search hits with ``_routing``, as Elasticsearch answers for a routed document (the
    local server leaves it out): the ``customer`` its documents were written with."""

    def before(self, exchange: Exchange) -> Reply | None:
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        body = reply.json()
        hits = ((body or {}).get("hits") or {}).get("hits") if isinstance(body, dict) else None
        if not hits or "_search" not in exchange.path:
            return reply
        for hit in hits:
            routing = (hit.get("_source") or {}).get("routed_by")
            if routing is not None:
                hit["_routing"] = routing
        return Reply(reply.status, json.dumps(body).encode(), reply.headers)


class Ticket(em.Document):
    class Index:
        name = "routed-tickets"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("customer", "number")
        routing_field = "customer"

    customer: str = em.field(em.Keyword(), default="")
    number: str = em.field(em.Keyword(), default="")


def test_a_rekey_moves_each_document_to_the_routing_of_its_new_id(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch
) -> None:
    # Documents another program wrote under legacy ids, routed by its own key: the new id
    # is created with the routing reads of it use, the old one deleted with its own.
    cluster.add_rule(_HitsCarryRouting())
    mapper = make_mapper(Ticket, url=cluster.url, configure=True)
    physical = mapper.spec(Ticket).physical_name()
    for customer, number in (("acme", "1"), ("globex", "2")):
        es_client.index(
            index=physical,
            id=f"{customer}_{number}",
            routing=f"legacy-{customer}",
            document={"customer": customer, "number": number, "routed_by": f"legacy-{customer}"},
            refresh=True,
        )
    lines: list[str] = []
    dry = rekey(mapper, Ticket, echo=lines.append)
    assert (dry.to_rewrite, dry.failed) == (2, 0)
    assert sorted(lines) == ["DRY RUN acme_1 -> acme:1", "DRY RUN globex_2 -> globex:2"]

    report = rekey(mapper, Ticket, apply=True, echo=lambda _: None)
    assert (report.rewritten, report.failed) == (2, 0)
    repo = mapper.repository(Ticket)
    assert sorted(t.id for t in repo.get_many(["acme:1", "globex:2"])) == ["acme:1", "globex:2"]
    assert es_client.get(index=physical, id="acme:1", routing="acme")["_routing"] == "acme"
    assert not es_client.exists(index=physical, id="acme_1", routing="legacy-acme")
    assert repo.count(consistency="immediate") == 2


def test_a_session_with_the_document_cache(make_mapper: MakeMapper, cluster: ClusterProxy) -> None:
    cache = em.InMemoryCache()
    mapper = make_mapper(OrderV1, url=cluster.url, configure=True, cache=cache)
    repo = mapper.repository(OrderV1)
    with mapper.session() as session:
        session.add(OrderV1(customer="acme", number="1", total=1))
        session.add(OrderV1(customer="globex", number="2", total=2))
    with mapper.session() as session:
        held = session.get(OrderV1, "acme:1")
        assert held is not None and held.total == 1
        held.total = 10
        gone = session.get(OrderV1, "globex:2")
        assert gone is not None
        session.remove(gone)
    assert repo.get("globex:2") is None

    cluster.reset_counts()
    first = repo.get("acme:1", cache=True)
    again = repo.get("acme:1", cache=True)
    assert first is not None and again is not None and (first.total, again.total) == (10, 10)
    gets = [r for r in cluster.requests if "/_doc/" in r.path]
    assert len(gets) == 1 and "routing=acme" in gets[0].query  # the second came from the cache
    assert [key for key in cache._cache if "acme" in key] and len(
        [key for key in cache._cache if "acme:1" in key or "acme%3A1" in key]
    ) == 1


class Reading(em.Document):
    """A time-series model routed by its device: a composed id lives in whichever daily
    partition its date picks, so reads by id look in every partition (``_mget``)."""

    class Index:
        name = "routed-readings"
        kind = "daily"
        date_field = "taken"
        max_age = dt.timedelta(days=3)
        settings = {"number_of_shards": 2, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("device", "seq")
        routing_field = "device"

    device: str = em.field(em.Keyword(), default="")
    seq: str = em.field(em.Keyword(), default="")
    taken: dt.datetime | None = None
    value: int = em.field(em.Integer(), default=0)


def test_a_routed_time_series_model_configured_read_and_maintained(
    make_mapper: MakeMapper, cluster: ClusterProxy
) -> None:
    clock = FakeClock(NOW)
    mapper = make_mapper(Reading, url=cluster.url, clock=clock, configure=True)
    repo = mapper.repository(Reading)
    old_day, today = NOW - dt.timedelta(days=2), NOW
    repo.add(
        [
            Reading(device="d1", seq="1", taken=old_day, value=1),
            Reading(device="d2", seq="1", taken=today, value=2),
        ]
    )
    assert {r.id: r.value for r in repo.get_many(["d1:1", "d2:1", "d3:1"])} == {
        "d1:1": 1,
        "d2:1": 2,
    }
    assert repo.exists("d1:1") and not repo.exists("d1:2")
    repo.patch("d1:1", em.PartialPatch({"value": 11}))
    repo.patch("d2:1", em.ActionPatch(lambda r: setattr(r, "value", 22)))
    assert [repo.require(i).value for i in ("d1:1", "d2:1")] == [11, 22]
    assert mapper.configure_indexes(force=True)

    clock.now = NOW + dt.timedelta(days=2)  # the older partition is past max_age
    report = maintain(mapper, [Reading])
    assert len(report.deleted) == 1
    assert repo.get("d1:1") is None and repo.require("d2:1").value == 22
    repo.remove("d2:1")
    assert repo.get("d2:1") is None
