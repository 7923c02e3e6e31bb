"""``Index.default_excludes`` and ``Index.required_fields``: what the
searches that hand out documents load, and what the other paths leave alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper


class Ticket(em.Document, em.Versioned):
    class Index:
        name = "tickets"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        default_excludes = ("notes", "blob")
        required_fields = ("company",)

    title: str = em.field(em.Keyword(), default="")
    company: str = em.field(em.Keyword(), default="")
    notes: str = em.field(em.Text(), default="")
    blob: str = em.field(em.Keyword(index=False), default="")
    priority: int = 0


@pytest.fixture
def tickets(make_mapper: MakeMapper) -> em.Repository[Ticket]:
    repo = make_mapper(Ticket, configure=True).repository(Ticket)
    repo.add(
        [
            Ticket(id="t1", title="one", company="acme", notes="long", blob="x", priority=1),
            Ticket(id="t2", title="two", company="acme", notes="longer", blob="y", priority=2),
        ],
        consistency="wait",
    )
    return repo


@pytest.fixture
def sent() -> Iterator[list[dict[str, Any]]]:
    bodies: list[dict[str, Any]] = []

    def record(sender: Any, query: em.QueryContext, **kwargs: Any) -> None:
        bodies.append(query.body)

    with em.signals.before_query.connected_to(record, sender=Ticket):
        yield bodies


def test_find_leaves_the_default_excludes_out(
    tickets: em.Repository[Ticket], sent: list[dict[str, Any]]
) -> None:
    doc = tickets.find(sort="priority")[0]
    assert sent[-1]["_source"] == {"excludes": ["notes", "blob"]}
    assert (doc.title, doc.company, doc.notes, doc.blob) == ("one", "acme", "", "")
    assert tickets.find_one("title:two").notes == ""  # type: ignore[union-attr]


def test_an_explicit_exclude_drops_every_default(
    tickets: em.Repository[Ticket], sent: list[dict[str, Any]]
) -> None:
    doc = tickets.find(sort="priority", excludes=["priority"])[0]
    assert sent[-1]["_source"] == {"excludes": ["priority"]}
    assert (doc.notes, doc.blob, doc.priority) == ("long", "x", 0)


def test_includes_gain_the_required_fields(
    tickets: em.Repository[Ticket], sent: list[dict[str, Any]]
) -> None:
    doc = tickets.find(sort="priority", includes=["title"])[0]
    assert sent[-1]["_source"]["includes"] == ["title", "id", "company"]
    assert (doc.title, doc.company, doc.priority) == ("one", "acme", 0)


def test_a_required_field_is_never_excluded(
    tickets: em.Repository[Ticket], sent: list[dict[str, Any]]
) -> None:
    doc = tickets.find(sort="priority", excludes=["company", "priority"])[0]
    assert sent[-1]["_source"] == {"excludes": ["priority"]}
    assert doc.company == "acme"


def test_a_partially_loaded_document_saves_without_losing_the_excluded_fields(
    tickets: em.Repository[Ticket],
) -> None:
    doc = tickets.find_one("title:one")
    assert doc is not None and doc.notes == ""
    doc.priority = 9
    tickets.save(doc, consistency="wait")
    stored = tickets.get("t1")
    assert stored is not None and (stored.priority, stored.notes, stored.blob) == (9, "long", "x")


def test_batch_process_and_session_finds_apply_them(
    make_mapper: MakeMapper, tickets: em.Repository[Ticket]
) -> None:
    seen: list[Ticket] = []
    tickets.batch_process(None, seen.extend)
    assert sorted((t.id, t.notes) for t in seen) == [("t1", ""), ("t2", "")]  # type: ignore[type-var]
    with make_mapper(Ticket).session() as s:
        assert [t.notes for t in s.find(Ticket, "title:one")] == [""]


def test_by_id_reads_counts_and_patches_are_untouched(
    tickets: em.Repository[Ticket], sent: list[dict[str, Any]]
) -> None:
    got = tickets.get("t1")
    assert got is not None and got.notes == "long"  # a by-id read loads the whole document
    assert tickets.count("company:acme") == 2
    assert tickets.exists(filter="company:acme")
    assert all("_source" not in body for body in sent)
    # patch_all reads what it needs: an ActionPatch sees (and keeps) the excluded fields
    tickets.patch_all(
        "company:acme",
        em.ActionPatch(lambda t: setattr(t, "priority", t.priority + len(t.notes))),
        consistency="wait",
    )
    stored = tickets.get("t2")
    assert stored is not None and (stored.priority, stored.notes) == (8, "longer")


def test_unknown_names_are_refused_when_the_model_is_defined() -> None:
    with pytest.raises(em.IndexConfigurationError, match="default_excludes names unknown"):

        class Bad(em.Document):
            class Index:
                default_excludes = ("nope",)

            title: str = ""

    with pytest.raises(em.IndexConfigurationError, match="required_fields must be a sequence"):

        class Worse(em.Document):
            class Index:
                required_fields = "title"

            title: str = ""
