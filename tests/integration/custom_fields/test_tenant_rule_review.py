"""The tenant rule against what every "-ing" receiver leaves (review of issue 25, item 3):
``documents_changing`` is an "-ing" signal too (receivers may modify documents), so a
write with ``tenant=`` is judged after it, not before."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee, Ticket


def test_a_changing_receiver_cannot_move_a_document_to_another_tenant_past_the_rule(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    g1 = repo.add(Employee(name="g1", company_id="globex"), consistency="immediate")
    assert g1.id is not None

    def move(sender: Any, documents: Any = (), **kwargs: Any) -> None:
        for change in documents:
            change.value.company_id = "acme"

    em.signals.documents_changing.connect(move, sender=Employee)
    try:
        with pytest.raises(em.DocumentValidationError, match="tenant"):
            repo.save(g1, tenant="globex")
    finally:
        em.signals.documents_changing.disconnect(move, sender=Employee)
    stored = mapper.client.get(index=mapper.spec(Employee).alias, id=g1.id).body["_source"]
    assert stored["company_id"] == "globex"


def test_a_document_loaded_in_part_is_saved_with_tenant_when_it_is_stored_under_it(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    g1 = repo.add(Employee(name="g1", company_id="globex"), consistency="immediate")
    part = repo.find_one("name:g1", includes=["name"], tenant="globex")
    assert part is not None and part.id == g1.id
    part.name = "g2"
    # the tenant field was not loaded: the stored copy tells the tenant
    repo.save(part, tenant="globex", consistency="immediate")
    with mapper.session(tenant="globex") as session:
        held = session.find_one(Employee, "name:g2", includes=["name"])
        assert held is not None
        held.name = "g3"
    stored = mapper.client.get(index=mapper.spec(Employee).alias, id=g1.id).body["_source"]
    assert (stored["name"], stored["company_id"]) == ("g3", "globex")


def test_a_document_loaded_in_part_and_moved_meanwhile_is_refused_by_its_stored_tenant(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    g1 = repo.add(Employee(name="g1", company_id="globex"), consistency="immediate")
    assert g1.id is not None
    part = repo.find_one("name:g1", includes=["name"], tenant="globex")
    assert part is not None
    repo.patch(g1.id, em.PartialPatch({"company_id": "acme"}))  # moved, without a scope
    part.name = "mine"
    with pytest.raises(em.DocumentValidationError, match="stored under another tenant"):
        repo.save(part, tenant="globex")
    other = repo.find_one("name:g1", includes=["name"], tenant="acme")
    assert other is not None
    other.company_id = "globex"  # assigned: what the update writes names globex
    with pytest.raises(em.DocumentValidationError, match="belongs to"):
        repo.save(other, tenant="acme")
    stored = mapper.client.get(index=mapper.spec(Employee).alias, id=g1.id).body["_source"]
    assert (stored["name"], stored["company_id"]) == ("g1", "acme")


def test_a_document_with_a_computed_tenant_loaded_in_part_is_saved_with_its_tenant(
    mapper: em.Mapper,
) -> None:
    tickets = mapper.repository(Ticket)
    t = tickets.add(Ticket(company_id="acme", kind="bug", title="one"), consistency="immediate")
    part = tickets.find_one("title:one", includes=["title"], tenant="acme-bug")
    assert part is not None and part.id == t.id
    part.title = "two"
    tickets.save(part, tenant="acme-bug", consistency="immediate")
    stored = mapper.client.get(index=mapper.spec(Ticket).alias, id=t.id).body["_source"]
    assert (stored["title"], stored["company_id"], stored["kind"]) == ("two", "acme", "bug")


def test_several_documents_loaded_in_part_are_saved_with_tenant_in_one_call(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    repo.add(
        [Employee(name=f"g{i}", company_id="globex") for i in range(3)], consistency="immediate"
    )
    parts = repo.find(includes=["name"], tenant="globex", sort="name").documents
    for doc in parts:
        doc.name += "!"
    repo.save(parts, tenant="globex", consistency="immediate")  # their stored copies: one read
    assert sorted(d.name for d in repo.find(tenant="globex")) == ["g0!", "g1!", "g2!"]


def test_a_scoped_save_with_originals_shows_no_receiver_another_tenants_document(
    mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    """``originals=True`` reads the stored document of a save not loaded before the "-ing"
    receivers run: under ``tenant=``, another tenant's document is not there (as for a
    get), so no receiver gets it as the original; the tenant rule then refuses the save."""
    g1 = repo.add(Employee(name="secret", company_id="globex"), consistency="immediate")
    own = repo.add(Employee(name="mine", company_id="acme"), consistency="immediate")
    seen: list[Any] = []

    def saving(sender: Any, documents: Any = (), **kwargs: Any) -> None:
        seen.extend(None if d.original is None else d.original.name for d in documents)

    with em.signals.documents_saving.connected_to(saving, sender=Employee):
        with pytest.raises(em.DocumentValidationError, match="another tenant"):
            repo.save(
                Employee(id=g1.id, name="x", company_id="acme"), tenant="acme", originals=True
            )
        repo.save(
            Employee(id=own.id, name="mine2", company_id="acme"), tenant="acme", originals=True
        )
    assert seen == [None, "mine"]
