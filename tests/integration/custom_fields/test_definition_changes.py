"""What documents see of definition changes: renames, hard deletes, names, types."""

from __future__ import annotations

import pytest
from elasticsearch.dsl import Q

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


def test_a_hard_delete_clears_the_slot_in_the_tenants_documents_before_it_is_reused(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Salary", "int")  # globex's int-1: not touched
    old = repo.add(
        Employee(name="old", company_id="acme", custom_fields={"Level": 5}),
        consistency="immediate",
    )
    repo.add(
        Employee(name="g", company_id="globex", custom_fields={"Salary": 5}),
        consistency="immediate",
    )
    fields.remove_field("acme", "Level", hard=True)
    stored = repo.get(old.id)
    assert stored is not None
    assert stored.custom_fields == {"Level": 5}  # kept, no longer indexed
    assert not any((stored.idx or {}).values())
    score = fields.add_field("acme", "Score", "int")
    assert score.index_slot == 1
    assert _names(repo, "score:5") == []
    assert _names(repo, "salary:5", tenant="globex") == ["g"]


def test_removing_a_tenants_definitions_clears_their_slots(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    level = fields.add_field("acme", "Level", "int")
    fields.add_field("acme", "Dept", "keyword")
    fields.remove_field("acme", "Dept")  # soft-deleted: removed too
    repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}),
        consistency="immediate",
    )
    assert fields.remove_by_tenant("acme") == 2
    fields.add_field("acme", "Score", "int")
    assert _names(repo, "score:5") == []
    fields.add_field("acme", "Level", "int")
    fields.remove(fields.field("acme", "Level").id or "")  # by id
    assert level.index_slot == 1
    assert _names(repo, "_exists_:score") == []


@pytest.mark.parametrize("name", ["Age", "AGE", "name", "Company_ID", "custom_fields", "IDX"])
def test_a_custom_field_cannot_be_named_like_a_model_field_in_any_case(
    fields: em.CustomFieldRepository, name: str
) -> None:
    with pytest.raises(em.DocumentValidationError) as refused:
        fields.add_field("acme", name, "int")
    assert refused.value.field == "name"
    fields.add_field("acme", "Level", "int")
    with pytest.raises(em.DocumentValidationError):
        fields.rename_field("acme", "Level", name)


def test_a_model_field_resolves_the_same_in_any_case_under_tenant(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    repo.add(
        Employee(name="a", company_id="acme", age=30, custom_fields={"Age": 99, "Level": 1}),
        consistency="immediate",
    )
    assert _names(repo, "age:30") == ["a"]
    assert _names(repo, "AGE:30") == _names(repo, "age:30")
    assert _names(repo, "Age:99") == _names(repo, "age:99") == []
    found = repo.find(Q("term", AGE=30), tenant="acme", consistency="immediate")
    assert [d.name for d in found] == ["a"]


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("Größe", "größe:5"),
        ("ΣIGMA", "σigma:5"),  # noqa: RUF001 - a Greek sigma on purpose
        ("Cost-Center", "cost-center:5"),
        ("level_2", "LEVEL_2:5"),
    ],
)
def test_every_accepted_name_can_be_queried(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], name: str, query: str
) -> None:
    """add_field accepts the name, so a filter can name it as it is written, or add_field
    must refuse it up front (below)."""
    fields.add_field("acme", name, "int")
    repo.add(
        Employee(name="a", company_id="acme", custom_fields={name: 5}), consistency="immediate"
    )
    assert _names(repo, query) == ["a"]


@pytest.mark.parametrize(
    "name", ["Cost Center", "a:b", "x*", "a.b", "*", "_id", "Level:5", "AND", "_exists_"]
)
def test_names_a_filter_cannot_name_as_written_are_refused_up_front(
    fields: em.CustomFieldRepository, name: str
) -> None:
    with pytest.raises(em.DocumentValidationError, match="cannot be named in a filter"):
        fields.add_field("acme", name, "int")
    assert list(fields.find_by_tenant("acme", consistency="immediate")) == []
