"""Parent/child documents in one index (``join_field``/``parent``, :mod:`esmapper._join`)
against the local server: the mapping, every by-id path carrying the child's routing
(its parent's id), and the searches, counts and by-query writes of each side (the relation
clause matches on the local server too). The join queries (``has_parent``, ``has_child``,
``parent_id``), which the local server does not run, and with them the hiding of the
children of a soft-deleted parent: tests/integration/test_join_real_es.py."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing._rules import Exchange, Reply, Rule
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper


class Company(em.Document, em.SoftDeletes):
    class Index:
        name = "join-companies"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Worker(em.Document):
    class Index:
        name = "join-companies"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        parent = Company
        parent_field = "company_id"

    company_id: str | None = em.field(em.Keyword(), default=None)
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


def _routed(proxy: FaultProxy, marker: str) -> list[str]:
    return [r.query for r in proxy.requests if marker in r.path]


def test_the_index_holds_the_join_field_and_both_models_fields(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Company, Worker, configure=True)
    index = mapper.spec(Worker).write_target
    assert index == mapper.spec(Company).write_target
    mapping = next(iter(es_client.indices.get_mapping(index=index).body.values()))["mappings"]
    assert mapping["properties"]["relation"] == {
        "type": "join",
        "relations": {"company": "worker"},
    }
    assert {"name", "company_id", "email", "age"} <= set(mapping["properties"])
    assert mapper.configure_indexes()  # again: the mapping is there


def test_child_writes_and_reads_by_id_carry_the_parent_id(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    make_mapper(Company, Worker, configure=True)
    mapper = make_mapper(Company, Worker, url=proxy.url)
    companies, workers = mapper.repository(Company), mapper.repository(Worker)
    acme = companies.add(Company(name="acme"))
    ann, bob = workers.add(
        [Worker(company_id=acme.id, email="ann@acme"), Worker(company_id=acme.id, email="bob@acme")]
    )
    stored = es_client.get(index=mapper.spec(Worker).read_target, id=ann.id, routing=acme.id)
    assert stored["_routing"] == acme.id
    assert stored["_source"]["relation"] == {"name": "worker", "parent": acme.id}
    parent = es_client.get(index=mapper.spec(Company).read_target, id=acme.id)
    assert parent["_source"]["relation"] == "company"

    proxy.reset_counts()
    got = workers.get(em.Id(ann.id, routing=acme.id))
    assert got is not None and got.email == "ann@acme" and got.company_id == acme.id
    both = workers.get_many([em.Id(bob.id, routing=acme.id), em.Id(ann.id, routing=acme.id)])
    assert [w.email for w in both] == ["bob@acme", "ann@acme"]
    assert workers.exists(em.Id(ann.id, routing=acme.id))
    assert not workers.exists(em.Id("nobody", routing=acme.id))
    gets = _routed(proxy, "/_doc/")
    assert gets and all(f"routing={acme.id}" in q for q in gets)

    got.age = 40
    workers.save(got)  # an index action, routed by the document's parent id
    workers.patch(em.Id(bob.id, routing=acme.id), em.PartialPatch({"age": 30}))
    assert [
        w.age for w in workers.get_many([em.Id(i, routing=acme.id) for i in (ann.id, bob.id)])
    ] == [40, 30]
    workers.remove(em.Id(bob.id, routing=acme.id))  # a delete by id
    workers.remove(workers.require(em.Id(ann.id, routing=acme.id)))  # a delete of a document
    assert workers.get_many([em.Id(i, routing=acme.id) for i in (ann.id, bob.id)]) == []
    es_client.indices.refresh(index=mapper.spec(Worker).read_target)
    left = es_client.search(index=mapper.spec(Worker).read_target, query={"match_all": {}})
    assert [hit["_id"] for hit in left["hits"]["hits"]] == [acme.id]  # the parent only


def test_a_read_by_a_plain_id_searches_every_shard(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    make_mapper(Company, Worker, configure=True)
    mapper = make_mapper(Company, Worker, url=proxy.url)
    acme = mapper.repository(Company).add(Company(name="acme"))
    workers = mapper.repository(Worker)
    ann = workers.add(Worker(company_id=acme.id, email="ann@acme"), consistency="immediate")
    proxy.reset_counts()
    got = workers.get(ann.id)
    assert got is not None and got.email == "ann@acme"
    assert [w.id for w in workers.get_many([ann.id, "nobody"])] == [ann.id]
    assert workers.exists(ann.id) and not workers.exists("nobody")
    assert not [r for r in proxy.requests if "/_doc/" in r.path or r.path.endswith("/_mget")]
    assert all(r.path.endswith("/_search") for r in proxy.requests)


def test_a_session_flush_routes_its_children(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Company, Worker, configure=True)
    acme = mapper.repository(Company).add(Company(name="acme"))
    with mapper.session() as session:
        session.add(Worker(id="w1", company_id=acme.id, email="w1@acme"))
    with mapper.session() as session:
        worker = session.get(Worker, em.Id("w1", routing=acme.id))
        assert worker is not None
        worker.age = 7
    got = mapper.repository(Worker).get(em.Id("w1", routing=acme.id))
    assert got is not None and got.age == 7


def test_bad_child_writes_are_refused_before_anything_is_sent(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    make_mapper(Company, Worker, configure=True)
    mapper = make_mapper(Company, Worker, url=proxy.url)
    acme = mapper.repository(Company).add(Company(name="acme"))
    workers = mapper.repository(Worker)
    ann = workers.add(Worker(company_id=acme.id, email="ann@acme"))
    proxy.reset_counts()
    with pytest.raises(em.DocumentValidationError, match="has no parent: set company_id") as err:
        workers.add(Worker(email="orphan"))
    assert err.value.field == "company_id"
    with pytest.raises(em.DocumentValidationError, match=r"em\.Id\("):
        workers.remove(ann.id)
    with pytest.raises(em.DocumentValidationError, match=r"em\.Id\("):
        workers.patch(ann.id, em.PartialPatch({"age": 3}))
    assert proxy.requests == []
    proxy.reset_counts()
    with pytest.raises(em.DocumentValidationError, match="a child stays with its parent"):
        workers.patch(em.Id(ann.id, routing=acme.id), em.PartialPatch({"company_id": "x"}))
    moved = workers.require(em.Id(ann.id, routing=acme.id))
    moved.company_id = "another"
    proxy.reset_counts()
    with pytest.raises(em.DocumentValidationError, match="a patch cannot move a child"):
        workers.patch(
            em.Id(ann.id, routing=acme.id),
            em.ActionPatch(lambda w: setattr(w, "company_id", "another")),
        )
    with pytest.raises(em.DocumentValidationError, match="originals=True"):
        workers.save(Worker(id=ann.id, company_id="another"), originals=False)
    assert [r for r in proxy.requests if r.method != "GET"] == []


class Firm(em.Document):
    class Index:
        name = "join-firms"
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Hand(em.Document):
    class Index:
        name = "join-firms"
        parent = Firm
        parent_field = "firm_id"

    firm_id: str | None = em.field(em.Keyword(), default=None)


def _version_2() -> tuple[type[Any], type[Any]]:
    """Firm and Hand of index version 2, of the same class names: their relation names
    (the stored join values the copy keeps) are the same."""

    class Firm(em.Document):
        class Index:
            name = "join-firms"
            version = 2
            join_field = "relation"

        name: str = em.field(em.Keyword(), default="")
        size: int = em.field(em.Integer(), default=0)

    class Hand(em.Document):
        class Index:
            name = "join-firms"
            version = 2
            parent = Firm
            parent_field = "firm_id"

        firm_id: str | None = em.field(em.Keyword(), default=None)

    return Firm, Hand


def test_a_version_bump_copies_parents_and_children_together(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    old = make_mapper(Firm, Hand, configure=True)
    firm = old.repository(Firm).add(Firm(name="initech"))
    hand = old.repository(Hand).add(Hand(firm_id=firm.id), consistency="immediate")

    FirmV2, HandV2 = _version_2()  # the same class names: the same relation names
    new = make_mapper(FirmV2, HandV2)
    (result,) = em.reindex_outdated(new)  # one index: the first model's reindex copies both
    assert (result.copied, result.new_index) == (2, new.spec(HandV2).physical_name())
    got = new.repository(HandV2).get(em.Id(hand.id, routing=firm.id))
    assert got is not None and got.firm_id == firm.id
    stored = es_client.get(index=result.new_index, id=hand.id, routing=firm.id)
    assert stored["_routing"] == firm.id


class Desk(em.Document, em.SoftDeletes):
    class Index:
        name = "join-firms"
        parent = Firm
        parent_field = "firm_id"
        cache = True  # by-id reads cached: one entry per id

    firm_id: str | None = em.field(em.Keyword(), default=None)
    label: str = em.field(em.Keyword(), default="")


def test_cached_and_session_reads_of_a_child(make_mapper: MakeMapper, proxy: FaultProxy) -> None:
    make_mapper(Firm, Desk, configure=True)
    mapper = make_mapper(Firm, Desk, url=proxy.url)
    firm = mapper.repository(Firm).add(Firm(name="initech"))
    desks = mapper.repository(Desk)
    desk = desks.add(Desk(firm_id=firm.id, label="a"), consistency="immediate")
    routed = em.Id(desk.id, routing=firm.id)
    first = desks.get(routed)
    proxy.reset_counts()
    again = desks.get(routed)
    assert first is not None and again is not None and again.label == "a"
    assert proxy.requests == []  # the cached copy
    again.label = "b"
    desks.save(again)  # drops the cached copy
    got = desks.get(routed)
    assert got is not None and got.label == "b"
    with mapper.session() as session:
        held = session.get(Desk, desk.id)  # a plain id: the search on every shard
        assert held is not None and held.label == "b"
        session.remove(held)
    assert desks.get(routed) is None
    assert not desks.exists(routed, soft_deletes="all")  # (a plain id: once refreshed)


# -- searches on the local server (the relation clause matches there too) -----------------


class Team(em.Document):
    class Index:
        name = "join-teams"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Player(em.Document):
    class Index:
        name = "join-teams"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        parent = Team
        parent_field = "team_id"

    team_id: str | None = em.field(em.Keyword(), default=None)
    name: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


def _league(mapper: em.Mapper) -> tuple[Team, Team, list[Player]]:
    reds, blues = mapper.repository(Team).add([Team(name="reds"), Team(name="blues")])
    players = mapper.repository(Player).add(
        [Player(team_id=reds.id, name=f"r{n}", age=20 + n) for n in range(4)]
        + [Player(team_id=blues.id, name=f"b{n}", age=30 + n) for n in range(3)],
        consistency="immediate",
    )
    return reds, blues, players


def test_children_and_parents_are_found_and_counted_apart(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Team, Player, configure=True)
    _, blues, _ = _league(mapper)
    teams, players = mapper.repository(Team), mapper.repository(Player)
    assert teams.count() == 2 and players.count() == 7
    assert sorted(t.name for t in teams.find(limit=100)) == ["blues", "reds"]
    assert sorted(p.name for p in players.find(limit=100)) == [
        "b0", "b1", "b2", "r0", "r1", "r2", "r3"
    ]  # fmt: skip
    assert players.count(f"team_id:{blues.id}") == 3
    assert [p.name for p in players.find("age:>=22", sort="age")] == ["r2", "r3", "b0", "b1", "b2"]
    assert teams.count("name:reds") == 1 and players.count("name:reds") == 0  # own relation
    found = players.find_one("name:b1")
    assert found is not None and found.team_id == blues.id and found.age == 31
    assert teams.find_one("name:r1") is None  # a child's name is not a parent's


def test_children_are_paged_and_sorted(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Team, Player, configure=True)
    reds, _, _ = _league(mapper)
    players = mapper.repository(Player)
    pages = [players.find(sort="name", limit=3, page=n) for n in (1, 2, 3)]
    assert [[p.name for p in page] for page in pages] == [
        ["b0", "b1", "b2"],
        ["r0", "r1", "r2"],
        ["r3"],
    ]
    assert pages[0].total == 7
    after = players.find(sort="name", limit=4, search_after=True)
    rest = players.find(sort="name", limit=4, search_after=after.search_after_token)
    assert [p.name for p in [*after, *rest]] == ["b0", "b1", "b2", "r0", "r1", "r2", "r3"]
    assert players.count(f"team_id:{reds.id} AND age:<22") == 2


def test_children_are_patched_and_removed_by_query(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Team, Player, configure=True)
    reds, blues, _ = _league(mapper)
    teams, players = mapper.repository(Team), mapper.repository(Player)
    assert players.patch_all(f"team_id:{reds.id}", em.PartialPatch({"age": 50})) == 4
    assert players.count("age:50", consistency="immediate") == 4
    assert players.remove_all(f"team_id:{blues.id}") == 3
    assert players.count(consistency="immediate") == 4
    assert teams.count(consistency="immediate") == 2  # the parents stay
    assert teams.remove_all("name:blues") == 1  # a parent's own relation only
    assert players.count(consistency="immediate") == 4 and teams.count() == 1


class Guild(em.Document, em.HasCustomFields):
    class Index:
        name = "join-guilds"
        join_field = "relation"
        tenant_field = "tenant"

    tenant: str = em.field(em.Keyword(), default="")


class Crafter(em.Document):
    class Index:
        name = "join-guilds"
        parent = Guild
        parent_field = "guild_id"

    guild_id: str | None = em.field(em.Keyword(), default=None)


def test_a_child_first_creates_the_index_its_parents_custom_fields_need(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Crafter, Guild)  # the child configured first creates the index
    first = {s.model: s.action for s in mapper.configure_indexes()}
    assert (first["Crafter"], first["Guild"]) == ("created", "unchanged")  # the same mapping
    again = mapper.configure_indexes(force=True)  # past the configured-once marker
    assert {s.action for s in again} == {"unchanged"}  # both agree
    index = mapper.spec(Guild).write_target
    stored = next(iter(es_client.indices.get_mapping(index=index).body.values()))["mappings"]
    assert stored["properties"]["idx"]["dynamic"] in (True, "true") and stored["dynamic_templates"]


# -- by-id reads see only their own relation --------------------------------------------


def test_a_read_by_id_of_the_other_relation_finds_nothing(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    make_mapper(Firm, Desk, Hand, configure=True)
    mapper = make_mapper(Firm, Desk, Hand, url=proxy.url)
    firms, desks = mapper.repository(Firm), mapper.repository(Desk)
    firm = firms.add(Firm(name="initech"))
    desk = desks.add(Desk(firm_id=firm.id, label="a"), consistency="immediate")
    routed_firm = em.Id(firm.id, routing=firm.id)  # a child read of the parent's id
    for _ in range(2):  # the second: Desk's reads are cached (an entry must not cross)
        assert desks.get(routed_firm) is None
        assert desks.get(firm.id) is None  # a plain id: the search by id
        assert desks.get_many([routed_firm, firm.id]) == []
        assert not desks.exists(routed_firm) and not desks.exists(routed_firm, soft_deletes="all")
    assert desks.get_many([routed_firm], read_cache=False) == []
    hands = mapper.repository(Hand)  # not cached: get_many's _mget answer hydrated raw
    assert hands.get_many([routed_firm]) == [] and hands.get(routed_firm) is None
    assert firms.get(desk.id) is None and firms.get_many([desk.id]) == []
    assert not firms.exists(desk.id)
    assert firms.get(firm.id) is not None and desks.get(em.Id(desk.id, routing=firm.id))
    with mapper.session() as session:
        assert session.get(Desk, routed_firm) is None
        assert session.get_many(Desk, [routed_firm]) == []
        assert session.get(Firm, desk.id) is None
        assert session.get(Firm, firm.id) is not None


# -- a child saved under another parent: moved, never copied ------------------------------


def _copies(es_client: Elasticsearch, index: str, id: str) -> list[str]:
    """The parent of every stored copy of ``id`` in ``index`` (all shards)."""
    es_client.indices.refresh(index=index)
    hits = es_client.search(index=index, query={"ids": {"values": [id]}}, size=10)
    return sorted(h["_source"]["company_id"] for h in hits["hits"]["hits"])


class _Bulks(Rule):
    """Keeps the action lines of every ``_bulk`` body forwarded."""

    def __init__(self) -> None:
        self.actions: list[dict[str, Any]] = []

    def before(self, exchange: Exchange) -> Reply | None:
        if exchange.path.endswith("/_bulk"):
            lines = [json.loads(line) for line in exchange.body.splitlines() if line.strip()]
            self.actions += [line for line in lines if set(line) & {"delete", "index"}]
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        return reply


def _move_each_way(mapper: em.Mapper, es_client: Elasticsearch) -> list[tuple[Worker, str, str]]:
    """Children moved to another parent: a loaded one, one held by a session, one built
    by hand (its stored copy looked up first: a child's saves read their originals);
    checks each is read back under its new parent only. ``(child, old, new)``."""
    index = mapper.spec(Worker).write_target
    parents = mapper.repository(Company).add([Company(name=f"c{n}") for n in range(7)])
    workers = mapper.repository(Worker)
    moved = []
    for n, (old, new) in enumerate(itertools.pairwise(parents)):
        kind = ("loaded", "session", "built")[n % 3]
        ann = workers.add(Worker(company_id=old.id, email=f"ann{n}@x"))  # not refreshed
        if kind == "loaded":
            loaded = workers.require(em.Id(ann.id, routing=old.id))
            loaded.company_id = new.id
            workers.save(loaded)
        elif kind == "session":
            with mapper.session() as session:
                held = session.get(Worker, em.Id(ann.id, routing=old.id))
                assert held is not None
                held.company_id = new.id
        else:
            workers.save(Worker(id=ann.id, company_id=new.id, email=f"ann{n}@x"))
        assert _copies(es_client, index, ann.id) == [new.id], kind
        got = workers.get(em.Id(ann.id, routing=new.id))
        assert got is not None and got.company_id == new.id and got.email == f"ann{n}@x"
        moved.append((ann, old.id, new.id))
    return moved


def test_a_child_saved_under_another_parent_moves_there(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    """The old copy is deleted, routed by the old parent and conditioned on its version,
    where the two routings land on different shards; on one shard the save replaced it
    and nothing is deleted. (The local server keeps one copy per id but routes a GET by
    shard: a GET routed by the old parent finding the moved child tells one shard. The
    copies on distinct shards of a cluster: test_join_real_es.py.)"""
    make_mapper(Company, Worker, configure=True)
    mapper = make_mapper(Company, Worker, url=proxy.url)
    bulks = _Bulks()
    proxy.add_rule(bulks)
    moved = _move_each_way(mapper, es_client)
    deletes = [action["delete"] for action in bulks.actions if "delete" in action]
    index = mapper.spec(Worker).write_target
    apart = [
        (a.id, old)
        for a, old, _ in moved
        if not es_client.options(ignore_status=404).get(index=index, id=a.id, routing=old)["found"]
    ]
    assert [(d["_id"], d["routing"]) for d in deletes] == apart
    assert all(isinstance(d["if_seq_no"], int) and d["if_primary_term"] for d in deletes)


def test_a_move_loses_nothing_when_either_write_fails(
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    caplog: pytest.LogCaptureFixture,
    es_client: Elasticsearch,
) -> None:
    """The new copy is written first, the old one deleted once the new one is stored:
    the new copy refused, the old one stays (nothing deleted); the delete refused (or the
    process gone before it), both copies stay: never none."""
    make_mapper(Company, Worker, configure=True)
    mapper = make_mapper(Company, Worker, url=proxy.url)
    parents = mapper.repository(Company).add([Company(id=f"c{n}", name="c") for n in range(12)])
    acme = parents[0]
    workers = mapper.repository(Worker)
    ann = workers.add(Worker(company_id=acme.id, email="ann@x"), consistency="immediate")
    index = mapper.spec(Worker).write_target
    reach = es_client.options(ignore_status=404)
    globex = next(  # a parent routed to another shard than acme (a delete follows)
        c for c in parents if not reach.get(index=index, id=ann.id, routing=c.id)["found"]
    )
    bulks = _Bulks()
    proxy.add_rule(bulks)

    loaded = workers.require(em.Id(ann.id, routing=acme.id))
    loaded.company_id = globex.id
    proxy.fail_bulk_items(1, status=500)  # the new copy refused
    with pytest.raises(em.EsmapperError):
        workers.save(loaded)
    assert not [a for a in bulks.actions if "delete" in a]  # the old copy untouched
    kept = workers.get(em.Id(ann.id, routing=acme.id))
    assert kept is not None and kept.company_id == acme.id

    kept.company_id = globex.id
    proxy.reply_status(500, path=r"/_bulk$", skip=1)  # the delete of the old copy refused
    workers.save(kept)
    assert "were not deleted after their move" in caplog.text  # logged, the save stored
    got = workers.get(em.Id(ann.id, routing=globex.id))
    assert got is not None and got.company_id == globex.id


def test_saving_new_children_not_loaded_sends_no_refresh(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    """A save of a child not loaded reads its stored copy on its parent's shard; a miss
    (a new child, the common case) is searched for by id on every shard as the index was
    last refreshed, never after a refresh of its own (on a real cluster a refresh per save
    makes a segment per save). A copy this process wrote a moment ago under another parent
    (not yet searchable) is still found: read in real time with the routing it was
    written with."""
    make_mapper(Company, Worker, configure=True)
    mapper = make_mapper(Company, Worker, url=proxy.url)
    acme, globex = mapper.repository(Company).add([Company(name="a"), Company(name="g")])
    workers = mapper.repository(Worker)
    proxy.reset_counts()
    for n in range(3):
        workers.save(Worker(id=f"w{n}", company_id=acme.id))
    with mapper.session() as session:
        session.add_all([Worker(id=f"s{n}", company_id=acme.id) for n in range(3)])
    workers.save(Worker(id="w0", company_id=globex.id, email="moved"))  # not searchable yet
    paths = [r.path for r in proxy.requests]
    assert not [p for p in paths if p.endswith("/_refresh")], paths
    index = mapper.spec(Worker).write_target
    assert _copies(es_client, index, "w0") == [globex.id]
    got = workers.get(em.Id("w0", routing=globex.id))
    assert got is not None and got.email == "moved"


def test_a_child_loaded_in_part_is_not_moved(make_mapper: MakeMapper, proxy: FaultProxy) -> None:
    """A document loaded with includes= saves as an update of the fields it changed:
    sent on the new parent's shard, a cluster finds nothing to update there (the local
    server, one copy per id, would apply it). Refused before anything is sent."""
    make_mapper(Team, Player, configure=True)
    mapper = make_mapper(Team, Player, url=proxy.url)
    reds, _, _ = _league(mapper)
    blues = mapper.repository(Team).add(Team(name="greens"))
    players = mapper.repository(Player)
    (part,) = players.find("name:r1", includes=["name"]).documents
    assert part.team_id == reds.id  # (always loaded: the routing)
    part.team_id = blues.id
    proxy.reset_counts()
    with pytest.raises(em.DocumentValidationError, match="loaded in part"):
        players.save(part)
    assert not [r for r in proxy.requests if r.path.endswith("/_bulk")]
