"""The reference documents' getting-started flow, end to end against the server."""

from __future__ import annotations

import pytest

import esmapper as em

from .models import Employee


def test_add_find_save_conflict_soft_delete_remove(employees: em.Repository[Employee]) -> None:
    added = employees.add(
        [
            Employee(name="Jane Doe", age=34, company_id="acme"),
            Employee(name="Bob Stone", age=25, company_id="acme"),
            Employee(name="Al Young", age=19, company_id="initech"),
        ],
        consistency="wait",
    )
    assert all(e.id and e.version and e.created_utc and e.updated_utc for e in added)

    found = employees.find("age:>=25", sort="name")
    assert [e.name for e in found.documents] == ["Bob Stone", "Jane Doe"]
    assert found.total == 2
    assert all(hit.version == hit.document.version for hit in found.hits)

    jane = employees.get(added[0].id)
    stale = employees.get(added[0].id)
    assert jane is not None and stale is not None
    term, seq = jane.version.split(":")
    jane.age = 35
    employees.save(jane)
    new_term, new_seq = jane.version.split(":")
    assert new_term == term and int(new_seq) > int(seq)  # seq_no counts per shard

    stale.age = 99
    with pytest.raises(em.VersionConflictError) as raised:
        employees.save(stale)
    assert raised.value.id == jane.id
    assert employees.get(jane.id).age == 35

    jane.is_deleted = True
    employees.save(jane, consistency="wait")
    assert employees.get(jane.id) is None
    assert not employees.exists(jane.id)
    assert employees.count() == 2
    assert [e.name for e in employees.find(sort="name")] == ["Al Young", "Bob Stone"]
    assert employees.get(jane.id, soft_deletes="all").is_deleted
    assert employees.exists(jane.id, soft_deletes="deleted")
    assert [e.id for e in employees.find(soft_deletes="deleted")] == [jane.id]
    assert employees.count(soft_deletes="all") == 3

    employees.remove(jane, consistency="wait")
    assert employees.get(jane.id, soft_deletes="all") is None
    assert employees.count(soft_deletes="all") == 2


def test_versions_come_back_from_every_read(employees: em.Repository[Employee]) -> None:
    added = employees.add(Employee(name="Vera"), consistency="wait")
    assert employees.get(added.id).version == added.version
    assert employees.get_many([added.id])[0].version == added.version
    assert employees.find_one("name:vera").version == added.version
    loaded = employees.find_one("name:vera")
    loaded.age = 3
    employees.save(loaded)  # a doc loaded by find saves with its version check
    assert loaded.version != added.version
