"""Parent/child searches (:mod:`esmapper._join`): on a real cluster
(``real_es``: the local server runs neither the join-field term nor ``has_child``,
``has_parent`` and ``parent_id``), and, on the local server, the searches as sent (checked
against the API specification) with a real cluster's answer played back."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from esmapper.testing._rules import Exchange, Reply, Rule, json_reply
from esmapper.testing._spec_check import load_checker
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper
from tests.integration.test_join import Company, Crafter, Guild, Worker, _move_each_way

KIT = Path(__file__).resolve().parents[2] / "tools" / "es_spec"


def _people(make_mapper: MakeMapper) -> tuple[Any, Any, Company, Company, list[Worker]]:
    mapper = make_mapper(Company, Worker, configure=True)
    companies, workers = mapper.repository(Company), mapper.repository(Worker)
    acme, globex = companies.add([Company(name="acme"), Company(name="globex")])
    staff = workers.add(
        [
            Worker(company_id=acme.id, email="ann@acme", age=30),
            Worker(company_id=acme.id, email="bob@acme", age=40),
            Worker(company_id=globex.id, email="cy@globex", age=50),
        ],
        consistency="immediate",
    )
    return companies, workers, acme, globex, staff


@pytest.mark.real_es
def test_each_model_finds_its_own_documents(make_mapper: MakeMapper) -> None:
    companies, workers, _, _, staff = _people(make_mapper)
    assert sorted(c.name for c in companies.find(None).documents) == ["acme", "globex"]
    assert workers.count() == 3
    assert workers.find("email:ann@acme").documents[0].id == staff[0].id
    assert workers.get(staff[0].id) is not None  # a plain id: the search on every shard


@pytest.mark.real_es
def test_has_child_has_parent_and_parent_id(make_mapper: MakeMapper) -> None:
    companies, workers, acme, globex, _ = _people(make_mapper)
    assert [c.id for c in companies.find(em.has_child(Worker, "age:>=45")).documents] == [globex.id]
    assert companies.count(em.has_child(Worker, min_children=2)) == 1
    found = workers.find(em.has_parent(Company, "name:acme")).documents
    assert sorted(w.email for w in found) == ["ann@acme", "bob@acme"]
    assert workers.count(em.parent_id(Worker, globex.id)) == 1
    assert [c.name for c in companies.find("worker:(email:cy*)").documents] == ["globex"]
    assert workers.count("company:(name:acme) AND age:>=35") == 1
    assert workers.exists(
        filter=em.parent_id(Worker, acme.id) & em.has_parent(Company, "name:acme")
    )


@pytest.mark.real_es
def test_a_soft_deleted_parent_hides_its_children_until_restored(make_mapper: MakeMapper) -> None:
    companies, workers, acme, _, _ = _people(make_mapper)
    acme.is_deleted = True
    companies.save(acme, consistency="immediate")
    assert workers.count() == 1
    assert workers.find(em.parent_id(Worker, acme.id)).total == 0
    assert workers.count(soft_deletes="all") == 3
    assert companies.count(em.has_child(Worker, "email:ann@acme")) == 0  # the parent is deleted
    acme.is_deleted = False
    companies.save(acme, consistency="immediate")
    assert workers.count() == 3
    assert workers.find(em.parent_id(Worker, acme.id)).total == 2


@pytest.mark.real_es
def test_a_moved_child_leaves_no_copy_on_its_old_parents_shard(
    make_mapper: MakeMapper, es_client: Any
) -> None:
    """On 3 shards most parent pairs route apart: the old copy would stay beside the new
    one (two hits for one id) unless the move deletes it."""
    mapper = make_mapper(Company, Worker, configure=True)
    assert len(_move_each_way(mapper, es_client)) == 6  # each checked: one copy, new parent


@pytest.mark.real_es
def test_a_child_without_routing_is_refused_by_the_cluster_too(
    make_mapper: MakeMapper, es_client: Any
) -> None:
    """What the check that refuses a child without a parent spares: the cluster's error."""
    mapper = make_mapper(Company, Worker, configure=True)
    index = mapper.spec(Worker).write_target
    with pytest.raises(Exception, match="routing"):
        es_client.index(
            index=index, id="w", document={"relation": {"name": "worker", "parent": "x"}}
        )


