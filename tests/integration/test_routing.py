"""Routing by an id field (``class Index: routing_field``, :mod:`esmapper._routing`), against
the server: the index requires a routing (the server refuses any by-id request without
one), so every path that reaches a document by id must carry it."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper


class Order(em.Document, em.Versioned):
    """An order stored on its customer's shard; its id is ``<customer>:<number>``."""

    class Index:
        name = "routed-orders"
        settings = {"number_of_shards": 2, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("customer", "number")
        routing_field = "customer"

    customer: str = em.field(em.Keyword(), default="")
    number: str = em.field(em.Keyword(), default="")
    total: int = em.field(em.Integer(), default=0)


class Note(em.Document, em.SoftDeletes):
    class Index:
        name = "routed-notes"
        kind = "plain"
        id_fields = ("owner", "slug")
        routing_field = "owner"

    owner: str = em.field(em.Keyword(), default="")
    slug: str = em.field(em.Keyword(), default="")
    text: str = em.field(em.Keyword(), default="")


def _order(customer: str, number: str, total: int = 0) -> Order:
    return Order(customer=customer, number=number, total=total)


def test_the_index_requires_a_routing(make_mapper: MakeMapper, es_client: Elasticsearch) -> None:
    mapper = make_mapper(Order, configure=True)
    index = mapper.spec(Order).write_target
    mapping = es_client.indices.get_mapping(index=index).body
    assert next(iter(mapping.values()))["mappings"]["_routing"] == {"required": True}
    assert mapper.configure_indexes(force=True)  # configured again: the mapping is already there


def test_writes_and_reads_by_id_carry_the_id_fields_term(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    make_mapper(Order, configure=True)
    repo = make_mapper(Order, url=proxy.url).repository(Order)
    a, _ = repo.add([_order("acme", "1", 10), _order("globex", "2", 20)])
    assert a.id == "acme:1"

    got = repo.get("acme:1")
    assert got is not None and got.total == 10
    assert [d.id for d in repo.get_many(["globex:2", "acme:1", "initech:9"])] == [
        "globex:2",
        "acme:1",
    ]
    assert repo.exists("acme:1") and not repo.exists("acme:404")
    queries = [r.query for r in proxy.requests if "/_doc/" in r.path]
    assert queries and all("routing=acme" in q for q in queries)

    got.total = 11
    repo.save(got)  # versioned: an index action conditioned on the version read
    repo.patch("globex:2", em.PartialPatch({"total": 21}))  # an update by id
    assert [d.total for d in repo.get_many(["acme:1", "globex:2"])] == [11, 21]
    assert repo.find("total:>=11", consistency="immediate").total == 2

    repo.remove("acme:1")  # a delete by id
    repo.remove(repo.require("globex:2"))  # a delete of a document, at its version
    assert repo.get_many(["acme:1", "globex:2"]) == []


def test_the_scanned_and_by_query_writes(make_mapper: MakeMapper) -> None:
    repo = make_mapper(Order, configure=True).repository(Order)
    repo.add([_order("acme", str(n), n) for n in range(4)], consistency="immediate")
    assert repo.patch_all("total:>=2", em.PartialPatch({"total": 9})) == 2
    assert repo.patch_all("total:<2", em.ActionPatch(lambda o: setattr(o, "total", 5))) == 2
    repo.patch(["acme:0", "acme:1"], em.ScriptPatch("ctx._source.total += 1"))
    assert sorted(d.total for d in repo.get_many([f"acme:{n}" for n in range(4)])) == [6, 6, 9, 9]
    assert repo.remove_all("total:6", consistency="immediate") == 2
    assert repo.count() == 2


def test_a_session_and_soft_deletes(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Note, configure=True)
    repo = mapper.repository(Note)
    with mapper.session() as session:
        session.add(Note(owner="ann", slug="todo", text="milk"))
        session.add(Note(owner="bob", slug="todo", text="eggs"))
    note = repo.get("ann:todo")
    assert note is not None and note.text == "milk"
    note.is_deleted = True
    repo.save(note)
    assert repo.get("ann:todo") is None and not repo.exists("ann:todo")
    assert repo.exists("ann:todo", soft_deletes="all")
    assert [n.id for n in repo.get_many(["ann:todo", "bob:todo"])] == ["bob:todo"]


def test_an_id_not_composed_of_the_id_fields_is_refused_before_anything_is_sent(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    make_mapper(Order, configure=True)
    mapper = make_mapper(Order, url=proxy.url)
    repo = mapper.repository(Order)
    repo.add(_order("acme", "1"))  # the index and alias are known: later writes send no HEAD
    proxy.reset_counts()
    with pytest.raises(em.DocumentValidationError, match="'no-customer' is not composed"):
        repo.add(Order(id="no-customer", customer="acme", number="1"))
    with pytest.raises(em.DocumentValidationError, match="'no-customer' is not composed"):
        repo.remove("no-customer")  # a delete by id
    session = mapper.session()
    session.add(Order(id="no-customer", customer="acme", number="2"))
    with pytest.raises(em.DocumentValidationError, match="'no-customer' is not composed"):
        session.flush()
    session.rollback()
    session.close()
    assert proxy.requests == []
    assert repo.count(consistency="immediate") == 1
