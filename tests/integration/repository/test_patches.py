"""patch / patch_all with the four patch kinds, and batch_process."""

from __future__ import annotations

import pytest

import esmapper as em

from .models import Employee


@pytest.fixture
def trio(employees: em.Repository[Employee]) -> list[Employee]:
    return employees.add(
        [Employee(id=f"p{i}", age=i, company_id="acme", tags=["x"]) for i in range(3)],
        consistency="wait",
    )


def test_partial_patch_merges_and_bumps_updated_utc(
    employees: em.Repository[Employee], trio: list[Employee]
) -> None:
    employees.patch("p1", em.PartialPatch({"age": 40}))
    stored = employees.get("p1")
    assert stored.age == 40
    assert stored.updated_utc > trio[1].updated_utc
    assert stored.version != trio[1].version


def test_script_patch_and_missing_ids(
    employees: em.Repository[Employee], trio: list[Employee]
) -> None:
    employees.patch(["p0", "p2"], em.ScriptPatch("ctx._source.age += params.n", {"n": 10}))
    assert [d.age for d in employees.get_many(["p0", "p2"])] == [10, 12]
    with pytest.raises(em.DocumentNotFoundError) as raised:
        employees.patch("nope", em.PartialPatch({"age": 1}))
    assert raised.value.id == "nope"


def test_json_patch_with_and_without_leading_slash(
    employees: em.Repository[Employee], trio: list[Employee]
) -> None:
    employees.patch(
        "p0",
        em.JsonPatch(
            [
                {"op": "replace", "path": "age", "value": 7},
                {"op": "add", "path": "/tags/-", "value": "y"},
            ]
        ),
    )
    stored = employees.get("p0")
    assert (stored.age, stored.tags) == (7, ["x", "y"])
    with pytest.raises(em.DocumentError, match="JsonPatch"):
        employees.patch("p0", em.JsonPatch([{"op": "test", "path": "age", "value": 8}]))


def test_action_patch_false_means_no_write(
    employees: em.Repository[Employee], trio: list[Employee]
) -> None:
    employees.patch("p1", em.ActionPatch(lambda e: False))
    assert employees.get("p1").version == trio[1].version

    def birthday(e: Employee) -> None:
        e.age += 1

    employees.patch("p1", em.ActionPatch(birthday))
    assert employees.get("p1").age == 2


def test_patch_ignores_soft_deletes_but_patch_all_respects_them(
    employees: em.Repository[Employee], trio: list[Employee]
) -> None:
    trio[0].is_deleted = True
    employees.save(trio[0], consistency="wait")
    employees.patch("p0", em.PartialPatch({"email": "kept@x"}))
    assert employees.get("p0", soft_deletes="all").email == "kept@x"
    changed = employees.patch_all(
        "company_id:acme", em.PartialPatch({"email": "all@x"}), consistency="immediate"
    )
    assert changed == 2
    assert employees.get("p0", soft_deletes="all").email == "kept@x"


def test_patch_all_client_side_kinds(
    employees: em.Repository[Employee], trio: list[Employee]
) -> None:
    def older(e: Employee) -> bool:
        if e.age >= 1:
            e.age += 100
            return True
        return False

    assert (
        employees.patch_all("company_id:acme", em.ActionPatch(older), consistency="immediate") == 2
    )
    assert sorted(d.age for d in employees.find()) == [0, 101, 102]
    assert (
        employees.patch_all(
            None,
            em.JsonPatch([{"op": "replace", "path": "email", "value": "j@x"}]),
            consistency="immediate",
        )
        == 3
    )
    assert employees.count("email:j@x") == 3


def test_batch_process_visits_every_match_and_can_stop(
    employees: em.Repository[Employee],
) -> None:
    employees.add([Employee(age=i) for i in range(23)], consistency="wait")
    sizes: list[int] = []
    assert (
        employees.batch_process("age:>=0", lambda docs: sizes.append(len(docs)), batch_size=10)
        == 23
    )
    assert sizes == [10, 10, 3]
    assert employees.batch_process(None, lambda docs: False, batch_size=5) == 5