class _Played(Rule):
    """Answers every ``_search`` with ``answer`` (the shape a real cluster answers),
    keeping the requests."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.sent: list[dict[str, Any]] = []

    def before(self, exchange: Exchange) -> Reply | None:
        if not exchange.path.endswith("/_search"):
            return None
        self.sent.append(
            {
                "method": exchange.method,
                "path": exchange.path,
                "params": dict(exchange.params),
                "body": exchange.json(),
            }
        )
        return json_reply(200, self.answer)

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        return reply


def _answer(index: str, hits: list[dict[str, Any]]) -> dict[str, Any]:
    """A search answer as an 8.x/9.x cluster gives it for join documents: a child's hit
    carries its ``_routing``."""
    return {
        "took": 1,
        "timed_out": False,
        "_shards": {"total": 3, "successful": 3, "skipped": 0, "failed": 0},
        "hits": {
            "total": {"value": len(hits), "relation": "eq"},
            "max_score": None,
            "hits": [{"_index": index, "_score": None, **hit} for hit in hits],
        },
    }


def _relation(name: str) -> dict[str, Any]:
    """The relation clause: a cluster matches the first term, the local server the second."""
    should = [{"term": {"relation": name}}, {"term": {"relation.name": name}}]
    return {"bool": {"should": should, "minimum_should_match": 1}}


def test_the_searches_as_sent_and_a_clusters_answer_read_back(
    make_mapper: MakeMapper, es_url: str
) -> None:
    make_mapper(Company, Worker, configure=True)
    child = {
        "_id": "w1",
        "_routing": "c1",
        "_seq_no": 3,
        "_primary_term": 1,
        "_source": {
            "company_id": "c1",
            "email": "ann@acme",
            "age": 30,
            "relation": {"name": "worker", "parent": "c1"},
        },
        "sort": [1],
    }  # fmt: skip
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(Company, Worker, url=proxy.url)
        index = mapper.spec(Worker).write_target
        rule = _Played(_answer(index, [child]))
        proxy.add_rule(rule)
        workers, companies = mapper.repository(Worker), mapper.repository(Company)
        found = workers.find(em.has_parent(Company, "name:acme")).documents
        assert [(w.id, w.company_id, w.email) for w in found] == [("w1", "c1", "ann@acme")]
        workers.count(em.parent_id(Worker, "c1"))
        companies.find(em.has_child(Worker, "age:>=30", score_mode="max"))
        companies.count()
        companies.find("name:acme AND worker:(age:>=30 AND email:ann*)")  # the filter language
        workers.count("company:(name:acme) OR age:50")
        with pytest.raises(em.QueryValidationError, match=r"in company:\(\.\.\.\).*nope"):
            workers.find("company:(nope:1)")  # the parent's fields, not the child's
    bodies = [r["body"]["query"]["bool"] for r in rule.sent]
    assert len(bodies) == 6
    worker, company = _relation("worker"), _relation("company")
    assert bodies[0]["must"] == [
        {
            "has_parent": {
                "parent_type": "company",
                "query": {
                    "bool": {
                        "must": [{"term": {"name": "acme"}}],
                        "filter": [{"term": {"is_deleted": False}}],
                    }
                },
            }
        }
    ]
    hides = {"has_parent": {"parent_type": "company", "query": {"term": {"is_deleted": False}}}}
    assert worker in bodies[0]["filter"] and hides in bodies[0]["filter"]
    assert bodies[1]["must"] == [{"parent_id": {"type": "worker", "id": "c1"}}]
    assert worker in bodies[1]["filter"]
    assert bodies[2]["must"] == [
        {
            "has_child": {
                "type": "worker",
                "query": {"range": {"age": {"gte": 30}}},
                "score_mode": "max",
            }
        }
    ]
    assert company in bodies[2]["filter"] and company in bodies[3]["filter"]
    assert not [c for c in bodies[3]["filter"] if "has_parent" in c]  # a parent's own count
    assert bodies[4]["must"] == [
        {
            "bool": {
                "must": [
                    {"term": {"name": "acme"}},
                    {
                        "has_child": {
                            "type": "worker",
                            "query": {
                                "bool": {
                                    "must": [
                                        {"range": {"age": {"gte": 30}}},
                                        {"wildcard": {"email": {"value": "ann*"}}},
                                    ]
                                }
                            },
                        }
                    },
                ]
            }
        }
    ]
    assert bodies[5]["must"] == [
        {
            "bool": {
                "should": [
                    {
                        "has_parent": {
                            "parent_type": "company",
                            "query": {
                                "bool": {
                                    "must": [{"term": {"name": "acme"}}],
                                    "filter": [{"term": {"is_deleted": False}}],
                                }
                            },
                        }
                    },
                    {"term": {"age": 50}},
                ]
            }
        }
    ]
    checker = load_checker(KIT)
    assert checker.check(rule.sent, spec_dir=str(KIT / "es-spec"), branches="8.18,8.19,9.x") == []


# -- the queries across the join carry the other model's default filters ------------------


class Agency(em.Document, em.HasCustomFields, em.SoftDeletes):
    class Index:
        name = "join-agencies"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        join_field = "relation"
        tenant_field = "tenant"

    tenant: str = em.field(em.Keyword(), default="")
    name: str = em.field(em.Keyword(), default="")


class Agent(em.Document, em.HasCustomFields, em.SoftDeletes):
    class Index:
        name = "join-agencies"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        parent = Agency
        parent_field = "agency_id"
        tenant_field = "tenant"

    agency_id: str | None = em.field(em.Keyword(), default=None)
    tenant: str = em.field(em.Keyword(), default="")
    name: str = em.field(em.Keyword(), default="")


def _agencies(make_mapper: MakeMapper) -> tuple[Any, Any, Agency, Agency]:
    """Agency a1 of tenant t1 whose one agent "bond" is t2's (written as the other tenant
    may have: by id, without tenant=), agency a2 of t2 with its agent "bond"."""
    mapper = make_mapper(Agency, Agent, configure=True)
    agencies, agents = mapper.repository(Agency), mapper.repository(Agent)
    a1 = agencies.add(Agency(tenant="t1", name="a1"))
    a2 = agencies.add(Agency(tenant="t2", name="a2"))
    agents.add(
        [
            Agent(agency_id=a1.id, tenant="t2", name="bond"),
            Agent(agency_id=a2.id, tenant="t2", name="bond"),
            Agent(agency_id=a1.id, tenant="t1", name="gone", is_deleted=True),
        ],
        consistency="immediate",
    )
    return agencies, agents, a1, a2


@pytest.mark.real_es
def test_a_tenant_matches_nothing_through_another_tenants_children(
    make_mapper: MakeMapper,
) -> None:
    agencies, agents, a1, a2 = _agencies(make_mapper)
    assert agencies.count(em.has_child(Agent, "name:bond")) == 2  # no tenant: both
    assert agencies.count(em.has_child(Agent, "name:bond"), tenant="t1") == 0
    assert [a.id for a in agencies.find("agent:(name:bond)", tenant="t2").documents] == [a2.id]
    assert agents.count(em.has_parent(Agency, "name:a1"), tenant="t2") == 0
    assert agencies.count(em.has_child(Agent, "name:gone"), tenant="t1") == 0  # soft-deleted
    assert agencies.count(em.has_child(Agent, "name:gone", soft_deletes="all"), tenant="t1") == 1
    assert a1.id != a2.id


def test_the_join_queries_as_sent_carry_the_tenant_and_soft_delete_clauses(
    make_mapper: MakeMapper, es_url: str
) -> None:
    make_mapper(Agency, Agent, configure=True)
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(Agency, Agent, url=proxy.url)
        rule = _Played(_answer(mapper.spec(Agent).write_target, []))
        proxy.add_rule(rule)
        agencies, agents = mapper.repository(Agency), mapper.repository(Agent)
        bond_agents = em.has_child(Agent, "name:bond")
        agencies.count(bond_agents, tenant="t1")
        agencies.find("agent:(name:bond)", tenant="t1")  # the filter language
        agents.count(em.has_parent(Agency, "name:a1") | em.parent_id(Agent, "x"), tenant="t1")
        agencies.count(em.has_child(Agent, "name:gone", soft_deletes="all"), tenant="t1")
        agencies.count(Q({"has_child": {"type": "agent", "query": {"match_all": {}}}}), tenant="t1")
        agencies.count(bond_agents)  # no tenant: the soft deletes only (the query unchanged)
    index = mapper.spec(Agent).alias
    mine = [r for r in rule.sent if r["path"].startswith(f"/{index}/")]  # (not the definitions')
    queries = [r["body"]["query"]["bool"]["must"][0] for r in mine]
    assert len(queries) == 6
    tenant = {"term": {"tenant": "t1"}}
    active = {"term": {"is_deleted": False}}
    bond = {"term": {"name": "bond"}}

    def inner(query: dict[str, Any], kind: str) -> dict[str, Any]:
        found: dict[str, Any] = query[kind]["query"]
        return found

    assert inner(queries[0], "has_child") == {"bool": {"must": [bond], "filter": [active, tenant]}}
    assert inner(queries[1], "has_child") == {"bool": {"must": [bond], "filter": [active, tenant]}}
    has_parent = queries[2]["bool"]["should"][0]
    assert inner(has_parent, "has_parent") == {
        "bool": {"must": [{"term": {"name": "a1"}}], "filter": [active, tenant]}
    }
    assert inner(queries[3], "has_child") == {
        "bool": {"must": [{"term": {"name": "gone"}}], "filter": [tenant]}
    }
    assert inner(queries[4], "has_child") == {
        "bool": {"filter": [tenant]}  # a hand-built one too
    }
    assert inner(queries[5], "has_child") == {"bool": {"must": [bond], "filter": [active]}}
    checker = load_checker(KIT)
    assert checker.check(rule.sent, spec_dir=str(KIT / "es-spec"), branches="8.18,8.19,9.x") == []


def test_a_tenant_sessions_join_queries_carry_its_tenant_into_a_model_without_one(
    make_mapper: MakeMapper, es_url: str
) -> None:
    """A session of a tenant scopes every read; a child model without tenants searched
    through ``has_parent`` of its parent, which has them, must not match through another
    tenant's parents (the inner query is the parent's: its tenant clause), nor a parent
    without tenants through ``has_child`` of such children (the other way round)."""
    make_mapper(Guild, Crafter, configure=True)
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(Guild, Crafter, url=proxy.url)
        rule = _Played(_answer(mapper.spec(Crafter).write_target, []))
        proxy.add_rule(rule)
        with mapper.session(tenant="t1") as session:
            session.find(Crafter, em.has_parent(Guild, Q("match_all")))
            session.find(Crafter, "guild:(tenant:t2)")  # the filter language
        mapper.repository(Crafter).find(em.has_parent(Guild, Q("match_all")))  # no tenant
    index = mapper.spec(Crafter).alias
    mine = [r for r in rule.sent if r["path"].startswith(f"/{index}/")]
    queries = [r["body"]["query"]["bool"]["must"][0] for r in mine]
    assert len(queries) == 3
    tenant = {"term": {"tenant": "t1"}}
    assert queries[0]["has_parent"]["query"] == {"bool": {"filter": [tenant]}}
    assert queries[1]["has_parent"]["query"] == {
        "bool": {"must": [{"term": {"tenant": "t2"}}], "filter": [tenant]}
    }
    assert queries[2]["has_parent"]["query"] == {"match_all": {}}
    checker = load_checker(KIT)
    assert checker.check(rule.sent, spec_dir=str(KIT / "es-spec"), branches="8.18,8.19,9.x") == []


@pytest.mark.real_es
def test_a_versioned_child_moves_across_shards(make_mapper: MakeMapper, es_client: Any) -> None:
    """A Versioned child loaded and saved under each of several parents (on 3 shards
    most pairs route apart): each move leaves one copy, under the new parent; on a
    cluster, the new copy conditioned on the old copy's version would be a conflict."""
    from tests.integration.test_join_features import Clerk, Firm

    mapper = make_mapper(Firm, Clerk, configure=True)
    firms = mapper.repository(Firm).add([Firm(name=f"f{n}") for n in range(6)])
    clerks = mapper.repository(Clerk)
    ann = clerks.add(Clerk(firm_id=firms[0].id, email="ann@x"))
    index = mapper.spec(Clerk).write_target
    for old, new in itertools.pairwise(firms):
        loaded = clerks.require(em.Id(ann.id, routing=old.id))
        loaded.firm_id = new.id
        clerks.save(loaded)
        es_client.indices.refresh(index=index)
        hits = es_client.search(index=index, query={"ids": {"values": [ann.id]}})["hits"]["hits"]
        assert [h["_source"]["firm_id"] for h in hits] == [new.id]


