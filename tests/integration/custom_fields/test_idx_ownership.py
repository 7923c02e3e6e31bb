"""idx is esmapper's own field: no write path takes it from the caller; every
write sends the idx recomputed from custom_fields and the tenant."""

from __future__ import annotations

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from esmapper.patches import Patch

from .models import Employee, Ticket


def _levels(repo: em.Repository[Employee], query: str, tenant: str = "acme") -> list[str]:
    return sorted(d.name for d in repo.find(query, tenant=tenant, consistency="immediate"))


@pytest.fixture
def level_doc(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> Employee:
    fields.add_field("acme", "Level", "int")
    fields.add_field("acme", "Dept", "keyword")
    return repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5, "Dept": "x"}),
        consistency="immediate",
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
    assert (stored.name, stored.idx) == ("b", {"int-1": 5, "keyword-1": "x"})


@pytest.mark.parametrize(
    "patch",
    [
        em.JsonPatch([{"op": "add", "path": "/idx", "value": {"int-1": 999}}]),
        em.ActionPatch(lambda d: setattr(d, "idx", {"int-1": 999}) or True),  # type: ignore[func-returns-value]
    ],
    ids=["json", "action"],
)
def test_json_and_action_patches_setting_idx_are_overwritten_by_the_recompute(
    repo: em.Repository[Employee], level_doc: Employee, patch: Patch
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
    assert (stored.name, stored.idx) == ("b", {"int-1": 5, "keyword-1": "x"})


def test_a_session_flush_reindexes_custom_fields_mutated_in_place(
    mapper: em.Mapper, repo: em.Repository[Employee], level_doc: Employee
) -> None:
    with mapper.session(consistency="immediate") as s:
        doc = s.get(Employee, level_doc.id)
        assert doc is not None
        doc.custom_fields["Level"] = 9
    assert _levels(repo, "level:9") == ["a"]
    assert _levels(repo, "level:5") == []


def test_every_patch_kind_by_id_and_by_query_recomputes_idx(
    repo: em.Repository[Employee], level_doc: Employee
) -> None:
    repo.patch_all(
        "level:5",
        em.PartialPatch({"custom_fields": {"Level": 6}}),
        tenant="acme",
        consistency="immediate",
    )
    assert _levels(repo, "level:6") == ["a"]
    repo.patch(
        level_doc.id,
        em.JsonPatch([{"op": "replace", "path": "/custom_fields/Level", "value": 7}]),
        consistency="immediate",
    )
    assert _levels(repo, "level:7") == ["a"]
    repo.patch(
        level_doc.id,
        em.JsonPatch([{"op": "remove", "path": "/custom_fields/Dept"}]),
        consistency="immediate",
    )
    assert _levels(repo, "_exists_:dept") == []
    repo.patch(
        level_doc.id, em.ScriptPatch("ctx._source.custom_fields.Level = 8"), consistency="immediate"
    )
    assert _levels(repo, "level:8") == ["a"]
    repo.patch_all(
        "level:8",
        em.ScriptPatch("ctx._source.custom_fields.Level = 1"),
        tenant="acme",
        consistency="immediate",
    )
    assert _levels(repo, "level:1") == ["a"]


def test_moving_a_document_to_another_tenant_leaves_its_values_behind(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], level_doc: Employee
) -> None:
    fields.add_field("globex", "Other", "int")  # globex's int-1
    repo.patch(level_doc.id, em.PartialPatch({"company_id": "globex"}), consistency="immediate")
    # globex has no Level: acme's value must not show up under globex's int-1 field
    assert _levels(repo, "other:5", tenant="globex") == []
    assert _levels(repo, "level:5") == []


def test_a_partial_patch_cannot_move_a_ticket_into_another_tenant_via_idx(
    mapper: em.Mapper,
) -> None:
    tickets = mapper.repository(Ticket)
    t = tickets.add(
        Ticket(company_id="acme", kind="bug", title="secret", custom_fields={"Sev": "high"}),
        consistency="immediate",
    )
    with pytest.raises(em.DocumentValidationError) as refused:
        tickets.patch(t.id, em.PartialPatch({"idx": {"tenant": "globex-bug"}}))
    assert refused.value.field == "idx"
    assert [x.title for x in tickets.find(tenant="globex-bug", consistency="immediate")] == []
    found = tickets.find(tenant="acme-bug", consistency="immediate")
    assert [x.title for x in found] == ["secret"]
