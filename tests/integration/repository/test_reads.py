"""get / get_many / exists / count / find: soft deletes, paging, aggregations, validation."""

from __future__ import annotations

import pytest

import esmapper as em

from .models import Employee


@pytest.fixture
def staff(employees: em.Repository[Employee]) -> list[Employee]:
    docs = [
        Employee(
            id=f"s{i:02d}",
            name=f"Person {i:02d}",
            age=20 + i,
            company_id="acme" if i % 2 else "initech",
            email=f"p{i}@x.test",
        )
        for i in range(25)
    ]
    return employees.add(docs, consistency="wait")


def test_get_many_keeps_request_order_and_omits_missing(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    got = employees.get_many(["s03", "nope", "s01", "s03"])
    assert [d.id for d in got] == ["s03", "s01"]


def test_reads_before_the_index_exists_return_nothing(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix + "none-") as mapper:
        repo = mapper.repository(Employee)
        assert repo.get("x") is None
        assert repo.get_many(["x"]) == []
        assert repo.find().total == 0
        assert repo.count() == 0


def test_page_paging(employees: em.Repository[Employee], staff: list[Employee]) -> None:
    first = employees.find(sort="age", limit=10)
    assert (first.total, first.page, first.has_more, len(first)) == (25, 1, True, 10)
    assert first.next_page() and first.page == 2
    assert first.documents[0].id == "s10"
    assert first.next_page() and len(first) == 5 and not first.has_more
    assert not first.next_page()
    third = employees.find(sort="age", limit=10, page=3)
    assert [d.id for d in third] == [f"s{i}" for i in range(20, 25)]


def test_search_after_and_snapshot_paging(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    seen: list[str] = []
    results = employees.find(sort="-age", limit=7, search_after=True)
    while True:
        seen.extend(d.id for d in results)
        if not results.next_page():
            break
    assert seen == [f"s{i:02d}" for i in reversed(range(25))]

    token = employees.find(sort="age", limit=5, search_after=True).search_after_token
    resumed = employees.find(sort="age", limit=5, search_after=token)
    assert resumed.documents[0].id == "s05"

    snap = employees.find(limit=10, snapshot=True)
    employees.add(Employee(id="late"), consistency="immediate")  # not in the snapshot
    ids = [d.id for d in snap]
    while snap.next_page():
        ids.extend(d.id for d in snap)
    assert len(ids) == 25 and "late" not in ids


def test_limits_are_checked_before_sending(employees: em.Repository[Employee]) -> None:
    with pytest.raises(em.QueryValidationError, match=r"^limit=10001 is out of range"):
        employees.find(limit=10_001)
    for wrong in ("10", 2.5, True):  # a type mistake is named as one, not as a range
        with pytest.raises(em.QueryValidationError, match=r"^limit must be a number of documents"):
            employees.find(limit=wrong)  # type: ignore[arg-type]
    with pytest.raises(em.QueryValidationError, match="search_after"):
        employees.find(limit=1000, page=11)


def test_bad_filters_name_the_problem(employees: em.Repository[Employee]) -> None:
    with pytest.raises(em.QueryValidationError) as unknown:
        employees.find("agee:>3")
    assert unknown.value.field == "agee"
    with pytest.raises(em.QueryValidationError) as syntax:
        employees.find("age:(>3")
    assert syntax.value.position is not None
    with pytest.raises(em.QueryValidationError, match="age"):
        employees.count("age:abc")
    with pytest.raises(em.QueryValidationError, match="is_deleted"):
        employees.find("is_deleted:true")
    with pytest.raises(em.QueryValidationError):
        employees.find(sort="-nope")


def test_filters_sort_and_aggregations(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    assert employees.count("company_id:acme AND age:[30 TO 40]") == 5
    assert employees.count("name:person") == 25
    assert employees.count('email:"p3@x.test" OR email:p4@x.test') == 2
    assert employees.count("NOT company_id:acme") == 13
    res = employees.find(
        "age:>=40", sort="-age", aggregations="terms:company_id avg:age min:age max:age"
    )
    assert [d.age for d in res] == [44, 43, 42, 41, 40]
    aggs = res.aggregations
    buckets = {b.key: b.total for b in aggs["terms_company_id"].buckets}
    assert buckets == {"initech": 3, "acme": 2}
    assert aggs["avg_age"].value == 42
    assert (aggs["min_age"].value, aggs["max_age"].value) == (40, 44)


def test_includes_and_excludes(employees: em.Repository[Employee], staff: list[Employee]) -> None:
    only = employees.find_one("id:s01", includes=["name"])
    assert only.name == "Person 01" and only.email == "" and only.id == "s01"
    without = employees.find_one("id:s01", excludes=["email"])
    assert without.email == "" and without.age == 21
