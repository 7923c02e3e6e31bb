"""Parent/child documents (:mod:`esmapper._join`) through a version bump with writes during
the copy, on an index of three shards: every by-id request of the bump in the new index (the
deletes of what was removed meanwhile, the ``_mget`` comparing copies, the deletes of stale
copies) routes a child with the ``_routing`` its listing's hit carried
(:func:`esmapper.indexes._lookup.stored_params`), so it reaches the child's shard; unrouted,
a child removed during the copy would come back in the new index."""

from __future__ import annotations

import json
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex
from esmapper.rekey import rekey
from esmapper.testing._rules import Exchange, Reply, Rule
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

#: three shards, so a routing picks one; deletes forgotten at once, so a document removed
#: and added again during the copy starts over at ``_version`` 1 (its copy is then stale)
SETTINGS: dict[str, Any] = {
    "number_of_shards": 3,
    "number_of_replicas": 0,
    "index": {"gc_deletes": "0s"},
}


class Club(em.Document):
    class Index:
        name = "join-clubs"
        settings = SETTINGS
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Member(em.Document):
    class Index:
        name = "join-clubs"
        settings = SETTINGS
        parent = Club
        parent_field = "club_id"

    club_id: str | None = em.field(em.Keyword(), default=None)
    label: str = em.field(em.Keyword(), default="")


class ClubV2(em.Document):
    class Index:
        name = "join-clubs"
        version = 2
        settings = SETTINGS
        join_field = "relation"
        relation = "club"  # the class is renamed, the stored relation names stay

    name: str = em.field(em.Keyword(), default="")


class MemberV2(em.Document):
    class Index:
        name = "join-clubs"
        version = 2
        settings = SETTINGS
        parent = ClubV2
        parent_field = "club_id"
        relation = "member"

    club_id: str | None = em.field(em.Keyword(), default=None)
    label: str = em.field(em.Keyword(), default="")


class RenamedClub(em.Document):
    """Version 2 of Club under another class name, its relation name left to default."""

    class Index:
        name = "join-clubs"
        version = 2
        settings = SETTINGS
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class RenamedMember(em.Document):
    class Index:
        name = "join-clubs"
        version = 2
        settings = SETTINGS
        parent = RenamedClub
        parent_field = "club_id"
        relation = "member"

    club_id: str | None = em.field(em.Keyword(), default=None)
    label: str = em.field(em.Keyword(), default="")


def test_a_version_bump_that_renames_a_relation_is_refused_before_anything_is_copied(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """On a cluster every stored document of relation "club" would be refused by a
    mapping that declares "renamed_club" (unknown join name): refused up front, nothing
    created, the old index serving."""
    seeded = make_mapper(Club, Member, configure=True)
    seeded.repository(Club).add(Club(id="c1", name="one"))
    mapper = make_mapper(RenamedClub, RenamedMember)
    with pytest.raises(em.IndexConfigurationError, match=r"club.*Index.relation = "):
        reindex(mapper, RenamedClub)
    assert not es_client.indices.exists(index=f"{index_prefix}join-clubs-v2")
    assert (
        mapper.spec(RenamedClub).alias
        in es_client.indices.get_alias(index=f"{index_prefix}join-clubs-v1").body[
            f"{index_prefix}join-clubs-v1"
        ]["aliases"]
    )


def test_a_relation_option_must_be_a_name_of_a_join_model() -> None:
    with pytest.raises(em.IndexConfigurationError, match="must be a name"):

        class BadClub(em.Document):
            class Index:
                name = "join-bad"
                join_field = "relation"
                relation = "a-b"

    with pytest.raises(em.IndexConfigurationError, match="set join_field"):

        class Loner(em.Document):
            class Index:
                name = "join-loner"
                relation = "loner"


class _RoutedHits(Rule):
    """Search and scroll hits with ``_routing``, as Elasticsearch answers for a routed
    document (the local server leaves it out): a child's parent id, read from its
    ``_source`` on the server directly; keeps the bodies of ``_bulk`` and ``_mget``."""

    def __init__(self, es: Elasticsearch) -> None:
        self.es = es
        self.bulks: list[list[dict[str, Any]]] = []
        self.mgets: list[dict[str, Any]] = []

    def before(self, exchange: Exchange) -> Reply | None:
        if exchange.path.endswith("/_bulk"):
            lines = [json.loads(line) for line in exchange.body.splitlines() if line.strip()]
            self.bulks.append(lines)
        elif exchange.path.endswith("/_mget"):
            self.mgets.append({"path": exchange.path, **exchange.json()})
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        body = reply.json()
        hits = ((body or {}).get("hits") or {}).get("hits") if isinstance(body, dict) else None
        if not hits or "_search" not in exchange.path:
            return reply
        for hit in hits:
            if "_routing" in hit:
                continue
            found = self.es.search(
                index=hit["_index"],
                query={"ids": {"values": [hit["_id"]]}},
                source_includes=["relation"],
            )["hits"]["hits"]
            relation = found[0]["_source"].get("relation") if found else None
            if isinstance(relation, dict):
                hit["_routing"] = relation["parent"]
        return Reply(reply.status, json.dumps(body).encode(), reply.headers)


def _stored(es: Elasticsearch, index: str) -> dict[str, str]:
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000)["hits"]["hits"]
    return {h["_id"]: h["_source"].get("label", "") for h in hits}


