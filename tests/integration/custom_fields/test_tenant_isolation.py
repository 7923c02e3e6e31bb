"""tenant= keeps a call to the tenant's documents: searches, aggregations, by-query writes."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import A, Q

import esmapper as em

from .models import Employee


@pytest.mark.parametrize(
    "aggs",
    [
        {"all": {"global": {}, "aggs": {"levels": {"terms": {"field": "level"}}}}},
        {"by": {"terms": {"field": "name"}, "aggs": {"inner": {"global": {}}}}},
        {"all": A("global", aggs={"levels": A("terms", field="level")})},
    ],
    ids=["top", "nested", "dsl"],
)
def test_a_global_aggregation_is_refused_under_tenant(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], aggs: Any
) -> None:
    fields.add_field("acme", "Level", "int")
    with pytest.raises(em.QueryValidationError) as refused:
        repo.search(tenant="acme", aggregations=aggs, limit=0)
    assert refused.value.field in {"all", "inner"}
    assert "global" in str(refused.value)
    repo.search(aggregations={"all": {"global": {}}}, limit=0)  # without tenant=: as before


@pytest.fixture
def two_tenants(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> None:
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Salary", "int")  # the same slot: int-1
    repo.add(
        [
            Employee(name="a1", company_id="acme", age=30, custom_fields={"Level": 3}),
            Employee(name="g1", company_id="globex", custom_fields={"Salary": 3}),
        ],
        consistency="immediate",
    )


def _found(repo: em.Repository[Employee], query: Any) -> list[str]:
    return sorted(d.name for d in repo.find(query, tenant="acme", consistency="immediate"))


def test_a_query_string_q_object_resolves_custom_names_like_a_string_filter(
    repo: em.Repository[Employee], two_tenants: None
) -> None:
    assert _found(repo, Q("query_string", query="level:3")) == ["a1"]
    assert _found(repo, Q("query_string", query="LEVEL:3 AND AGE:30")) == ["a1"]
    assert _found(repo, Q("bool", must=[Q("query_string", query="level:[1 TO 5]")])) == ["a1"]
    assert _found(repo, Q("query_string", query="level:4")) == []
    # only the model's names, as written: sent as it is (options kept)
    own = Q("query_string", query="age:30", default_operator="AND")
    assert repr(own.to_dict()) in repr(repo.search(own, tenant="acme").body()["query"])


def test_a_query_string_with_options_naming_custom_fields_is_refused(
    repo: em.Repository[Employee], two_tenants: None
) -> None:
    with pytest.raises(em.QueryValidationError, match="filter string"):
        repo.find(Q("query_string", query="level:3", default_operator="AND"), tenant="acme")


def test_patch_all_retries_keep_the_tenant_a_document_moved_out_of_is_not_patched(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """patch_all(..., tenant="acme"): a document that conflicts because it was moved to
    globex meanwhile is searched again; that search must keep the tenant clause (not only
    the translated filter), or acme's patch lands on globex's document."""
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Level", "int")  # the same slot: int-1
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}), consistency="immediate"
    )
    calls: list[object] = []

    def action(d: Employee) -> bool:
        if not calls:  # another writer moves the document to globex (same Level)
            repo.patch(d.id, em.PartialPatch({"company_id": "globex"}), consistency="immediate")
        calls.append(d.company_id)
        d.name = "patched-by-acme"
        return True

    repo.patch_all("level:5", em.ActionPatch(action), tenant="acme", consistency="immediate")
    stored = repo.get(doc.id)
    assert stored is not None and stored.company_id == "globex"
    assert stored.name == "a", f"acme's patch_all patched globex's document ({calls})"


def test_remove_all_retries_keep_the_tenant_a_document_moved_out_of_is_not_deleted(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """Same hole as above, on remove_all's per-document path (taken when removals are
    listened to): data loss in another tenant."""
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Level", "int")
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}), consistency="immediate"
    )
    calls: list[int] = []

    def removing(sender: Any, **kwargs: Any) -> None:
        if not calls:
            repo.patch(doc.id, em.PartialPatch({"company_id": "globex"}), consistency="immediate")
        calls.append(1)

    with em.signals.documents_removing.connected_to(removing, sender=Employee):
        repo.remove_all("level:5", tenant="acme", consistency="immediate")
    stored = repo.get(doc.id)
    assert stored is not None, "acme's remove_all deleted globex's document"
    assert stored.company_id == "globex"
