"""Queries by logical name with tenant=: filters, Q objects, sorts, aggregations,
every read and by-query call, tenant isolation, renames without reindexing."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import A, Q

import esmapper as em

from .models import Employee


@pytest.fixture
def people(
    mapper: em.Mapper, fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> list[Employee]:
    fields.add_field("acme", "Level", "int")
    fields.add_field("acme", "Department", "string")
    fields.add_field("globex", "Level", "int")  # the same slot: int-1
    fields.add_field("globex", "Department", "keyword")
    docs = [
        Employee(name="a1", company_id="acme", custom_fields={"Level": 3, "Department": "Sales"}),
        Employee(name="a2", company_id="acme", custom_fields={"level": 5, "Department": "Eng Ops"}),
        Employee(name="a3", company_id="acme", custom_fields={"LEVEL": 7, "department": "Eng"}),
        Employee(name="a4", company_id="acme", custom_fields={"Department": "Eng"}),
        Employee(name="g1", company_id="globex", custom_fields={"Level": 5, "Department": "Eng"}),
        Employee(name="g2", company_id="globex", custom_fields={"Level": 9}),
    ]
    return repo.add(docs, consistency="immediate")


def names(results: Any) -> list[str]:
    return [d.name for d in results]


def test_filters_sorts_and_aggregations_use_logical_names(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    found = repo.find("LEVEL:>=5", tenant="acme", sort="-Level", aggregations="terms:level")
    assert names(found) == ["a3", "a2"]
    assert found.total == 2
    assert found.aggregations is not None
    terms = found.aggregations.terms("terms_level")  # the logical name, not idx.int-1
    assert terms is not None and [(b.key, b.total) for b in terms.buckets] == [(5, 1), (7, 1)]
    assert names(repo.find("department:eng", tenant="acme", sort="name")) == ["a2", "a3", "a4"]
    assert names(repo.find("department:eng", tenant="acme", sort="-department name")) == [
        "a2",
        "a3",
        "a4",
    ]  # fmt: skip  (keyword subfield: "Eng Ops" > "Eng")
    assert names(repo.find(tenant="acme", sort=[{"level": {"order": "asc", "missing": "_first"}}],
                           limit=2)) == ["a4", "a1"]  # fmt: skip
    assert names(repo.find("_missing_:level", tenant="acme")) == ["a4"]
    assert names(repo.find("level:[4 TO 6] OR name:a1", tenant="acme", sort="name")) == [
        "a1", "a2",
    ]  # fmt: skip


def test_q_objects_and_dsl_aggregations_use_logical_names(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    assert names(repo.find(Q("range", level={"gte": 5}), tenant="acme", sort="name")) == [
        "a2", "a3",
    ]  # fmt: skip
    query = Q("exists", field="Level") & ~Q("term", **{"department.keyword": "Sales"})
    assert names(repo.find(query, tenant="acme", sort="name")) == ["a2", "a3"]
    assert names(repo.find(Q("match", Department="ops"), tenant="acme")) == ["a2"]
    aggs = repo.aggregate(
        tenant="acme",
        aggregations={"levels": A("terms", field="level"), "top": A("max", field="LEVEL")},
    )
    assert aggs.value("top") == 7.0
    levels = aggs.terms("levels")
    assert levels is not None and [b.key for b in levels.buckets] == [3, 5, 7]


def test_every_read_and_by_query_call_takes_tenant(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    assert repo.count("_exists_:level", tenant="acme") == 3
    assert repo.exists(filter="level:7", tenant="acme")
    assert not repo.exists(filter="level:9", tenant="acme")
    one = repo.find_one("level:7", tenant="acme")
    assert one is not None and one.name == "a3"
    aggs = repo.aggregate("department:eng", tenant="acme", aggregations="avg:level")
    assert aggs.value("avg_level") == 6.0  # a2 (5) and a3 (7); a4 has no level

    seen: list[str] = []
    assert repo.batch_process("level:>3", lambda docs: seen.extend(names(docs)), tenant="acme") == 2
    assert sorted(seen) == ["a2", "a3"]

    with mapper.session() as session:
        found = session.find(Employee, "level:5", tenant="globex")
        assert names(found) == ["g1"]
        assert session.find_one(Employee, "level:9", tenant="globex") is not None

    assert repo.patch_all(
        "level:3", em.PartialPatch({"age": 40}), tenant="acme", consistency="immediate"
    ) == 1  # fmt: skip
    assert names(repo.find("age:40")) == ["a1"]
    assert repo.remove_all("level:>=9", tenant="globex", consistency="immediate") == 1
    assert repo.count(tenant="globex") == 1


def test_two_tenants_sharing_a_slot_never_see_each_other(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    assert names(repo.find("level:5", tenant="acme")) == ["a2"]
    assert names(repo.find("level:5", tenant="globex")) == ["g1"]
    assert repo.count(tenant="acme") == 4  # tenant= keeps to the tenant's documents
    aggs = repo.aggregate(tenant="globex", aggregations="terms:level terms:department")
    levels = aggs.terms("terms_level")
    assert levels is not None and [b.key for b in levels.buckets] == [5, 9]
    departments = aggs.terms("terms_department")  # a keyword field in globex
    assert departments is not None and [b.key for b in departments.buckets] == ["Eng"]


def test_a_custom_field_name_needs_tenant(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    with pytest.raises(em.QueryValidationError, match="Unknown field 'level'") as err:
        repo.find("level:5")
    assert err.value.field == "level"
    with pytest.raises(em.QueryValidationError, match="level"):
        repo.find(sort="level")
    with pytest.raises(em.QueryValidationError, match="level"):
        repo.count("level:5", tenant="initech")  # a tenant without that field
    with pytest.raises(em.QueryValidationError, match="Unknown field"):
        repo.find("levle:5", tenant="acme")


def test_tenant_is_refused_for_a_model_without_custom_fields(mapper: em.Mapper) -> None:
    with pytest.raises(em.QueryValidationError, match="custom fields") as err:
        mapper.repository(em.CustomFieldDefinition).find(tenant="acme")
    assert err.value.field == "tenant"
    with pytest.raises(ValueError, match="tenant"):
        mapper.repository(Employee).find(tenant="")


def test_a_model_field_wins_over_a_custom_field_of_the_same_name(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    # the model's name cannot become a custom field's (review 2: resolution was ambiguous)
    with pytest.raises(em.DocumentValidationError):
        fields.add_field("acme", "Age", "int")
    fields.add_field("acme", "Level", "int")
    repo.add(
        Employee(name="x", company_id="acme", age=30, custom_fields={"Age": 99}),
        consistency="immediate",
    )
    assert repo.count("age:30", tenant="acme") == 1
    assert repo.count("age:99", tenant="acme") == 0


def test_a_rename_needs_no_reindex_and_the_old_name_stops_resolving(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    fields.rename_field("acme", "Level", "Grade")
    # the documents still say "Level" in custom_fields, and were not rewritten
    assert names(repo.find("grade:>=5", tenant="acme", sort="-grade")) == ["a3", "a2"]
    with pytest.raises(em.QueryValidationError, match="Unknown field 'level'"):
        repo.find("level:5", tenant="acme")
    assert names(repo.find("level:5", tenant="globex")) == ["g1"]  # globex untouched

    fields.remove_field("acme", "Grade")  # soft delete: the name stops resolving
    with pytest.raises(em.QueryValidationError, match="grade"):
        repo.find("grade:5", tenant="acme")


def test_exists_of_a_custom_string_field_does_not_match_an_empty_value(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """``_exists_:x`` never matches ``""`` (``_missing_:x`` does), for a tenant's custom
    string and keyword fields as for declared ones (the names are mapped to ``idx``)."""
    fields.add_field("acme", "Department", "string")
    fields.add_field("acme", "Code", "keyword")
    repo.add(
        [
            Employee(name=name, company_id="acme", custom_fields=values)
            for name, values in (
                ("full", {"Department": "E", "Code": "c"}),
                ("empty", {"Department": "", "Code": ""}),
                ("none", {}),
            )
        ],
        consistency="immediate",
    )
    for field in ("department", "code"):
        assert names(repo.find(f"_exists_:{field}", tenant="acme")) == ["full"]
        assert names(repo.find(f"{field}:*", tenant="acme")) == ["full"]
        assert names(repo.find(f"_missing_:{field}", tenant="acme", sort="name")) == [
            "empty", "none",
        ]  # fmt: skip
