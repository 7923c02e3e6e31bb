"""Adversarial review: a partially loaded document whose tenant key is computed
(``tenant_key()`` overridden) must not lose its indexed values when saved."""

from __future__ import annotations

from typing import Any

import esmapper as em

from .models import Ticket


def stored(mapper: em.Mapper, id: str | None) -> dict[str, Any]:
    assert id is not None
    source: dict[str, Any] = mapper.client.get(index=mapper.spec(Ticket).alias, id=id).body[
        "_source"
    ]
    return source


def test_a_partial_load_without_the_tenant_inputs_keeps_the_slots(mapper: em.Mapper) -> None:
    tickets = mapper.repository(Ticket)
    mapper.custom_fields(Ticket).add_field("acme-bug", "Sev", "int")
    t = tickets.add(
        Ticket(company_id="acme", kind="bug", title="crash", custom_fields={"Sev": 3}),
        consistency="immediate",
    )
    assert stored(mapper, t.id)["idx"] == {"tenant": "acme-bug", "int-1": 3}
    # loaded by its custom field: company_id and kind (the tenant's inputs) are not loaded
    [doc] = tickets.find(tenant="acme-bug", includes=["Sev"]).documents
    assert doc.company_id == "" and doc.custom_fields == {"Sev": 3}
    assert doc.custom_fields is not None
    doc.custom_fields["Sev"] = 4
    tickets.save(doc, consistency="immediate")
    source = stored(mapper, t.id)
    assert source["custom_fields"] == {"Sev": 4}
    # the document still belongs to its tenant and its value is indexed
    assert [d.id for d in tickets.find("sev:4", tenant="acme-bug").documents] == [t.id]
    assert source["idx"] == {"tenant": "acme-bug", "int-1": 4}


def test_a_partial_load_by_title_keeps_the_slots(mapper: em.Mapper) -> None:
    tickets = mapper.repository(Ticket)
    mapper.custom_fields(Ticket).add_field("acme-bug", "Sev", "int")
    t = tickets.add(
        Ticket(company_id="acme", kind="bug", title="crash", custom_fields={"Sev": 3}),
        consistency="immediate",
    )
    [doc] = tickets.find(tenant="acme-bug", includes=["title", "custom_fields"]).documents
    doc.title = "boom"
    tickets.save(doc, consistency="immediate")
    assert stored(mapper, t.id)["idx"] == {"tenant": "acme-bug", "int-1": 3}
    assert tickets.count("sev:3", tenant="acme-bug") == 1


def test_a_write_with_tenant_of_a_partial_document_knows_its_tenant(mapper: em.Mapper) -> None:
    tickets = mapper.repository(Ticket)
    mapper.custom_fields(Ticket).add_field("acme-bug", "Sev", "int")
    t = tickets.add(
        Ticket(company_id="acme", kind="bug", custom_fields={"Sev": 3}), consistency="immediate"
    )
    [doc] = tickets.find(tenant="acme-bug", includes=["Sev"]).documents
    assert doc.custom_fields is not None
    doc.custom_fields["Sev"] = 5
    tickets.save(doc, tenant="acme-bug", consistency="immediate")  # was refused: tenant ''
    assert tickets.count("sev:5", tenant="acme-bug") == 1
    assert tickets.get(t.id or "", tenant="acme-bug") is not None
    # another tenant's write is still refused
    [doc] = tickets.find(tenant="acme-bug", includes=["Sev"]).documents
    try:
        tickets.save(doc, tenant="globex-bug")
    except em.DocumentValidationError as error:
        assert "acme-bug" in str(error)
    else:
        raise AssertionError("a write with another tenant= was accepted")
