"""A save never drops a stored field the model it is saved as does not declare, whatever
the loading of the document proved about its own model (the "declared only" mark)."""

from __future__ import annotations

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper


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
