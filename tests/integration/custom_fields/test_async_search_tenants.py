"""Async search of a model with custom fields and tenants: an id is read as the tenant that
submitted it, never hydrated with another tenant's field names."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

from .models import Employee, Ticket


@pytest.fixture
def tenants(make_mapper: MakeMapper, cluster: ClusterProxy) -> em.Repository[Employee]:
    mapper = make_mapper(Employee, Ticket, configure=True)
    fields = mapper.custom_fields(Employee)
    fields.add_field("acme", "Secret", "string")  # string-1 for acme
    fields.add_field("globex", "Team", "string")  # string-1 for globex too
    mapper.repository(Employee).add(
        [
            Employee(name="a1", company_id="acme", custom_fields={"Secret": "red"}),
            Employee(name="g1", company_id="globex", custom_fields={"Team": "blue"}),
        ],
        consistency="immediate",
    )
    return make_mapper(Employee, Ticket, url=cluster.url).repository(Employee)


def test_a_tenants_search_is_its_own(tenants: em.Repository[Employee]) -> None:
    kept = tenants.async_search.submit(tenant="acme", keep_on_completion=True)
    assert [(e.name, e.custom_fields) for e in kept] == [("a1", {"Secret": "red"})]
    again = tenants.async_search.get(kept.async_id or "", tenant="acme")
    assert [(e.name, e.custom_fields) for e in again] == [("a1", {"Secret": "red"})]


def test_another_tenant_never_reads_a_search_by_its_id(tenants: em.Repository[Employee]) -> None:
    kept = tenants.async_search.submit(tenant="acme", keep_on_completion=True)
    with pytest.raises(em.QueryValidationError, match="the keywords it was submitted with"):
        tenants.async_search.get(kept.async_id or "", tenant="globex")
    with pytest.raises(em.QueryValidationError):  # nor with delete=True: it is kept
        tenants.async_search.get(kept.async_id or "", tenant="globex", delete=True)
    assert len(tenants.async_search.get(kept.async_id or "", tenant="acme")) == 1
