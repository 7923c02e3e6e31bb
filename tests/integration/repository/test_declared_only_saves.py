"""A save never drops a stored field the model it is saved as does not declare, whatever
the loading of the document proved about its own model (the "declared only" mark)."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.model.state import declared_only, state_of
from tests.integration.conftest import MakeMapper

from .models import Address, Employee


class Card(em.Document):
    class Index:
        name = "decl_cards"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)


class RichCard(Card):
    note: str = em.field(em.Keyword(), default="")


@pytest.mark.parametrize("read", ["find", "get_many"])
def test_a_subclass_document_saved_through_the_base_repository_keeps_its_fields(
    make_mapper: MakeMapper, read: str
) -> None:
    # a newer deploy declares more (RichCard); an older one's repository saves its
    # document (a repository takes instances of its model's subclasses)
    newer, older = make_mapper(RichCard, configure=True), make_mapper(Card)
    base, rich = older.repository(Card), newer.repository(RichCard)
    rich.add(RichCard(id="r1", title="t", n=1, note="keep me"), consistency="immediate")
    if read == "find":
        [doc] = rich.find(limit=1).documents
    else:
        [doc] = rich.get_many(["r1"])
    doc.n = 2
    base.save(doc, consistency="immediate")
    stored = older.client.get(index=base.spec.alias, id="r1").body["_source"]
    assert stored == {"id": "r1", "title": "t", "n": 2, "note": "keep me"}


def _marked(doc: Employee) -> bool:
    state = state_of(doc)
    return state is not None and declared_only(doc, Employee, state.original_or_bytes)


def _loaded(
    mapper: em.Mapper, read: str, ids: list[str]
) -> tuple[list[Employee], em.Session | None]:
    repo = mapper.repository(Employee)
    if read == "find":
        return list(repo.find(sort="age", limit=10).documents), None
    if read == "get_many":
        return repo.get_many(ids), None
    if read == "cached get":  # the second read is a copy of the first one's document
        for id in ids:
            repo.get(id, cache=True)
        return [repo.get(id, cache=True) for id in ids], None  # type: ignore[misc]
    session = mapper.session()
    return list(session.find(Employee, sort="age", limit=10)), session


@pytest.mark.parametrize("read", ["find", "get_many", "cached get", "session"])
def test_undeclared_keys_are_kept_wherever_they_are(mapper: em.Mapper, read: str) -> None:
    """Hits with undeclared keys after declared-only ones on the same page, at the top
    and inside an embedded object, whatever the read: a save keeps every one."""
    repo = mapper.repository(Employee)
    repo.add(
        [Employee(id=f"e{i}", name=f"E{i}", age=i, address=Address(city="c")) for i in range(4)],
        consistency="wait",
    )
    alias = repo.spec.alias
    mapper.client.update(index=alias, id="e1", doc={"theirs": 1}, refresh=True)
    mapper.client.update(index=alias, id="e3", doc={"address": {"zip": "7"}}, refresh=True)
    docs, session = _loaded(mapper, read, [f"e{i}" for i in range(4)])
    assert [d.id for d in docs] == ["e0", "e1", "e2", "e3"]
    # e0's loading proved it declared-only (its save skips the check), the page's rest
    # after e1 is not checked; a cached copy carries no mark
    marked = [_marked(d) for d in docs]
    assert marked == ([False] * 4 if read == "cached get" else [True, False, False, False])
    for doc in docs:
        doc.age += 10
    if session is None:
        repo.save(docs, consistency="immediate")
    else:
        session.commit()
        session.close()
    stored = {i: mapper.client.get(index=alias, id=f"e{i}").body["_source"] for i in range(4)}
    assert [stored[i]["age"] for i in range(4)] == [10, 11, 12, 13]
    assert stored[1]["theirs"] == 1
    assert stored[3]["address"] == {"city": "c", "country": "", "zip": "7"}
