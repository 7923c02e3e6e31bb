"""What documents see of definition changes: renames, hard deletes, names, types."""

from __future__ import annotations

import pytest

import esmapper as em

from .models import Employee


def _names(repo: em.Repository[Employee], query: str, tenant: str = "acme") -> list[str]:
    return sorted(d.name for d in repo.find(query, tenant=tenant, consistency="immediate"))


def test_a_renamed_field_keeps_its_documents_values_through_unrelated_saves(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}), consistency="immediate"
    )
    renamed = fields.rename_field("acme", "Level", "Rank")
    assert renamed.former_names == ["Level"]
    assert _names(repo, "rank:5") == ["a"]
    with pytest.raises(em.QueryValidationError):
        repo.find("level:5", tenant="acme")  # the old name no longer resolves
    loaded = repo.get(doc.id)
    assert loaded is not None
    loaded.age = 40
    repo.save(loaded, consistency="immediate")
    assert _names(repo, "rank:5") == ["a"]
    stored = repo.get(doc.id)
    assert stored is not None
    assert (stored.custom_fields, stored.idx) == ({"Rank": 5}, {"int-1": 5})


def test_a_partial_patch_after_a_rename_moves_the_value_to_the_new_name(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}), consistency="immediate"
    )
    fields.rename_field("acme", "Level", "Rank")
    repo.patch(doc.id, em.PartialPatch({"age": 3}), consistency="immediate")
    assert _names(repo, "rank:5") == ["a"]
    stored = repo.get(doc.id)
    assert stored is not None
    assert stored.custom_fields is not None and stored.custom_fields.get("Rank") == 5


def test_a_former_name_taken_by_a_new_field_belongs_to_the_new_field(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    fields.rename_field("acme", "Level", "Rank")
    fields.add_field("acme", "Level", "keyword")
    repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": "x"}),
        consistency="immediate",
    )
    assert _names(repo, "level:x") == ["a"]
    assert _names(repo, "_exists_:rank") == []
