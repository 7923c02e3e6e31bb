"""Top hits of an aggregation as documents (``_search_answers.hydrate_hit``), on the hit
shapes a real cluster answers."""

from __future__ import annotations

import esmapper as em
from esmapper._search_answers import hydrate_hit
from esmapper.model.state import state_of


class Note(em.InnerDoc):
    text: str = ""


class Ticket(em.Document):
    class Index:
        name = "tickets"

    title: str = ""
    owner: str = ""
    notes: list[Note] = em.field(em.Nested(Note), factory=list)


INFO = Ticket.__esmapper__  # type: ignore[attr-defined]


def test_a_top_hit_is_a_partially_loaded_document() -> None:
    # top_hits: {_source: ["title"], seq_no_primary_term: true}: the search cannot see the
    # aggregation's source filter, so the document is partial (a save writes what changed)
    hit = {
        "_index": "tickets-v1",
        "_id": "t1",
        "_seq_no": 4,
        "_primary_term": 1,
        "_source": {"title": "Broken"},
    }
    doc = hydrate_hit(INFO, hit)
    assert isinstance(doc, Ticket) and (doc.id, doc.title, doc.owner) == ("t1", "Broken", "")
    state = state_of(doc)
    assert state is not None and state.partial and state.version == "1:4"


def test_a_nested_object_s_top_hit_is_its_source_not_a_document() -> None:
    # a real cluster's top hit under a nested aggregation: the nested object's _source and
    # its place (the local server answers the parent's shape instead)
    hit = {
        "_index": "tickets-v1",
        "_id": "t1",
        "_nested": {"field": "notes", "offset": 0},
        "_score": None,
        "_source": {"text": "first"},
    }
    assert hydrate_hit(INFO, hit) == {"text": "first"}
