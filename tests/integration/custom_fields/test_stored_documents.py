"""A definition change brings the documents already stored up to date: a new or retyped
field indexes the values stored under its name, and a renamed field's former name,
reused, never takes the renamed field's values."""

from __future__ import annotations

import datetime as dt
from typing import Any

import esmapper as em
from tests.integration.conftest import FakeClock, MakeMapper

from .models import Employee


def _names(repo: em.Repository[Employee], query: str, tenant: str = "acme") -> list[str]:
    return sorted(d.name for d in repo.find(query, tenant=tenant, consistency="immediate"))


def test_a_field_defined_after_values_were_stored_under_its_name_indexes_them(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    repo.add(
        [
            Employee(name="a", company_id="acme", custom_fields={"score": 7}),
            Employee(name="b", company_id="acme", custom_fields={"other": 7}),
            Employee(name="g", company_id="globex", custom_fields={"score": 7}),
        ],
        consistency="immediate",
    )
    fields.add_field("acme", "Score", "int")
    assert _names(repo, "score:7") == ["a"]
    # another tenant's value under that name is its own business: not indexed
    globex = repo.find("name:g", consistency="immediate").documents
    assert [bool(d.idx) for d in globex] == [False]


def test_a_retyped_field_indexes_the_values_its_old_type_refused(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    repo.add(
        [
            Employee(name="a", company_id="acme", custom_fields={"Level": "senior"}),
            Employee(name="b", company_id="acme", custom_fields={"Level": 3}),
        ],
        consistency="immediate",
    )
    assert _names(repo, "_exists_:level") == ["b"]  # "senior" is stored, not indexed
    fields.remove_field("acme", "Level")
    fields.add_field("acme", "Level", "keyword")
    assert _names(repo, "level:senior") == ["a"]


def test_bringing_stored_documents_up_to_date_reports_progress(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    repo.add(
        [Employee(name=f"e{i}", company_id="acme", custom_fields={"score": i}) for i in range(7)],
        consistency="immediate",
    )
    reports: list[Any] = []
    fields.progress = reports.append
    fields.add_field("acme", "Score", "int")
    assert _names(repo, "score:>=0") == [f"e{i}" for i in range(7)]
    assert reports, "no progress reported"
    last = reports[-1]
    assert (last.tenant, last.done, last.total, last.updated) == ("acme", 7, 7, 7)
    assert [r.done for r in reports] == sorted(r.done for r in reports)


def test_a_renamed_fields_former_name_reused_does_not_take_its_values(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5}), consistency="immediate"
    )
    fields.rename_field("acme", "Level", "Grade")
    fields.add_field("acme", "Level", "int")
    assert _names(repo, "_exists_:level") == []
    loaded = repo.get(doc.id)
    assert loaded is not None
    loaded.age = 41  # the document's next write
    repo.save(loaded, consistency="immediate")
    assert _names(repo, "grade:5") == ["a"]
    assert _names(repo, "_exists_:level") == []
    stored = repo.get(doc.id)
    assert stored is not None
    assert (stored.custom_fields or {}).get("Grade") == 5
    assert (stored.custom_fields or {}).get("Level") is None
    # a value written under the new field is the new field's
    repo.add(
        Employee(name="n", company_id="acme", custom_fields={"Level": 9}), consistency="immediate"
    )
    assert _names(repo, "level:9") == ["n"]
    assert _names(repo, "grade:9") == []


def test_renaming_another_field_to_a_former_name_does_not_take_its_values(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    fields.add_field("acme", "Rank", "int")
    doc = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5, "Rank": 1}),
        consistency="immediate",
    )
    fields.rename_field("acme", "Level", "Grade")
    fields.rename_field("acme", "Rank", "Level")
    loaded = repo.get(doc.id)
    assert loaded is not None
    loaded.age = 41
    repo.save(loaded, consistency="immediate")
    assert _names(repo, "grade:5") == ["a"]
    assert _names(repo, "level:1") == ["a"]
    assert _names(repo, "level:5") == []


def test_bringing_stored_documents_up_to_date_sets_their_updated_date(
    make_mapper: MakeMapper,
) -> None:
    """An idx rewrite is a write like any other (esmapper._dates): the updated date is
    what a reindex running meanwhile catches up by, so a rewrite that left it alone was
    lost from the new index."""
    clock = FakeClock(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    mapper = make_mapper(Employee, configure=True, clock=clock)
    repo = mapper.repository(Employee)
    added = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"score": 7}), consistency="immediate"
    )
    clock.now = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
    mapper.custom_fields(Employee).add_field("acme", "Score", "int")
    stored = mapper.client.get(index=repo.spec.alias, id=added.id).body["_source"]
    assert stored["idx"] and stored["updated_utc"] == "2026-01-02T00:00:00Z"
    assert stored["created_utc"] == "2026-01-01T00:00:00Z"