def test_a_version_bump_deletes_and_compares_children_on_their_parents_shard(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    rule = _RoutedHits(es_client)
    cluster.add_rule(rule)
    seeded = make_mapper(Club, Member, url=cluster.url, configure=True)
    clubs = seeded.repository(Club).add([Club(id="c1", name="one"), Club(id="c2", name="two")])
    seeded.repository(Member).add(
        [Member(id=f"m{n}", club_id=clubs[n % 2].id, label="first") for n in range(10)]
    )
    mapper = make_mapper(ClubV2, MemberV2, url=cluster.url)
    members = mapper.repository(MemberV2)
    removed = [em.Id(f"m{n}", routing=f"c{n % 2 + 1}") for n in range(6)]
    again = [em.Id(f"m{n}", routing=f"c{n % 2 + 1}") for n in range(6, 9)]
    done: list[bool] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:
            done.append(True)
            members.remove(removed + again)
            es_client.indices.refresh(index=mapper.spec(MemberV2).alias)
            members.add(
                [MemberV2(id=str.__str__(i), club_id=i.routing, label="again") for i in again]
            )

    result = reindex(mapper, ClubV2, progress=during)
    assert result.status == "reindexed" and result.removed == len(removed)
    expected = {"c1": "", "c2": "", "m9": "first"} | {str.__str__(i): "again" for i in again}
    assert _stored(es_client, f"{index_prefix}join-clubs-v2") == expected
    # the requests of the bump in the new index route each child by its parent id
    deletes = [line["delete"] for lines in rule.bulks for line in lines if "delete" in line]
    late = {i: i.routing for i in removed + again}
    mine = [d for d in deletes if d["_index"] != mapper.spec(MemberV2).alias]
    assert mine and all(d.get("routing") == late[d["_id"]] for d in mine)
    entries = [doc for body in rule.mgets for doc in body.get("docs", ())]
    assert {e["_id"] for e in entries} >= {str.__str__(i) for i in again}
    children = [e for e in entries if e["_id"].startswith("m")]
    assert all(e["routing"] == f"c{int(e['_id'][1:]) % 2 + 1}" for e in children)
    assert all("routing" not in e for e in entries if e not in children)  # the parents


class Hall(em.Document, em.HasDates):
    class Index:
        name = "join-halls"
        settings = SETTINGS
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Seat(em.Document, em.HasDates):  # as its parent: a child without dates is refused
    class Index:
        name = "join-halls"
        settings = SETTINGS
        parent = Hall
        parent_field = "hall_id"

    hall_id: str | None = em.field(em.Keyword(), default=None)


def _version_2() -> tuple[type[Any], type[Any]]:
    """Hall and Seat of index version 2, of the same class names: the same relation names
    (the join values the copy keeps)."""

    class Hall(em.Document, em.HasDates):
        class Index:
            name = "join-halls"
            version = 2
            settings = SETTINGS
            join_field = "relation"

        name: str = em.field(em.Keyword(), default="")

    class Seat(em.Document, em.HasDates):
        class Index:
            name = "join-halls"
            version = 2
            settings = SETTINGS
            parent = Hall
            parent_field = "hall_id"

        hall_id: str | None = em.field(em.Keyword(), default=None)

    return Hall, Seat


def test_a_child_added_during_a_bump_of_a_dated_index_is_caught_up(
    make_mapper: MakeMapper,
) -> None:
    seeded = make_mapper(Hall, Seat, configure=True)
    hall = seeded.repository(Hall).add(Hall(id="h1", name="main"))
    seeded.repository(Seat).add(Seat(id="s1", hall_id=hall.id))
    HallV2, SeatV2 = _version_2()
    mapper = make_mapper(HallV2, SeatV2)
    seats = mapper.repository(SeatV2)
    done: list[bool] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:
            done.append(True)
            seats.add(SeatV2(id="s2", hall_id=hall.id))

    result = reindex(mapper, HallV2, progress=during)
    assert result.status == "reindexed"
    got = seats.get_many([em.Id(i, routing=hall.id) for i in ("s1", "s2")])
    assert [s.id for s in got] == ["s1", "s2"]


class Shelf(em.Document):
    class Index:
        name = "join-shelves"
        settings = SETTINGS
        join_field = "relation"


class Book(em.Document):
    class Index:
        name = "join-shelves"
        settings = SETTINGS
        parent = Shelf
        parent_field = "shelf_id"
        id_fields = ("shelf_id", "code")

    shelf_id: str | None = em.field(em.Keyword(), default=None)
    code: str = em.field(em.Keyword(), default="")


def test_a_rekey_of_children_keeps_each_on_its_parents_shard(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch
) -> None:
    # children another program wrote under legacy ids: moved to their composed ids with
    # the routing the scan's hit carried (their parent's id), the old ids deleted with it
    cluster.add_rule(_RoutedHits(es_client))
    mapper = make_mapper(Shelf, Book, url=cluster.url, configure=True)
    shelves = mapper.repository(Shelf).add([Shelf(id="s1"), Shelf(id="s2")])
    physical = mapper.spec(Book).physical_name()
    for n in range(6):
        parent = shelves[n % 2].id
        es_client.index(
            index=physical,
            id=f"legacy-{n}",
            routing=parent,
            document={
                "shelf_id": parent,
                "code": f"b{n}",
                "relation": {"name": "book", "parent": parent},
            },
            refresh=True,
        )
    report = rekey(mapper, Book, apply=True, echo=lambda _: None)
    assert (report.rewritten, report.failed) == (6, 0)
    books = mapper.repository(Book)
    moved = [em.Id(f"s{n % 2 + 1}:b{n}", routing=f"s{n % 2 + 1}") for n in range(6)]
    assert sorted(b.code for b in books.get_many(moved)) == [f"b{n}" for n in range(6)]
    assert books.count(consistency="immediate") == 6  # the legacy copies are gone
    assert es_client.count(index=physical)["count"] == 8  # and nothing stayed behind


def test_deleting_a_parent_and_its_children_deletes_their_index(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    """The index is kept while a model not deleted shares it (the child alone: its
    parents live there too), and deleted with the last of them (every model, or both)."""
    mapper = make_mapper(Club, Member, configure=True)
    index = mapper.spec(Club).physical_name()
    alone = mapper.delete_indexes([Member])
    assert alone[0].empty and es_client.indices.exists(index=index)
    both = mapper.delete_indexes()
    assert [r.model for r in both if not r.empty] == ["Club"]
    assert not es_client.indices.exists(index=index)
    make_mapper(Club, Member, configure=True)
    told: list[Any] = []

    def on_changed(sender: Any, message: em.EntityChanged, **_: Any) -> None:
        told.append((sender, message.change_type))

    with em.signals.entity_changed.connected_to(on_changed):
        deleted = mapper.delete_indexes([Member, Club])
    assert [r.indexes for r in deleted if not r.empty] == [(index,)]
    assert not es_client.indices.exists(index=index)
    removed = em.ChangeType.REMOVED
    assert sorted((m.__name__, c) for m, c in told) == [("Club", removed), ("Member", removed)]
