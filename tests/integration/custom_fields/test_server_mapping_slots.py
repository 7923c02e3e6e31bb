"""Under ``tenant=``, names resolve in the tenant's custom fields and the model's, and the
server mapping's other fields, but never in another tenant's slots (``idx.*``)."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

import esmapper as em

from .models import Employee


def test_another_tenants_slot_is_not_resolved_from_the_server_mapping(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], es_client: Elasticsearch
) -> None:
    fields.add_field("globex", "Salary", "int")
    repo.add(
        Employee(name="g1", company_id="globex", custom_fields={"Salary": 3}),
        consistency="immediate",
    )
    es_client.indices.put_mapping(index=repo.spec.alias, properties={"badge": {"type": "keyword"}})
    slot = "idx.int-1"
    assert slot in repo.search(limit=0).catalog.names()  # mapped on the server
    with pytest.raises(em.QueryValidationError, match=f"Unknown field '{slot}'"):
        repo.search(f"{slot}:3", tenant="acme")
    repo.search("badge:x", tenant="acme")  # a field mapped by hand resolves under tenant=
    assert [d.name for d in repo.find("salary:3", tenant="globex").documents] == ["g1"]


def test_a_server_field_alias_of_another_tenants_slot_is_not_resolved(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], es_client: Elasticsearch
) -> None:
    # a field alias the server maps is its target: one aiming at a slot is that slot
    fields.add_field("globex", "Salary", "int")
    repo.add(
        Employee(name="g1", company_id="globex", custom_fields={"Salary": 3}),
        consistency="immediate",
    )
    es_client.indices.put_mapping(
        index=repo.spec.alias, properties={"pay": {"type": "alias", "path": "idx.int-1"}}
    )
    with pytest.raises(em.QueryValidationError, match="Unknown field 'pay'"):
        repo.search("pay:3", tenant="acme")
    assert "pay" not in repo.search(limit=0, tenant="acme").catalog.names()
