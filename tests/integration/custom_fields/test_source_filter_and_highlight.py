"""``includes``/``excludes`` and ``highlight`` name custom fields by their logical name
under ``tenant=`` (case-insensitive), and highlights come back under that name."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee


@pytest.fixture
def people(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> list[Employee]:
    fields.add_field("acme", "Level", "int")
    fields.add_field("acme", "Department", "string")
    fields.add_field("globex", "Department", "keyword")
    return repo.add(
        [
            Employee(name="a1", company_id="acme", age=30,
                     custom_fields={"level": 3, "Department": "Eng Ops"}),
            Employee(name="a2", company_id="acme", custom_fields={"LEVEL": 5}),
            Employee(name="g1", company_id="globex", custom_fields={"department": "Eng"}),
        ],
        consistency="immediate",
    )  # fmt: skip


def stored(mapper: em.Mapper, id: str | None) -> dict[str, Any]:
    assert id is not None
    source: dict[str, Any] = mapper.client.get(index=mapper.spec(Employee).alias, id=id).body[
        "_source"
    ]
    return source


def test_includes_by_logical_name_load_the_slot_and_the_values(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    [doc] = repo.find("name:a1", tenant="acme", includes=["LEVEL", "Age"]).documents
    assert doc.name == ""  # not loaded
    assert doc.age == 30  # a model field in another case: its own spelling
    assert doc.idx == {"int-1": 3}  # the slot only, not Department's
    assert doc.custom_fields == {"level": 3, "Department": "Eng Ops"}  # keys as written
    # a document loaded so is saved with its idx whole
    assert doc.custom_fields is not None
    doc.custom_fields["level"] = 4
    repo.save(doc, consistency="immediate")
    assert stored(mapper, doc.id)["idx"] == {"int-1": 4, "string-1": "Eng Ops"}
    assert stored(mapper, doc.id)["name"] == "a1"
    # a partially loaded document without its tenant keeps its idx as loaded
    [doc] = repo.find("name:a1", tenant="acme", includes=["custom_fields", "idx"]).documents
    assert doc.custom_fields is not None
    doc.custom_fields["level"] = 5
    repo.save(doc)
    assert stored(mapper, doc.id)["idx"] == {"int-1": 4, "string-1": "Eng Ops"}


def test_excludes_by_logical_name_drop_the_slot(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    [doc] = repo.find("name:a1", tenant="acme", excludes="department").documents
    assert doc.name == "a1"
    assert doc.idx == {"int-1": 3}


def test_unknown_names_and_names_without_tenant_are_refused(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    with pytest.raises(em.QueryValidationError, match="nope"):
        repo.find(tenant="acme", includes=["nope"])
    with pytest.raises(em.QueryValidationError, match="level"):
        repo.find(includes=["level"])  # a custom field needs tenant=


def test_highlight_by_logical_name_comes_back_under_it(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    found = repo.find("department:ops", tenant="acme", highlight=["DEPARTMENT"])
    assert found.hits[0].highlight == {"Department": ["Eng <em>Ops</em>"]}
    found = repo.find("department:Eng", tenant="globex", highlight={"department": {}})
    assert [h.highlight for h in found.hits] == [{"Department": ["<em>Eng</em>"]}]
    with pytest.raises(em.QueryValidationError, match="Cannot highlight 'level'"):
        repo.find(tenant="acme", highlight="level")  # an integer field
    with pytest.raises(em.QueryValidationError, match="department"):
        repo.find(highlight="department")  # without tenant= the name is unknown