class _Kept(Rule):
    """Keeps the body of every by-query write and search (forwarded as they are)."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, dict[str, Any]]] = []

    def before(self, exchange: Exchange) -> Reply | None:
        if exchange.path.endswith(("/_delete_by_query", "/_update_by_query", "/_search")):
            self.bodies.append((exchange.path, exchange.json() or {}))
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        return reply


def test_by_query_writes_of_a_tenant_carry_its_tenant_into_join_queries(
    make_mapper: MakeMapper, es_url: str
) -> None:
    """``remove_all``/``patch_all`` of ``has_child`` under ``tenant=``: the inner query is
    the tenant's children only, so another tenant's children never select a document to
    delete (the local server refuses has_child: the requests as sent are checked)."""
    make_mapper(Agency, Agent, configure=True)
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(Agency, Agent, url=proxy.url)
        kept = _Kept()
        proxy.add_rule(kept)
        agencies = mapper.repository(Agency)
        bond = em.has_child(Agent, "name:bond")
        with pytest.raises(Exception, match="has_child"):
            agencies.remove_all(bond, tenant="t1")
        with pytest.raises(Exception, match="has_child"):
            agencies.patch_all(bond, em.PartialPatch({"name": "x"}), tenant="t1")
    index = mapper.spec(Agency).alias
    sent = [
        body for path, body in kept.bodies if path.startswith(f"/{index}/") or path == "/_search"
    ]
    joins = [
        clause["has_child"]
        for body in sent
        for clause in body["query"]["bool"]["must"]
        if "has_child" in clause
    ]
    assert len(joins) == 2
    for has_child in joins:
        assert {"term": {"tenant": "t1"}} in has_child["query"]["bool"]["filter"]


@pytest.mark.real_es
def test_a_child_moved_across_shards_during_a_bump_has_one_copy_after_it(
    make_mapper: MakeMapper, es_client: Any
) -> None:
    """Moved to parents on other shards after the copy wrote it: the catch-up copies it
    under each new parent, and the id reconciliation deletes the copy on the first
    parent's shard (``_reindex_pass._extras``): one copy, under the last parent, and the
    bump's counts agree."""
    from esmapper.indexes import ReindexProgress, reindex
    from tests.integration.test_join_indexes import Club, ClubV2, Member, MemberV2

    seeded = make_mapper(Club, Member, configure=True)
    clubs = seeded.repository(Club).add([Club(id=f"c{n}", name=f"c{n}") for n in range(6)])
    seeded.repository(Member).add(Member(id="m0", club_id="c0"), consistency="immediate")
    mapper = make_mapper(ClubV2, MemberV2)
    members = mapper.repository(MemberV2)
    moves: list[str] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not moves:
            for old, new in itertools.pairwise(clubs):
                loaded = members.require(em.Id("m0", routing=old.id))
                loaded.club_id = new.id
                members.save(loaded, consistency="immediate")
                moves.append(str(new.id))

    result = reindex(mapper, ClubV2, progress=during)
    assert result.status == "reindexed" and result.old_count == result.new_count == 7
    index = mapper.spec(MemberV2).write_target
    es_client.indices.refresh(index=index)
    hits = es_client.search(index=index, query={"ids": {"values": ["m0"]}})["hits"]["hits"]
    assert [h["_source"]["club_id"] for h in hits] == [moves[-1]]
