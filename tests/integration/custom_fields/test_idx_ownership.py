"""idx is esmapper's own field (CF-2, CF-9): no write path takes it from the caller; every
write sends the idx recomputed from custom_fields and the tenant."""

from __future__ import annotations

import pytest
from elasticsearch.dsl import Q

import esmapper as em

from .models import Employee


def _levels(repo: em.Repository[Employee], query: str, tenant: str = "acme") -> list[str]:
    return sorted(d.name for d in repo.find(query, tenant=tenant, consistency="immediate"))


@pytest.fixture
def level_doc(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> Employee:
    fields.add_field("acme", "Level", "int")
    return repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}), consistency="immediate"
    )


def test_a_partial_patch_naming_idx_is_refused_naming_idx(
    repo: em.Repository[Employee], level_doc: Employee
) -> None:
    with pytest.raises(em.DocumentValidationError) as refused:
        repo.patch(level_doc.id, em.PartialPatch({"idx": {"int-1": 999}}))
    assert refused.value.field == "idx"
    with pytest.raises(em.DocumentValidationError):
        repo.patch_all("level:5", em.PartialPatch({"idx": {}}), tenant="acme")
    assert _levels(repo, "level:5") == ["a"]


def test_an_unvalidated_partial_patch_sends_the_recomputed_idx_not_the_callers(
    repo: em.Repository[Employee], level_doc: Employee
) -> None:
    repo.patch(
        level_doc.id,
        em.PartialPatch({"name": "b", "idx": {"int-1": 999, "int-2": 1}}),
        validate=False,
        consistency="immediate",
    )
    stored = repo.get(level_doc.id)
    assert stored is not None
    assert (stored.name, stored.idx) == ("b", {"int-1": 5})


@pytest.mark.parametrize(
    "patch",
    [
        em.JsonPatch([{"op": "add", "path": "/idx", "value": {"int-1": 999}}]),
        em.ActionPatch(lambda d: setattr(d, "idx", {"int-1": 999}) or True),
    ],
    ids=["json", "action"],
)
def test_json_and_action_patches_setting_idx_are_overwritten_by_the_recompute(
    repo: em.Repository[Employee], level_doc: Employee, patch: em.Patch
) -> None:
    repo.patch(level_doc.id, patch, consistency="immediate")
    assert _levels(repo, "level:999") == []
    assert _levels(repo, "level:5") == ["a"]


def test_a_save_of_a_caller_assigned_idx_stores_the_recomputed_one(
    repo: em.Repository[Employee], level_doc: Employee
) -> None:
    loaded = repo.get(level_doc.id)
    assert loaded is not None
    loaded.idx = {"int-1": 999}
    repo.save(loaded, consistency="immediate")
    assert _levels(repo, "level:999") == []
    # a document loaded without custom_fields: its idx cannot be recomputed, so it is kept
    partial = repo.find(Q("ids", values=[level_doc.id]), includes=["name", "idx"]).hits[0].document
    partial.idx = {"int-1": 999}
    partial.name = "b"
    repo.save(partial, consistency="immediate")
    stored = repo.get(level_doc.id)
    assert stored is not None
    assert (stored.name, stored.idx) == ("b", {"int-1": 5})
